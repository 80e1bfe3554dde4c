"""The spawn dialog: type a task, see the notes it would be given (live, debounced), Enter spawns.

The preview calls ``engine.build_preseed(task, top_k)`` in a thread worker 0.3 s after the last
keystroke; a stale result (the text changed meanwhile) is dropped. Before the model is warm the
preview says so and waits in its thread; the dialog itself stays responsive. Dismisses with
the task text, or ``None`` on Escape.
"""

from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Input, Label, Static

from cockpit.tui import format as fmt

DEBOUNCE_S = 0.3


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
        lines.append(f"{star} {escape(hit.name)} [dim]{hit.score:.2f}[/]  [dim]{desc}[/]")
    return "\n".join(lines)


class SpawnDialog(ModalScreen[str | None]):
    """Modal: the task input and the notes preview."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="spawn.cancel")]

    def __init__(self, engine: Any = None, top_k: int | None = None, preseed: bool = True) -> None:
        super().__init__(id="spawn-dialog")
        self.engine = engine
        self.top_k = top_k
        self.preseed = preseed
        self._debounce: Timer | None = None
        self.preview_for: str | None = None  # the task text the preview shows

    def compose(self) -> ComposeResult:
        with Vertical(id="spawn-box"):
            yield Label("[b]New session[/b] — the task (Enter spawns, Esc cancels)")
            yield Input(placeholder="e.g. what port does staging run on?", id="spawn-task")
            yield Label("Notes it would be given:", id="spawn-preview-label")
            yield Static(self._idle_text(), id="spawn-preview")

    def _idle_text(self) -> str:
        if not self.preseed:
            return "[dim]preseed is off (--no-preseed)[/]"
        if self.engine is None:
            return "[dim]no memory engine[/]"
        return "[dim]type a task to see the notes it would get[/]"

    @on(Input.Changed, "#spawn-task")
    def _changed(self, event: Input.Changed) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        if not self.preseed or self.engine is None:
            return
        if not event.value.strip():
            self._show(self._idle_text(), None)
            return
        self._debounce = self.set_timer(DEBOUNCE_S, lambda: self._preview(event.value))

    @on(Input.Submitted, "#spawn-task")
    def _submitted(self, event: Input.Submitted) -> None:
        task = event.value.strip()
        if task:
            self.dismiss(task)

    def _preview(self, task: str) -> None:
        ready = getattr(self.engine, "ready", True)
        if not ready:
            self._show("[$warning]model warming…[/] [dim]the preview follows when it is warm[/]", None)
        self._build(task)

    @work(thread=True, exclusive=True, group="spawn-preview")
    def _build(self, task: str) -> None:
        try:
            preseed = self.engine.build_preseed(task, top_k=self.top_k)
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
