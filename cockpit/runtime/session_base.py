"""What every session backend shares: state, preseed, approvals, transcript, the end of a session.

A backend (Cockpit's own loop in :mod:`cockpit.runtime.session`, Claude Code in
:mod:`cockpit.runtime.claude_code`) subclasses :class:`SessionBase` and implements
:meth:`SessionBase._main` (the conversation) and, when it holds resources, :meth:`SessionBase._cleanup`.
The manager and every client see only this surface (:class:`~cockpit.runtime.protocols.SessionLike`):
status and detail, the spec, the worktree, the pending approval, the injected notes, usage and cost,
the final text, the error, the transcript, and ``start`` / ``post`` / ``answer`` / ``is_idle`` /
``to_dict``.

The template (:meth:`SessionBase._run`): take a concurrency slot, ``starting``, run ``_main``; a
cancellation ends ``killed``, a :class:`~cockpit.runtime.model_call.SessionFailure` ``error`` (its
kind), an ``OSError`` ``error`` (kind ``io``), anything else ``error`` (kind ``internal``); then the
slot is given back, pending approvals are dropped, ``_cleanup`` runs, an unchanged worktree is
removed, and the transcript's ``end`` record, the final ``StatusChanged`` and ``SessionDone`` are
written — always, in that order.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.events import (
    ApprovalRequested,
    ApprovalResolved,
    BackendRecord,
    BudgetNotice,
    ConversationMessage,
    Event,
    InjectedNote,
    MemoryMiss,
    Preseeded,
    SelectorInfo,
    SessionDone,
    SessionErrorEvent,
    SessionStarted,
    SessionStatus,
    StatusChanged,
    Usage,
    UsageUpdate,
    UserMessage,
    WorktreeChanged,
    WorktreeRemoved,
)
from cockpit.runtime import worktree as wt
from cockpit.runtime.budget import Budget, BudgetHit, check
from cockpit.runtime.history import SessionHistory
from cockpit.runtime.model_call import Accounting, SessionFailure, one_line
from cockpit.runtime.permissions import PermissionMode
from cockpit.runtime.protocols import MemoryBackend, SessionHost
from cockpit.runtime.query import preseed_query
from cockpit.runtime.recorder import Recorder
from cockpit.runtime.redact import redact
from cockpit.runtime.transcript import now_iso

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.config import RuntimeConfig

S = SessionStatus
HOST_ENGINE: Any = object()  # "use the host's engine"


@dataclass(frozen=True)
class SessionSpec:
    """What a session is asked to do. ``workspace``: the folder the user chose; ``cwd``: where it
    works (a worktree's folder or ``workspace``); ``worktree``: the worktree or None (in place);
    ``placement``: one line saying which and why; ``backend``: ``cockpit`` | ``claude-code``."""

    task: str
    model: str
    workspace: Path
    cwd: Path
    preseed_enabled: bool = True
    top_k: int | None = None
    interactive: bool = True
    permission_mode: PermissionMode = PermissionMode.DEFAULT
    tools_style: str = "anthropic"
    worktree: wt.WorktreeInfo | None = None
    placement: str = ""
    backend: str = "cockpit"
    sandbox: str = ""  # the sandbox its commands run in (bubblewrap, claude-code), "" = unconfined
    sandbox_note: str = ""  # one line: what the sandbox allows, or why there is none
    network: str = "off"  # inside the sandbox: off | on | allow


# the permission modes under which a kind of call runs without asking (unless a protected path, a
# deny rule that cannot be checked, or the sandbox asks in every mode)
_MODES_ALLOWING = {
    "edit": ("acceptEdits", "auto", "bypassPermissions"),
    "create": ("acceptEdits", "auto", "bypassPermissions"),
    "bash": ("auto", "bypassPermissions"),
}


def headless_denial(mode: PermissionMode, kind: str = "", suggestion: str = "") -> str:
    """Why an approval nobody can answer (``cockpit run``) was denied; told to the model. Names
    only the modes that would run this kind of call (never the one it ran in) and the allow
    rule that would (``suggestion``, e.g. ``Bash(pytest *)``; none for a command no rule can
    judge, such as ``python -c …``)."""
    allowing = _MODES_ALLOWING.get(kind, ("bypassPermissions",))
    if mode.value in allowing:  # this mode allows the kind: what asked asks in these modes too
        modes: list[str] = []
    else:
        modes = [m for m in allowing if m != mode.value]
    rule = f"the allow rule {suggestion} in config.toml [permissions]" if suggestion else \
        "" if kind == "bash" else "an allow rule in config.toml [permissions]"  # (a command no rule can judge)
    if modes:
        fix = f"rerun with --permission-mode {' or '.join(modes)}" + (f", or add {rule}" if rule else
                                                                      " (no allow rule can name this command)")
    elif rule:
        fix = f"this call asks in permission mode {mode.value} too: add {rule}, or run the task in the app to answer it"
    else:
        fix = (f"this call asks in permission mode {mode.value} too and no allow rule can name it: "
               "run the task in the app to answer it")
    return f"nobody can answer approvals in a headless run (permission mode {mode.value}: {mode.blurb}); {fix}"


def denial_message(reason: str) -> str:
    """The tool result a model gets when an approval was denied (``reason``: the user's, or why
    nobody could answer)."""
    why = f" The user said: {reason}" if reason else ""
    return ("The user denied this tool use; it was not run (for an edit: the file was NOT "
            f"changed).{why} Adapt your approach or ask the user how to proceed.")


class SessionBase:
    """A running (or finished) session. Read-only for consumers; drive it via the manager.

    Attributes: ``id``, ``spec`` (:class:`SessionSpec`; ``task``, ``model``, ``workspace`` and
    ``cwd`` are shortcuts), ``status``, ``detail``, ``usage`` (tokens summed over responses),
    ``cost_usd`` (USD, None when the model has no price), ``cost_source`` (``pricing``: our
    table; ``claude-code``: Claude Code's own ``total_cost_usd``), ``injected`` (notes in the
    block), ``preseed_text``, ``preseed_tokens``, ``preseed_error``, ``transcript_path``,
    ``final_text``, ``stop_reason``, ``error`` (SessionErrorEvent or None), ``messages`` (the
    conversation as recorded), ``requests`` (model requests), ``pending`` (the approval waiting,
    or None), ``context_full``, ``budget`` (its spend cap, :class:`~cockpit.runtime.budget.Budget`).
    """

    cost_source = "pricing"
    kill_reason: str  # why the manager killed it ("" = the user); becomes the final detail

    def __init__(self, host: SessionHost, spec: SessionSpec, *, session_id: str, transcript_path: Path,
                 messages: list[dict] | None = None, resumed_from: str | None = None,
                 resumed: SessionHistory | None = None, first_content: list[dict] | None = None,
                 config: RuntimeConfig | None = None, engine: MemoryBackend | None | object = HOST_ENGINE):
        self.id = session_id
        self.spec = spec
        self.transcript_path = Path(transcript_path)
        self.status: SessionStatus = S.QUEUED
        self.detail = ""
        price = host.pricing.lookup(spec.model)
        self.acct = Accounting(usage=Usage(), cost_usd=0.0 if price else None,
                               context_window=price.context_window if price else None)
        self.injected: tuple[InjectedNote, ...] = ()
        self.preseed_index: tuple[str, ...] = ()  # the notes the block listed under "may be relevant"
        self.left_out: tuple[str, ...] = ()  # "name: why" for close candidates that got no line
        self.misses: list[str] = []  # notes read in full that the preseed did not give as a line
        self.preseed_text = ""
        self.preseed_tokens = 0
        self.preseed_error = ""
        self.final_text = ""
        self.stop_reason: str | None = None
        self.error: SessionErrorEvent | None = None
        self.messages: list[dict] = list(messages or [])
        self.started_at = now_iso()
        self.resumed_from = resumed_from
        self.context_full = False
        self.continued_in: str | None = None
        self.continued_from: str | None = None
        self.worktree_removed = False
        self.pending: ApprovalRequested | None = None
        self.denied: list[str] = []  # headless: the asks denied for want of anyone to answer them
        self.kill_reason = ""
        self._resumed = resumed  # the predecessor's folded transcript (a resume)
        self._started_written = False
        self._first_content = first_content
        self._host = host
        self._cfg = config or host.config
        self.engine: MemoryBackend | None = host.engine if engine is HOST_ENGINE else engine  # type: ignore[assignment]
        self._inbox: asyncio.Queue[str | None] = asyncio.Queue()
        self._answers: dict[str, asyncio.Future] = {}
        self.history = SessionHistory(session_id)  # its events folded as they are emitted (its row)
        self.rec = Recorder(self.transcript_path, self._publish, self._redact)
        self._slot = False
        self._task: asyncio.Task | None = None
        self.budget = Budget(self._cfg.max_budget_usd, self._cfg.max_budget_tokens)
        self._budget_wake = asyncio.Event()  # set when a cap (the session's or the server's) changed
        self._init_backend()

    def _init_backend(self) -> None:
        """A backend's own state, set up at the end of ``__init__`` (everything above is there):
        subclasses override this rather than repeat the constructor's signature."""

    # -- shortcuts ------------------------------------------------------------------------
    task = property(lambda self: self.spec.task)
    workspace = property(lambda self: self.spec.workspace)
    cwd = property(lambda self: self.spec.cwd)
    interactive = property(lambda self: self.spec.interactive)
    preseed_enabled = property(lambda self: self.spec.preseed_enabled)
    top_k = property(lambda self: self.spec.top_k)
    worktree = property(lambda self: self.spec.worktree)
    usage = property(lambda self: self.acct.usage)
    cost_usd = property(lambda self: self.acct.cost_usd)
    requests = property(lambda self: self.acct.requests)
    context_window = property(lambda self: self.acct.context_window)

    @property
    def model_id(self) -> str:
        return self.spec.model

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} {self.status.value} {self.spec.model} {self.task[:30]!r}>"

    # -- what a backend provides ---------------------------------------------------------
    async def _main(self) -> None:
        """The conversation, from the first message to the end (returning = ``done``)."""
        raise NotImplementedError

    async def _cleanup(self) -> None:
        """Release what the backend holds (a shell, a subprocess). Runs once, at the end."""

    def system_prompt(self) -> str:
        """The system prompt as the transcript header records it."""
        return ""

    def _header_extra(self) -> dict[str, Any]:
        return {}

    def _end_extra(self) -> dict[str, Any]:
        return {}

    # -- plumbing -------------------------------------------------------------------------
    def _set(self, status: SessionStatus, detail: str = "") -> None:
        if status == self.status and detail == self.detail:
            return
        self.status, self.detail = status, detail
        self.rec.emit(StatusChanged(self.id, status, detail))

    def _publish(self, event: Event) -> None:
        """The recorder's door out: fold the event into :attr:`history`, then the manager's bus."""
        self.history.apply(event)
        self._host.publish(event)

    def _note(self, record_kind: str, /, **data: Any) -> None:
        """A backend's own fact for the transcript (a :class:`BackendRecord` clients may ignore)."""
        self.rec.emit(BackendRecord(self.id, record_kind, data))

    def _redact(self, text: str) -> str:
        """``text`` with the API key (and auth token, and other providers' keys), plain or encoded
        (base64, hex, URL, reversed), as ``***`` (:mod:`cockpit.runtime.redact`)."""
        text = redact(redact(text, self._cfg.api_key), self._cfg.auth_token)
        for key in self._cfg.provider_keys.values():
            text = redact(text, key)
        return text

    async def _acquire(self) -> None:
        sem = self._host.slots
        if sem.locked():
            self._set(S.QUEUED, "waiting for a free slot")
        await sem.acquire()
        self._slot = True

    def _release(self) -> None:
        if self._slot:
            self._slot = False
            self._host.slots.release()

    def started_event(self) -> SessionStarted:
        """The settings the transcript keeps beside ``SessionSpawned`` and ``Preseeded``."""
        return SessionStarted(
            self.id, self.started_at, self.system_prompt(), self.top_k, self.interactive,
            str(getattr(self.engine, "notes_dir", "") or ""),
            not self.spec.sandbox and "--no-sandbox" in self.spec.sandbox_note,
            self.budget.to_dict(), self._header_extra(),
        )

    def _add_message(self, role: str, content: list[dict]) -> None:
        if role == "user" and self.messages and self.messages[-1]["role"] == "user":
            # e.g. a follow-up after the turn cap stopped after tool results: keep roles alternating
            self.messages[-1] = {"role": "user", "content": list(self.messages[-1]["content"]) + content}
        else:
            self.messages.append({"role": role, "content": content})
        self.rec.emit(ConversationMessage(self.id, role, content))

    # -- the template -----------------------------------------------------------------------
    async def _run(self) -> None:
        final = S.DONE
        try:
            await self._acquire()
            self._set(S.STARTING)
            if self.resumed_from is not None or self._first_content is not None:
                await self._report_changes()  # an existing worktree may hold changes already
            await self._main()
        except asyncio.CancelledError:
            final = S.KILLED
            self.detail = self.kill_reason
        except SessionFailure as f:
            final = S.ERROR
            self._fail(f.kind, f.message)
        except OSError as exc:  # e.g. the transcripts folder cannot be written
            final = S.ERROR
            self._fail("io", f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # internal bug: keep other sessions alive, say what happened
            final = S.ERROR
            self._fail("internal", f"{type(exc).__name__}: {exc}")
        finally:
            self._release()
            for fut in self._answers.values():
                if not fut.done():
                    fut.cancel()
            await self._cleanup()
            await self._drop_unchanged_worktree()
            self._finish(final)

    async def _wait_follow_up(self, detail: str = "") -> str | None:
        """``waiting for you`` (slot given back) until a follow-up arrives; it is recorded and
        published. None: the session is to end (a review action or a continuation)."""
        self._release()
        self._set(S.WAITING, detail)
        text = await self._inbox.get()
        if text is None:
            return None
        await self._acquire()
        self.context_full = False
        self._add_message("user", [{"type": "text", "text": text}])
        self.rec.emit(UserMessage(self.id, text))
        return text

    # -- spend caps (cockpit.runtime.budget) ---------------------------------------------------
    def budget_hit(self) -> BudgetHit | None:
        """The cap this session is at: its own, else the server's (the sum over every session)."""
        return check("session", self.budget, self.usage, self.cost_usd) or self._host.server_budget_hit()

    async def _budget_gate(self, forced: BudgetHit | None = None) -> None:
        """Called after a response's usage was added (before its tools run) and before each model
        request. At a spend cap an interactive session pauses in ``budget reached`` — its slot given
        back — until the cap is raised; a headless one ends ``error`` (kind ``budget``).
        ``forced``: a cap the backend itself stopped at (Claude Code's ``max_budget_usd``): pause
        until the next change of a cap even when our own figures are just under it."""
        hit = self.budget_hit() or forced
        if hit is None:
            return
        self._budget_record("reached", hit.scope, hit.budget, hit.message())
        if not self.interactive:
            raise SessionFailure("budget", hit.message())
        self._release()
        while hit is not None:
            self._budget_wake.clear()
            self._set(S.BUDGET_REACHED, f"{hit.message()} — raise the cap to go on")
            await self._budget_wake.wait()
            hit = self.budget_hit()
        await self._acquire()

    def _budget_record(self, level: str, scope: str, budget: Budget, message: str = "") -> None:
        """A :class:`BudgetNotice`."""
        if scope == "server":
            usage, cost = self._host.totals()
        else:
            usage, cost = self.usage, self.cost_usd
        self.rec.emit(BudgetNotice(self.id, level, scope, cost, usage.total, budget.usd, budget.tokens, message))

    def set_budget(self, budget: Budget) -> None:
        """A new cap for this session (recorded, published); a session paused at it re-checks."""
        self.budget = budget
        self._budget_record("raised", "session", budget, f"session budget set to {budget.describe()}")
        self._budget_wake.set()

    def budget_changed(self, server: Budget) -> None:
        """The server's cap changed: a session paused in ``budget reached`` records it and re-checks."""
        if self.status is S.BUDGET_REACHED:
            self._budget_record("raised", "server", server, f"server budget set to {server.describe()}")
        self._budget_wake.set()

    async def _drop_unchanged_worktree(self) -> None:
        """A session that changed nothing leaves no worktree or branch behind."""
        w = self.spec.worktree
        if w is None or self.continued_in or not Path(w.path).is_dir():
            return
        try:
            removed = await asyncio.shield(asyncio.to_thread(wt.remove_if_unchanged, w))
        except (asyncio.CancelledError, wt.WorktreeError):
            return
        if removed:
            self.worktree_removed = True
            self.rec.emit(WorktreeRemoved(self.id, "no changes"))
        else:  # its diff stat as it ends: the last one a report (folded events) reads
            try:
                await asyncio.shield(self._report_changes())
            except asyncio.CancelledError:
                return

    def _open_transcript(self) -> None:
        """Create the transcript (what was emitted so far, then :class:`SessionStarted`): once
        the first message is known. Raises OSError when the folder cannot be written."""
        if not self.rec.open and not self._started_written:
            self.rec.start()
            self._started_written = True
            self.rec.emit(self.started_event())

    def _fail(self, kind: str, message: str) -> None:
        message = self._redact(one_line(message))
        ev = SessionErrorEvent(self.id, message, kind)
        self.error = ev
        try:
            self._open_transcript()
        except OSError:
            pass
        self.rec.emit(ev)

    def _finish(self, status: SessionStatus) -> None:
        try:
            self._open_transcript()
        except OSError:
            pass
        self.status = status
        self.detail = self.error.message if (status == S.ERROR and self.error) else self.detail
        if status == S.DONE and self.continued_in:
            self.detail = f"continued in session {self.continued_in}"
        self.pending = None
        keep = status in (S.ERROR, S.DONE) or (status is S.KILLED and self.kill_reason)
        self.rec.emit(StatusChanged(self.id, status, self.detail if keep else ""))
        self.rec.emit(SessionDone(self.id, status, final_text=self.final_text, stop_reason=self.stop_reason,
                                  extra={"transcript_path": str(self.transcript_path), "requests": self.requests,
                                         **self._end_extra()},
                                  usage=self.usage, cost_usd=self.cost_usd,
                                  reason=self.detail if status is not S.DONE or self.continued_in else "",
                                  ended_at=now_iso()))
        self.rec.close()

    def _resume_setup(self) -> None:
        old = self._resumed
        if old is not None:  # the notes its first message had (maybe none), as the new pane and transcript show
            self.injected, self.left_out = old.notes, old.left_out
            self.preseed_text, self.preseed_tokens = old.preseed_text, old.preseed_tokens
            self.rec.emit(Preseeded(self.id, self.injected, self.preseed_tokens, self.preseed_text,
                                    old.preseed_error, memory=old.memory, left_out=self.left_out))
        msgs, self.messages = self.messages, []
        self._open_transcript()
        for m in msgs:
            self._add_message(m["role"], m["content"])
        for m in reversed(self.messages):
            if m["role"] == "assistant":
                self.final_text = "".join(b.get("text", "") for b in m["content"] if b.get("type") == "text")
                break

    async def _preseed(self) -> None:
        engine = self.engine
        if not self.preseed_enabled:
            return
        info = None
        self._set(S.PRESEEDING)
        if engine is not None:
            try:
                if not engine.ready:
                    self._set(S.PRESEEDING, "waiting for model warm-up and the first index sync")
                    await asyncio.to_thread(engine.wait_ready)
                    self._set(S.PRESEEDING)
                from cockpit.runtime.selector import selector_for

                sel = selector_for(self._cfg)  # the model selector, when configured (issue 11)
                pre = await asyncio.to_thread(engine.build_preseed, preseed_query(self.task), self.top_k,
                                              **({"selector": sel} if sel is not None else {}))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # fail open, visibly: recorded and shown, never "no note qualified"
                self.preseed_error = self._redact(one_line(f"{type(exc).__name__}: {exc}"))
                self._set(S.PRESEEDING, f"preseed failed, continuing without notes: {self.preseed_error}")
            else:
                self.preseed_text = pre.text or ""
                self.preseed_tokens = int(pre.tokens or 0)
                self.injected = tuple(
                    InjectedNote(h.name, float(h.score), bool(h.priority), h.description or "", str(h.path), kind,
                                 None if h.priority else getattr(h, "probability", None),
                                 getattr(h, "status", "") or "", getattr(h, "superseded_by", "") or "")
                    for kind, hits in (("line", pre.hits), ("index", getattr(pre, "index", ()) or ()))
                    for h in hits
                )
                self.preseed_index = tuple(n.name for n in self.injected if n.kind == "index")
                self.left_out = tuple(f"{name}: {why}" for name, why in getattr(pre, "left_out", ()) or ())
                info = self._account_selector(getattr(pre, "selector", None))
        self.rec.emit(Preseeded(self.id, self.injected, self.preseed_tokens, self.preseed_text, self.preseed_error,
                                info, memory=engine is not None, left_out=self.left_out))

    MISS_TOOLS = ("memory_get", "mcp__cockpit__memory_get")

    def note_tool_use(self, tool: str, data: Any, is_error: bool) -> None:
        """After a tool call: when it read a whole note (``memory_get``, or the note's file
        opened with the editor or ``Read``) that the preseed did not give as a line, record a
        miss (transcript ``memory_miss`` record with the task and notes folder, and a
        :class:`MemoryMiss` event), once per note."""
        if is_error or not isinstance(data, dict) or not self.preseed_enabled:
            return
        name = None
        if tool in self.MISS_TOOLS and isinstance(data.get("name"), str):
            name, via = data["name"], tool
        else:
            path = data.get("path") or data.get("file_path")
            notes_dir = getattr(self.engine, "notes_dir", None)
            if isinstance(path, str) and path.endswith(".md") and notes_dir is not None:
                opened = Path(path).expanduser()
                if not opened.is_absolute():  # the editor's paths are the working tree's
                    opened = Path(self.cwd) / opened
                rel = None
                for folder in self._notes_folders(Path(notes_dir)):
                    try:
                        rel = opened.resolve().relative_to(folder)
                        break
                    except (ValueError, OSError):
                        continue
                if rel is None:
                    return
                name, via = self._note_name_of(rel.as_posix()), "file"
        if not name:
            return
        given = {n.name.casefold() for n in self.injected if n.kind == "line"}
        if name.casefold() in given or name.casefold() in {m.casefold() for m in self.misses}:
            return
        self.misses.append(name)
        in_index = name.casefold() in {n.casefold() for n in self.preseed_index}
        notes_dir = getattr(self.engine, "notes_dir", "")
        self.rec.emit(MemoryMiss(self.id, name, via, in_index, str(notes_dir), self.task,
                                 tuple(n.name for n in self.injected if n.kind == "line" and not n.priority)))

    def _notes_folders(self, notes_dir: Path) -> list[Path]:
        """The notes folder, and its copy in the session's worktree when it lies in the workspace."""
        folders = [notes_dir.resolve()]
        w = self.spec.worktree
        try:
            inner = folders[0].relative_to(Path(self.workspace).resolve())
        except (ValueError, OSError):
            return folders
        if w is not None:
            folders.append((Path(w.path) / inner).resolve())
        return folders

    def _note_name_of(self, rel: str) -> str | None:
        """The name of the note at ``rel`` (relative to the notes folder) as the index knows it."""
        lister = getattr(self.engine, "list_notes", None)
        for listed in (lister() if lister is not None else []):
            if listed.get("path") == rel:
                return str(listed["name"])
        return Path(rel).stem

    def _account_selector(self, res: Any) -> SelectorInfo | None:
        """Add a selector call's usage to the session's totals (transcript ``usage`` record with
        ``source: "selector"``, UsageUpdate) and describe it for the Preseeded event."""
        if res is None:
            return None
        u = Usage(res.usage.input, res.usage.output, res.usage.cache_write, res.usage.cache_read)
        cost = self._host.pricing.cost(res.model, u) if u.total else None
        acct = self.acct
        if u.total:
            acct.usage = acct.usage + u
            if cost is not None and acct.cost_usd is not None:
                acct.cost_usd += cost
            self._open_transcript()  # the header (injected notes) is final by now
            self._host.add_usage(u, cost)
            self.rec.emit(UsageUpdate(self.id, u, acct.usage, cost, acct.cost_usd, context_window=acct.context_window,
                                      model=res.model, source="selector"))
        return SelectorInfo(res.model, u, cost, res.latency_ms, None if res.names is None else len(res.names),
                            res.error)

    # -- approvals --------------------------------------------------------------------------
    async def _await_answer(self, ask: ApprovalRequested) -> tuple[bool, str, str]:
        """Publish ``ask`` and wait for any client's answer: (allowed, scope, reason). The session
        is ``needs approval`` and gives its slot back meanwhile. Headless (not interactive): denied
        at once, scope ``auto``, with the reason told to the model."""
        if not self.interactive:
            reason = headless_denial(self.spec.permission_mode, ask.kind, ask.suggestion)
            self.denied.append(ask.summary)
            self.rec.emit(ask)
            self._resolved(ask.request_id, False, "auto", reason)
            return False, "auto", reason
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._answers[ask.request_id] = fut
        self.pending = ask
        self.rec.emit(ask)
        self._release()
        self._set(S.NEEDS_APPROVAL, ask.summary)
        try:
            allowed, scope, reason = await fut
        finally:
            self._answers.pop(ask.request_id, None)
            self.pending = None
        self._resolved(ask.request_id, allowed, scope, reason)
        await self._acquire()
        return allowed, scope, reason

    def _resolved(self, request_id: str, allowed: bool, scope: str, reason: str) -> None:
        self.rec.emit(ApprovalResolved(self.id, request_id, allowed, scope, reason))

    def answer(self, request_id: str, allow: bool, scope: str = "once", reason: str = "") -> None:
        """Answer a pending approval. Raises KeyError when none with that id waits."""
        if scope not in ("once", "session"):
            raise ValueError("scope must be 'once' or 'session'")
        fut = self._answers.get(request_id)
        if fut is None or fut.done():
            raise KeyError(f"no approval {request_id} pending in session {self.id}")
        fut.set_result((bool(allow), scope, reason.strip()))

    async def _report_changes(self) -> None:
        w = self.spec.worktree
        if w is None:
            return
        try:
            d = await asyncio.to_thread(wt.diff, w, False)
        except wt.WorktreeError:
            return
        stat = d.stat
        self.rec.emit(WorktreeChanged(self.id, stat.files, stat.added, stat.removed,
                                      tuple(f.path for f in d.files)[:500]))

    async def quiesce(self) -> bool:
        """Before Cockpit's own git works in this session's worktree (a review): stop every process
        the session runs there, so none can plant a link git would write through. True when the
        session lives on (its tools start again when next needed), False when that ended it. Here:
        the session ends (a backend whose processes can be stopped alone overrides this)."""
        if not self.status.is_final:
            self.post(None)
            if self._task is not None:
                await asyncio.wait([self._task])
        return False

    # -- manager-facing -------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"cockpit-session-{self.id}")

    def post(self, text: str | None) -> None:
        """Queue a follow-up (None: end the session ``done`` when it next waits)."""
        self._inbox.put_nowait(text)

    @property
    def is_idle(self) -> bool:
        return (self.status.is_final or self.status is S.BUDGET_REACHED
                or (self.status == S.WAITING and self._inbox.empty()))

    def to_dict(self) -> dict:
        """JSON-ready summary (the headless report; ``cockpit ls --json``): its folded events'
        row (:func:`cockpit.runtime.report.session_row`), as a transcript of it folded gives."""
        from cockpit.runtime.report import session_row

        return session_row(self.history)



class EndedSession(SessionBase):
    """A session that ended under an earlier server, restored from its transcript for its review
    (:meth:`SessionManager.restore`): its row and worktree, nothing that runs."""

    async def _main(self) -> None:
        raise RuntimeError(f"session {self.id} ended before this server started: resume it to go on")


__all__ = ["SessionBase", "EndedSession", "SessionSpec", "SessionFailure", "headless_denial", "denial_message",
           "HOST_ENGINE"]
