"""One agent session: an asyncio task running the Messages API tool loop in its working tree.

States (``cockpit.events.SessionStatus``), known from the loop itself:

``queued`` (waiting for a concurrency slot) → ``starting`` → ``preseeding`` (only when preseed
is on; detail "waiting for model warm-up…" while the embedder loads) → ``streaming`` (a request
is in flight) ⇄ ``running tool`` ⇄ ``needs approval`` (a tool call waits for the user) →
``waiting for you`` (interactive sessions after ``end_turn``, ``max_tokens``, the turn cap or a
full context; a follow-up via ``SessionManager.send`` resumes ``streaming``) → ``done`` |
``error`` | ``killed``. Non-interactive (headless) sessions go straight to ``done`` after the
model ends its turn (``error`` when the turn cap is hit), and an approval nobody can answer is
denied with the reason told to the model. A session waiting for the user (approval or follow-up)
gives its concurrency slot back.

Turn handling:

- ``stop_reason == "tool_use"``: each ``tool_use`` block is prepared (validated; an edit's diff
  computed), judged by the session's :class:`~cockpit.runtime.permissions.PermissionPolicy`
  (allow / ask / deny), run, and published (ToolCall / ApprovalRequested / ApprovalResolved /
  ToolResult events); the results go back in one user message as ``tool_result`` blocks.
- ``"max_tokens"``: the turn ends visibly; unfinished tool calls in it are not run.
- ``None`` (stream ended without ``message_stop``): an interrupted turn, retried, then an error
  (see :mod:`cockpit.runtime.model_call`). Consumers drop the partial text of the current turn
  when a StatusChanged detail starts with "retry".

The first user message holds an ``<env>`` block (working directory, worktree branch, permission
mode), the preseed block (when any) and the task, so the system prompt and tools stay identical
for every session (cached once, shared). Prompt caching: the system block, the last tool
definition and the last content block of each request carry ``cache_control``.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.events import (
    ApprovalRequested,
    ApprovalResolved,
    ContextNotice,
    InjectedNote,
    Preseeded,
    SessionDone,
    SessionErrorEvent,
    SessionStatus,
    StatusChanged,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    WorktreeChanged,
)
from cockpit.runtime import prompts
from cockpit.runtime import worktree as wt
from cockpit.runtime.bash import session_env
from cockpit.runtime.editor import EditorError
from cockpit.runtime.model_call import (
    Accounting,
    ContextFull,
    ModelCaller,
    SessionFailure,
    block_to_param,
    one_line,
)
from cockpit.runtime.permissions import PermissionMode, PermissionPolicy, session_rule_for
from cockpit.runtime.protocols import SessionHost
from cockpit.runtime.recorder import Recorder
from cockpit.runtime.tools import PreparedCall, ToolInputError, ToolOutcome, ToolRunner, tool_definitions
from cockpit.runtime.transcript import now_iso
from cockpit.runtime.workspace import PathRefused

S = SessionStatus
CONTEXT_WARN = 0.8


@dataclass(frozen=True)
class SessionSpec:
    """What a session is asked to do. ``workspace``: the folder the user chose; ``cwd``: where it
    works (a worktree's folder or ``workspace``); ``worktree``: the worktree or None (in place);
    ``placement``: one line saying which and why."""

    task: str
    model: str
    workspace: Path
    cwd: Path
    preseed_enabled: bool = True
    top_k: int = 5
    interactive: bool = True
    permission_mode: PermissionMode = PermissionMode.DEFAULT
    tools_style: str = "anthropic"
    worktree: wt.WorktreeInfo | None = None
    placement: str = ""
    backend: str = "cockpit"


class Session:
    """A running (or finished) session. Read-only for consumers; drive it via the manager.

    Attributes: ``id``, ``spec`` (:class:`SessionSpec`; ``task``, ``model``, ``workspace`` and
    ``cwd`` are shortcuts), ``status``, ``detail``, ``usage`` (tokens summed over responses),
    ``cost_usd`` (USD, None when the model has no price), ``injected`` (notes in the block),
    ``preseed_text``, ``preseed_tokens``, ``preseed_error``, ``transcript_path``, ``final_text``,
    ``stop_reason``, ``error`` (SessionErrorEvent or None), ``messages`` (the conversation as
    sent), ``requests``, ``pending`` (the approval waiting, or None), ``context_full``.
    """

    def __init__(self, host: SessionHost, spec: SessionSpec, *, session_id: str, transcript_path: Path,
                 messages: list[dict] | None = None, resumed_from: str | None = None,
                 resumed_header: dict | None = None, first_content: list[dict] | None = None):
        self.id = session_id
        self.spec = spec
        self.transcript_path = Path(transcript_path)
        self.status: SessionStatus = S.QUEUED
        self.detail = ""
        price = host.pricing.lookup(spec.model)
        self.acct = Accounting(usage=Usage(), cost_usd=0.0 if price else None,
                               context_window=price.context_window if price else None)
        self.injected: tuple[InjectedNote, ...] = ()
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
        self._resumed_header = resumed_header or {}
        self._first_content = first_content
        self._host = host
        self._cfg = host.config
        self._inbox: asyncio.Queue[str | None] = asyncio.Queue()
        self._answers: dict[str, asyncio.Future] = {}
        self._warned_context = False
        self.policy = PermissionPolicy(spec.permission_mode, self._cfg.allow, self._cfg.deny)
        env = session_env(dict(os.environ), secrets_to_strip=tuple(s for s in (self._cfg.api_key,) if s),
                          extra={"COCKPIT_SESSION_ID": session_id})
        self.tools = ToolRunner(spec.cwd, host.engine, spec.top_k, env=env, bash_timeout=self._cfg.bash_timeout)
        self.rec = Recorder(self.transcript_path, host.publish, self._redact)
        self.model = ModelCaller(host, session_id, spec.model, self.acct, self.rec.emit, self.rec.record, self._redact)
        self._slot = False
        self._task: asyncio.Task | None = None

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
        return f"<Session {self.id} {self.status.value} {self.spec.model} {self.task[:30]!r}>"

    # -- plumbing -------------------------------------------------------------------------
    def _set(self, status: SessionStatus, detail: str = "") -> None:
        if status == self.status and detail == self.detail:
            return
        self.status, self.detail = status, detail
        self.rec.record("status", status=status.value, detail=detail)
        self.rec.emit(StatusChanged(self.id, status, detail))

    def _redact(self, text: str) -> str:
        key = self._cfg.api_key
        if key and len(key) >= 4:
            text = text.replace(key, "***")
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

    def header(self) -> dict[str, Any]:
        w = self.spec.worktree
        return dict(
            version=2,
            session_id=self.id,
            task=self.task,
            model=self.spec.model,
            backend=self.spec.backend,
            workspace=str(self.workspace),
            cwd=str(self.cwd),
            worktree=None if w is None else {"path": w.path, "branch": w.branch, "base_commit": w.base_commit,
                                             "base_branch": w.base_branch, "repo": w.repo},
            placement=self.spec.placement,
            permission_mode=self.spec.permission_mode.value,
            tools=self.spec.tools_style,
            preseed_enabled=self.preseed_enabled,
            top_k=self.top_k,
            interactive=self.interactive,
            injected=[n.__dict__ for n in self.injected],
            preseed_text=self.preseed_text,
            preseed_tokens=self.preseed_tokens,
            preseed_error=self.preseed_error,
            system_prompt=prompts.system_prompt(self.preseed_enabled),
            started_at=self.started_at,
            resumed_from=self.resumed_from,
        )

    def _add_message(self, role: str, content: list[dict]) -> None:
        if role == "user" and self.messages and self.messages[-1]["role"] == "user":
            # e.g. a follow-up after the turn cap stopped after tool results: keep roles alternating
            self.messages[-1] = {"role": "user", "content": list(self.messages[-1]["content"]) + content}
        else:
            self.messages.append({"role": role, "content": content})
        self.rec.record("message", role=role, content=content)

    # -- main loop ------------------------------------------------------------------------
    async def _run(self) -> None:
        final = S.DONE
        try:
            await self._acquire()
            self._set(S.STARTING)
            if self.resumed_from is not None or self._first_content is not None:
                await self._report_changes()  # an existing worktree may hold changes already
            if self.resumed_from is not None:
                self._resume_setup()
            else:
                await self._preseed()
                self._open_transcript()
                first = self._first_content or prompts.first_user_content(
                    self.task, self.preseed_text, prompts.env_block(self.spec))
                self._add_message("user", first)
            need_model = not self.messages or self.messages[-1]["role"] == "user"
            while True:
                kind, detail = await self._turns() if need_model else ("resumed", "")
                need_model = True
                if not self.interactive:
                    if kind == "turn_cap":
                        raise SessionFailure("turn_cap", detail)
                    if kind == "context_full":
                        raise SessionFailure("context_full", detail)
                    break
                self._release()
                self._set(S.WAITING, detail)
                text = await self._inbox.get()
                if text is None:  # ended by a review action or a continuation
                    break
                await self._acquire()
                self.context_full = False
                self._add_message("user", [{"type": "text", "text": text}])
                self.rec.emit(UserMessage(self.id, text))
        except asyncio.CancelledError:
            final = S.KILLED
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
            await self.tools.close()
            await self._drop_unchanged_worktree()
            self._finish(final)

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
            self.rec.record("worktree", removed=True, reason="no changes")

    def _open_transcript(self) -> None:
        self.rec.start(self.header())

    def _fail(self, kind: str, message: str) -> None:
        message = self._redact(one_line(message))
        ev = SessionErrorEvent(self.id, message, kind)
        self.error = ev
        try:
            self._open_transcript()
        except OSError:
            pass
        self.rec.record("error", kind=kind, message=message)
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
        self.rec.record(
            "end", status=status.value, final_text=self.final_text, stop_reason=self.stop_reason,
            usage=self.usage.__dict__, cost_usd=self.cost_usd, requests=self.requests, ended_at=now_iso(),
        )
        self.rec.close()
        self.rec.emit(StatusChanged(self.id, status, self.detail if status in (S.ERROR, S.DONE) else ""))
        self.rec.emit(SessionDone(self.id, status, final_text=self.final_text, stop_reason=self.stop_reason,
                                  extra={"transcript_path": str(self.transcript_path), "requests": self.requests}))

    def _resume_setup(self) -> None:
        h = self._resumed_header
        self.injected = tuple(InjectedNote(**n) for n in h.get("injected", []))
        self.preseed_text = h.get("preseed_text", "")
        self.preseed_tokens = h.get("preseed_tokens", 0)
        msgs, self.messages = self.messages, []
        self._open_transcript()
        for m in msgs:
            self._add_message(m["role"], m["content"])
        for m in reversed(self.messages):
            if m["role"] == "assistant":
                self.final_text = "".join(b.get("text", "") for b in m["content"] if b.get("type") == "text")
                break

    async def _preseed(self) -> None:
        engine = self._host.engine
        if not self.preseed_enabled:
            return
        self._set(S.PRESEEDING)
        if engine is not None:
            try:
                if not engine.ready:
                    self._set(S.PRESEEDING, "waiting for model warm-up and the first index sync")
                    await asyncio.to_thread(engine.wait_ready)
                    self._set(S.PRESEEDING)
                pre = await asyncio.to_thread(engine.build_preseed, preseed_query(self.task), self.top_k)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # fail open, visibly: recorded and shown, never "no note qualified"
                self.preseed_error = self._redact(one_line(f"{type(exc).__name__}: {exc}"))
                self._set(S.PRESEEDING, f"preseed failed, continuing without notes: {self.preseed_error}")
            else:
                self.preseed_text = pre.text or ""
                self.preseed_tokens = int(pre.tokens or 0)
                self.injected = tuple(
                    InjectedNote(h.name, float(h.score), bool(h.priority), h.description or "", str(h.path))
                    for h in pre.hits
                )
        self.rec.emit(Preseeded(self.id, self.injected, self.preseed_tokens, self.preseed_text, self.preseed_error))

    async def _turns(self) -> tuple[str, str]:
        """Model turns for one user message. Returns (kind, detail); kind end | max_tokens |
        turn_cap | context_full."""
        cap = self._cfg.max_turns
        system = prompts.system_prompt(self.preseed_enabled)
        tools = tool_definitions(self.spec.tools_style)
        for _ in range(cap):
            request = self.model.build(system, tools, self.messages)
            try:
                msg = await self.model.call(request, lambda d: self._set(S.STREAMING, d))
            except ContextFull as full:
                return self._context_full(str(full))
            self._check_context(msg)
            content = [block_to_param(b) for b in msg.content]
            self.stop_reason = msg.stop_reason
            text = "".join(b["text"] for b in content if b["type"] == "text")
            if msg.stop_reason == "max_tokens":
                content = [b for b in content if b["type"] != "tool_use"] or [
                    {"type": "text", "text": "(output cut at max_tokens)"}
                ]
                self._add_message("assistant", content)
                self.final_text = text
                detail = f"stopped: max_tokens reached ({self._cfg.max_tokens} output tokens)"
                self._set(self.status, detail)
                return "max_tokens", detail
            if not content:
                content = [{"type": "text", "text": "(empty response)"}]
            self._add_message("assistant", content)
            if text:
                self.final_text = text
            calls = [b for b in content if b["type"] == "tool_use"]
            if msg.stop_reason == "tool_use" and calls:
                await self._run_tools(msg, calls)
                continue
            return "end", ""
        detail = f"turn cap reached ({cap} model turns)"
        self._set(self.status, detail)
        return "turn_cap", detail

    # -- context ----------------------------------------------------------------------------
    def _check_context(self, msg: Any) -> None:
        window = self.acct.context_window
        used = self.acct.context_tokens
        applied = getattr(getattr(msg, "context_management", None), "applied_edits", None)
        if applied:
            cleared = sum(getattr(e, "cleared_input_tokens", 0) or 0 for e in applied)
            self.rec.record("context", level="managed", cleared_input_tokens=cleared)
            self.rec.emit(ContextNotice(self.id, "managed", used, window,
                                        f"the API cleared old tool results ({cleared:,} tokens)"))
        if window and used >= CONTEXT_WARN * window and not self._warned_context:
            self._warned_context = True
            pct = round(100 * used / window)
            self.rec.record("context", level="warn", used=used, window=window)
            self.rec.emit(ContextNotice(self.id, "warn", used, window,
                                        f"context {pct}% full ({used:,} of {window:,} tokens)"))

    def _context_full(self, message: str) -> tuple[str, str]:
        self.context_full = True
        window = self.acct.context_window
        self.rec.record("context", level="full", message=message)
        self.rec.emit(ContextNotice(self.id, "full", self.acct.context_tokens, window, one_line(message)))
        detail = "context full: continue in a fresh session with a summary"
        self._set(self.status, detail)
        return "context_full", detail

    # -- tools ------------------------------------------------------------------------------
    async def _run_tools(self, msg: Any, calls: list[dict]) -> None:
        raw_inputs = {b.id: b.input for b in msg.content if getattr(b, "type", None) == "tool_use"}
        results = []
        touched = False
        for call in calls:
            raw = raw_inputs.get(call["id"], call["input"])
            self._set(S.RUNNING_TOOL, call["name"])
            self.rec.record("tool_call", id=call["id"], name=call["name"], input=raw)
            self.rec.emit(ToolCall(self.id, call["id"], call["name"], raw))
            out, changed = await self._one_tool(call["id"], call["name"], raw)
            touched = touched or changed
            self.rec.record("tool_result", id=call["id"], name=call["name"], content=out.content, is_error=out.is_error)
            self.rec.emit(ToolResult(self.id, call["id"], call["name"], out.content, out.is_error))
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call["id"], "content": out.content}
            if out.is_error:
                block["is_error"] = True
            results.append(block)
        self._add_message("user", results)
        if touched:
            await self._report_changes()

    async def _one_tool(self, tool_use_id: str, name: str, raw: Any) -> tuple[ToolOutcome, bool]:
        """(outcome, may have changed files)."""
        try:
            prepared = await asyncio.to_thread(self.tools.prepare, name, raw)
        except (ToolInputError, PathRefused, EditorError) as exc:
            return ToolOutcome(str(exc), True), False
        except (FileNotFoundError, IsADirectoryError) as exc:
            return ToolOutcome(f"{name}: no such file or a folder: {exc}", True), False
        decision = self.policy.check(prepared.action)
        if decision.verdict == "deny":
            return ToolOutcome(f"Permission denied: {decision.reason}", True), False
        if decision.verdict == "ask":
            allowed, reason = await self._ask(tool_use_id, prepared)
            if not allowed:
                why = f" The user said: {reason}" if reason else ""
                return ToolOutcome(
                    "The user denied this tool use; it was not run (for an edit: the file was NOT "
                    f"changed).{why} Adapt your approach or ask the user how to proceed.", True), False
            self._set(S.RUNNING_TOOL, name)
        out = await self.tools.execute(prepared)
        changed = prepared.action.kind in ("bash", "edit", "create")
        return out, changed

    async def _ask(self, tool_use_id: str, call: PreparedCall) -> tuple[bool, str]:
        """Ask the user (any client) about ``call``; (allowed, reason)."""
        suggestion = str(session_rule_for(call.action))
        request_id = f"{tool_use_id}"
        ask = ApprovalRequested(self.id, request_id, call.name, call.action.kind, call.summary,
                                call.detail or call.summary, suggestion)
        self.rec.record("approval", request_id=request_id, tool=call.name, kind=call.action.kind,
                        summary=call.summary, detail=call.detail)
        if not self.interactive:
            reason = (f"nobody can answer approvals in a headless run (permission mode "
                      f"{self.spec.permission_mode.value}: {self.spec.permission_mode.blurb}); rerun with "
                      "--permission-mode acceptEdits or bypassPermissions, or an allow rule in config.toml")
            self.rec.emit(ask)
            self._resolved(request_id, False, "auto", reason)
            return False, reason
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._answers[request_id] = fut
        self.pending = ask
        self.rec.emit(ask)
        self._release()
        self._set(S.NEEDS_APPROVAL, call.summary)
        try:
            allowed, scope, reason = await fut
        finally:
            self._answers.pop(request_id, None)
            self.pending = None
        if allowed and scope == "session":
            self.policy.add_session_rule(session_rule_for(call.action))
        self._resolved(request_id, allowed, scope, reason)
        await self._acquire()
        return allowed, reason

    def _resolved(self, request_id: str, allowed: bool, scope: str, reason: str) -> None:
        self.rec.record("approval_result", request_id=request_id, allowed=allowed, scope=scope, reason=reason)
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
            stat = await asyncio.to_thread(wt.diff_stat, w)
        except wt.WorktreeError:
            return
        self.rec.emit(WorktreeChanged(self.id, stat.files, stat.added, stat.removed))

    # -- manager-facing -------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"cockpit-session-{self.id}")

    def post(self, text: str | None) -> None:
        """Queue a follow-up (None: end the session ``done`` when it next waits)."""
        self._inbox.put_nowait(text)

    @property
    def is_idle(self) -> bool:
        return self.status.is_final or (self.status == S.WAITING and self._inbox.empty())

    def to_dict(self) -> dict:
        """JSON-ready summary (the headless report; ``cockpit ls --json``)."""
        w = self.spec.worktree
        return {
            "id": self.id,
            "task": self.task,
            "model": self.spec.model,
            "backend": self.spec.backend,
            "workspace": str(self.workspace),
            "cwd": str(self.cwd),
            "placement": self.spec.placement,
            "worktree": None if w is None else {
                "path": w.path, "branch": w.branch, "base_commit": w.base_commit, "base_branch": w.base_branch,
            },
            "permission_mode": self.spec.permission_mode.value,
            "status": self.status.value,
            "stop_reason": self.stop_reason,
            "answer": self.final_text,
            "error": {"kind": self.error.kind, "message": self.error.message} if self.error else None,
            "preseed": self.preseed_enabled,
            "preseed_error": self.preseed_error or None,
            "injected": [
                {"name": n.name, "priority": n.priority, "score": round(n.score, 4)} for n in self.injected
            ],
            "preseed_tokens": self.preseed_tokens,
            "usage": {**self.usage.__dict__, "total": self.usage.total},
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "requests": self.requests,
            "transcript": str(self.transcript_path),
        }


PRESEED_QUERY_CHARS = 4000


def preseed_query(task: str) -> str:
    """The text the notes are searched with: the task, bounded (a 1 MB task pasted from a log
    would otherwise cost one search term per word); head and tail kept."""
    if len(task) <= PRESEED_QUERY_CHARS:
        return task
    half = PRESEED_QUERY_CHARS // 2
    return task[:half] + "\n…\n" + task[-half:]


__all__ = ["Session", "SessionSpec", "SessionFailure", "preseed_query"]
