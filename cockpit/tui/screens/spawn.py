"""The spawn dialog: type a task, see the notes it would be given (live, debounced), choose the
model, permission mode, budget, worktree and backend; Enter spawns.

The preview calls ``engine.build_preseed(task, top_k)`` in a thread worker 0.3 s after the last
keystroke; a stale result (the text changed meanwhile) is dropped. Before the model is warm the
preview says so and waits in its thread; the dialog itself stays responsive. A missing notes
folder is said here (sessions then start without notes). Options: model (free text, default
from config), permission mode (Claude Code's names; default from config), "own git worktree"
(off = run in the workspace itself), backend (what the runtime offers), budget (the session's
spend cap in USD, shown with the configured ``max_budget_usd``; empty = the configured cap, or
none; a value that is not a number of dollars > 0 is said in the dialog, which stays open).
In a grid of several hosts, or of one other host (``hosts``: :class:`HostChoice`), the dialog first picks the host, then
its workspace (the host's default, editable) and says which notes its sessions get; the backends
offered are that host's, and the preview is of that host's notes (its server's engine).
Dismisses with a :class:`SpawnChoice`: a :class:`~cockpit.runtime.spawn.SpawnSpec` (the options
the user changed; the app adds its own defaults) and the host chosen (None: one host), or
``None`` on Escape. A value the spec refuses is said in the dialog.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Checkbox, Input, Label, Select, Static
from textual.widgets.select import InvalidSelectValueError

from cockpit.runtime.budget import BudgetError, parse_usd
from cockpit.runtime.spawn import SpawnSpec, SpawnSpecError
from cockpit.tui import format as fmt

DEBOUNCE_S = 0.3
PERMISSION_MODES = (  # (label, value): Claude Code's names
    ("default · edits and commands ask", "default"),
    ("acceptEdits · commands ask", "acceptEdits"),
    ("plan · read-only", "plan"),
    ("bypassPermissions · no asks", "bypassPermissions"),
    ("auto · sandboxed, asks to leave it", "auto"),
)


@dataclass(frozen=True)
class SpawnChoice:
    """What the dialog asks for: the ``spec`` a server runs, and the ``host`` it runs on (a grid
    of several hosts; None: one host). The host is ``Runtime.spawn``'s keyword, never in the spec."""

    spec: SpawnSpec
    host: str | None = None


@dataclass(frozen=True)
class HostChoice:
    """A host the dialog offers: its ``name``, connection ``state``, default ``workspace`` there,
    the ``notes`` folder its sessions get ("" : the server's default) and its ``backends``."""

    name: str
    state: str = "connected"
    workspace: str = ""
    notes: str = ""
    backends: tuple[str, ...] = ("cockpit",)
    local: bool = False  # this machine: the app's own engine previews its notes
    engine: Any = None  # another host's: its server's engine for its notes (None: no notes known)


def preview_markup(preseed: Any) -> str:
    """The preview list for a ``memory.Preseed`` (``.hits``, ``.tokens``) as markup."""
    from textual.markup import escape

    hits = list(getattr(preseed, "hits", []) or [])
    if not hits:
        return "[dim]no note qualifies — the session starts without a preseed block[/]"
    lines = [f"[b]{len(hits)} note{'s' if len(hits) != 1 else ''}[/b] · {fmt.tokens(preseed.tokens)} tokens"]
    for hit in hits:
        star = "[$accent]★[/]" if hit.priority else " "
        desc = escape(fmt.short(hit.description, 60))
        # labelled as the pane will label it: a priority note is given by rule, whatever the judge said
        figure = fmt.note_figure(None if hit.priority else getattr(hit, "probability", None), hit.score,
                                 hit.priority)
        lines.append(f"{star} {escape(fmt.short(hit.name, 60))} [dim]{figure}[/]  [dim]{desc}[/]")
    index = list(getattr(preseed, "index", ()) or ())
    if index:  # named under "may be relevant" (the session can open them), not given
        names = ", ".join(escape(fmt.short(h.name, 40)) for h in index[:6])
        more = f" and {len(index) - 6} more" if len(index) > 6 else ""
        lines.append(f"[dim]listed, not given (may be relevant): {names}{more}[/]")
    return "\n".join(lines)


class SpawnDialog(ModalScreen[SpawnChoice | None]):
    """Modal: the task input, the notes preview, the session's options."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="spawn.cancel"),
                # from any field (Enter on a drop-down opens it instead of spawning)
                Binding("ctrl+s", "spawn", "Spawn", id="spawn.submit", priority=True)]

    def __init__(self, engine: Any = None, top_k: int | None = None, preseed: bool = True, *,
                 model: str = "", permission_mode: str | None = None, worktree: bool | None = None,
                 backends: tuple[str, ...] = ("cockpit",), backend: str | None = None,
                 notes_missing: str = "", budget_usd: float | None = None, sandbox: bool = True,
                 workspace: str | None = None, hosts: tuple[HostChoice, ...] = (),
                 host: str | None = None, again: SpawnChoice | None = None, refused: str = "") -> None:
        super().__init__()
        # several hosts, or one other host (`cockpit --host box`): the host row with its workspace there
        self.hosts = {h.name: h for h in hosts} if len(hosts) > 1 or (hosts and not hosts[0].local) else {}
        self.host = host if host in self.hosts else next(iter(self.hosts), None)
        self.engine = engine
        self.top_k = top_k
        self.preseed = preseed
        self.model = model
        self.permission_mode = permission_mode or "default"  # shown; None = the runtime decides
        self.worktree = True if worktree is None else worktree
        self._defaults = (permission_mode, worktree)
        self.backends = tuple(backends) or ("cockpit",)
        self.backend = backend if backend in self.backends else self.backends[0]
        self.notes_missing = notes_missing
        self.budget_usd = budget_usd  # the configured cap, shown; None: none
        self.sandbox = sandbox  # the configured choice ([sandbox] enabled, --no-sandbox)
        self._debounce: Timer | None = None
        self.preview_for: str | None = None  # the task text the preview shows
        self.workspace = workspace  # where the session will work (None: not shown)
        self.refused = ""  # why no session can start there (a bare repository)
        self.again = again  # a choice the runtime refused: its fields are filled in again
        self.again_refused = refused  # and why it was refused

    def compose(self) -> ComposeResult:
        with Vertical(id="spawn-box"):
            yield Label("[b]New session[/b] — the task (Enter or ctrl+s spawns, Esc cancels, Tab: options)")
            yield Input(placeholder="e.g. fix the failing test in tests/test_cart.py", id="spawn-task")
            if self.hosts:
                chosen = self.hosts[self.host or ""]
                with Horizontal(id="spawn-host-row"):
                    yield Label("host", classes="spawn-option-label")
                    yield Select([(f"{h.name} · {h.state}", h.name) for h in self.hosts.values()], value=chosen.name,
                                 allow_blank=False, id="spawn-host", compact=True)
                    yield Label("workspace", classes="spawn-option-label")
                    yield Input(chosen.workspace, placeholder="folder on that host", id="spawn-workspace",
                                compact=True)
                yield Label(self._notes_line(chosen), id="spawn-host-notes")
            if self.notes_missing:
                yield Label(Content.from_markup(
                    "[b $warning]No notes folder at $path[/]: the session starts without project notes.",
                    path=self.notes_missing), id="spawn-notes-missing")
            with Horizontal(id="spawn-options"):
                with Vertical(classes="spawn-option"):
                    yield Label("model", classes="spawn-option-label")
                    yield Input(self.model, placeholder="model id", id="spawn-model", compact=True)
                with Vertical(classes="spawn-option spawn-option-mode"):
                    yield Label("permission mode", classes="spawn-option-label")
                    modes = [m for m in PERMISSION_MODES]
                    if self.permission_mode not in {v for _, v in modes}:
                        modes.append((self.permission_mode, self.permission_mode))
                    yield Select(modes, value=self.permission_mode, allow_blank=False, id="spawn-mode", compact=True)
                with Vertical(classes="spawn-option spawn-option-narrow"):
                    yield Label("backend", classes="spawn-option-label")
                    yield Select([(b, b) for b in self.backends], value=self.backend, allow_blank=False,
                                 id="spawn-backend", compact=True)
            with Horizontal(id="spawn-row2"):
                yield Checkbox("own git worktree", self.worktree, id="spawn-worktree", compact=True)
                yield Checkbox("sandbox", self.sandbox, id="spawn-sandbox", compact=True,
                               tooltip="commands run in the OS sandbox (off: unconfined, as you)")
                yield Label("budget $", id="spawn-budget-label")
                shown = "" if self.budget_usd is None else f"{self.budget_usd:g}"
                yield Input(shown, placeholder="none", id="spawn-budget", compact=True)
            where = Label("", id="spawn-where")
            where.display = False  # shown when the session would not get its own worktree
            yield where
            error = Label("", id="spawn-error")
            error.display = False  # shown with the reason when a value is refused
            yield error
            # last: on a small terminal a long preview is what gets cut, never the options
            yield Label("Notes it would be given:", id="spawn-preview-label")
            yield Static(self._idle_text(), id="spawn-preview")

    def on_mount(self) -> None:
        if self.again is not None:
            self._fill(self.again.spec)
        if self.workspace and self._local():
            self._where(self.workspace, self.query_one("#spawn-worktree", Checkbox).value)

    def _fill(self, spec: SpawnSpec) -> None:
        """The form as it was for ``spec`` (a spawn the runtime refused), and why it was refused."""
        self.query_one("#spawn-task", Input).value = spec.task
        if spec.model:
            self.query_one("#spawn-model", Input).value = spec.model
        for sel, value in (("#spawn-mode", spec.permission_mode), ("#spawn-backend", spec.backend)):
            if value is not None:
                with contextlib.suppress(InvalidSelectValueError):  # no longer offered: the default stays
                    self.query_one(sel, Select).value = value
        if spec.worktree is not None:
            self.query_one("#spawn-worktree", Checkbox).value = spec.worktree
        if spec.sandbox is not None:
            self.query_one("#spawn-sandbox", Checkbox).value = spec.sandbox
        if spec.max_budget_usd is not None:
            self.query_one("#spawn-budget", Input).value = f"{spec.max_budget_usd:g}"
        if self.hosts and spec.workspace:
            self.query_one("#spawn-workspace", Input).value = str(spec.workspace)
        if self.again_refused:
            error = self.query_one("#spawn-error", Label)
            error.update(Content.from_markup("[$error]$why[/]", why=self.again_refused))
            error.display = True

    def _local(self) -> bool:
        """The chosen host is this machine (or there is one host)."""
        return not self.hosts or self.hosts[self.host or ""].local

    def _preview_engine(self) -> Any:
        """The engine of the chosen host's notes: the app's for this machine, else that host's server's."""
        return self.engine if self._local() else self.hosts[self.host or ""].engine

    @staticmethod
    def _notes_line(host: HostChoice) -> Content:
        notes = host.notes or "its server's default notes folder"
        return Content.from_markup("[dim]notes on $host: $notes[/]", host=host.name, notes=notes)

    @on(Select.Changed, "#spawn-host")
    def _host_chosen(self, event: Select.Changed) -> None:
        """Another host: its workspace, notes and backends; the preview only for this machine's notes."""
        if not isinstance(event.value, str) or event.value == self.host:
            return
        self.host = event.value
        chosen = self.hosts[event.value]
        self.query_one("#spawn-workspace", Input).value = chosen.workspace
        self.query_one("#spawn-host-notes", Label).update(self._notes_line(chosen))
        backend = self.query_one("#spawn-backend", Select)
        current = backend.value
        backend.set_options([(b, b) for b in chosen.backends or ("cockpit",)])
        backend.value = current if current in chosen.backends else (chosen.backends or ("cockpit",))[0]
        self.refused = ""
        self.query_one("#spawn-where", Label).display = False
        self._show(self._idle_text(), None)
        task = self.query_one("#spawn-task", Input).value
        if task.strip() and self.preseed and self._preview_engine() is not None:
            self._preview(task)

    @on(Checkbox.Changed, "#spawn-worktree")
    def _worktree_toggled(self, event: Checkbox.Changed) -> None:
        if self.workspace and not event.checkbox.disabled and self._local():
            self._where(self.workspace, event.value)

    @work(thread=True, exclusive=True, group="spawn-where")
    def _where(self, workspace: str, use: bool) -> None:
        """Say where the session will work before it starts (git runs here: a thread)."""
        from cockpit.runtime.worktree import placement_of

        kind, line = placement_of(workspace, use)
        self.app.call_from_thread(self._show_where, kind, line, use)

    def _show_where(self, kind: str, line: str, use: bool) -> None:
        if not self.is_attached:
            return
        box = self.query_one("#spawn-worktree", Checkbox)
        style = "$text-warning" if kind == "in place" else "$text-muted"
        if kind == "refused":
            self.refused = line
            style = "$text-error"
        elif kind == "in place" and use:  # not a repository: no worktree is possible
            box.value = False
            box.disabled = True
        label = self.query_one("#spawn-where", Label)
        label.update(Content.from_markup(f"[{style}]$line[/]", line=line))
        label.display = kind != "worktree"  # the usual case needs no line

    def _idle_text(self) -> str:
        if not self.preseed:
            return "[dim]preseed is off (--no-preseed)[/]"
        if not self._local() and self._preview_engine() is None:
            return f"[dim]no notes folder known on {self.host} ([hosts.{self.host}] notes): no preview[/]"
        if self._preview_engine() is None:
            return "[dim]no memory engine[/]"
        if self.notes_missing and self._local():
            return "[dim]no notes to preview[/]"
        return "[dim]type a task to see the notes it would get[/]"

    def request(self, task: str) -> SpawnSpec:
        """The spawn the form describes for ``task``. Raises ``BudgetError`` for a budget that is
        not a number of dollars, ``SpawnSpecError`` for a value the spec refuses."""
        model = self.query_one("#spawn-model", Input).value.strip() or None
        budget_text = self.query_one("#spawn-budget", Input).value.strip()
        budget = parse_usd(budget_text, "the budget") if budget_text else None
        if budget == self.budget_usd:
            budget = None  # left as shown: the configured cap applies
        mode = self.query_one("#spawn-mode", Select).value
        backend = self.query_one("#spawn-backend", Select).value
        worktree: bool | None = self.query_one("#spawn-worktree", Checkbox).value
        sandbox = self.query_one("#spawn-sandbox", Checkbox).value
        default_mode, default_worktree = self._defaults
        if default_mode is None and mode == self.permission_mode:
            mode = None  # left as shown: the runtime's configured mode applies
        if default_worktree is None and worktree == self.worktree:
            worktree = None
        # a grid of several hosts: the workspace typed, a folder on the chosen host
        workspace = (self.query_one("#spawn-workspace", Input).value.strip() or None) if self.hosts else None
        return SpawnSpec(
            task=task, model=model, workspace=workspace,
            permission_mode=mode if isinstance(mode, str) else None,
            worktree=worktree,
            backend=backend if isinstance(backend, str) else None,
            max_budget_usd=budget,
            sandbox=None if sandbox == self.sandbox else sandbox,
        )

    @on(Input.Changed, "#spawn-task")
    def _changed(self, event: Input.Changed) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        if event.value.strip() and not (self.again and event.value == self.again.spec.task):
            # what a submit said is about a task not typed yet, or another one (a refused spawn's
            # reason stays until its task is changed)
            self.query_one("#spawn-error", Label).display = False
        if not self.preseed or self._preview_engine() is None:
            return
        if not event.value.strip():
            self._show(self._idle_text(), None)
            return
        self._debounce = self.set_timer(DEBOUNCE_S, lambda: self._preview(event.value))

    def action_spawn(self) -> None:
        self._submitted(None)

    @on(Input.Submitted, "#spawn-task, #spawn-model, #spawn-budget")
    def _submitted(self, event: Input.Submitted | None) -> None:
        task = self.query_one("#spawn-task", Input).value.strip()
        if task and self.refused:
            error = self.query_one("#spawn-error", Label)
            error.update(Content.from_markup("[$error]$why[/]", why=self.refused))
            error.display = True
            return
        if task:
            mode = self.query_one("#spawn-mode", Select).value
            backend = self.query_one("#spawn-backend", Select).value
            if mode == "auto" and backend in ("cockpit", None) and not self.query_one("#spawn-sandbox", Checkbox).value:
                error = self.query_one("#spawn-error", Label)  # said here: the task typed stays
                error.update(Content.from_markup(
                    "[$error]auto runs commands without asking only inside the sandbox: tick sandbox or pick "
                    "another mode[/]"))
                error.display = True
                return
            if self.hosts and not self.query_one("#spawn-workspace", Input).value.strip():
                error = self.query_one("#spawn-error", Label)
                error.update(Content.from_markup("[$error]say the workspace: a folder on $host[/]", host=self.host))
                error.display = True
                self.query_one("#spawn-workspace", Input).focus()
                return
            try:
                request = self.request(task)
            except (BudgetError, SpawnSpecError) as exc:
                error = self.query_one("#spawn-error", Label)
                error.update(Content.from_markup("[$error]$why[/]", why=str(exc)))
                error.display = True
                self.query_one("#spawn-budget", Input).focus()
                return
            self.dismiss(SpawnChoice(request, self.host if self.hosts else None))
        else:
            error = self.query_one("#spawn-error", Label)
            error.update(Content.from_markup("[$error]type the task first: what the session is to do[/]"))
            error.display = True
            self.query_one("#spawn-task", Input).focus()

    def _preview(self, task: str) -> None:
        ready = getattr(self._preview_engine(), "ready", True)
        if not ready:
            self._show("[$warning]model warming…[/] [dim]the preview follows when it is warm[/]", None)
        self._build(task)

    @work(thread=True, exclusive=True, group="spawn-preview")
    def _build(self, task: str) -> None:
        engine = self._preview_engine()
        try:
            preseed = engine.build_preseed(task, top_k=self.top_k)
            text = preview_markup(preseed)
        except Exception as exc:  # shown, never fatal
            from textual.markup import escape

            text = f"[$error]preview failed: {escape(str(exc))}[/]"
        self.app.call_from_thread(self._show_if_current, task, text)

    def _show_if_current(self, task: str, text: str) -> None:
        if self.is_attached and self.query_one("#spawn-task", Input).value == task:
            self._show(text, task)

    def _show(self, text: str, task: str | None) -> None:
        self.preview_for = task
        self.query_one("#spawn-preview", Static).update(Content.from_markup(text))
