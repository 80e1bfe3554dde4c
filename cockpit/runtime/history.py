"""One history: the events of a session folded into everything its readers need (no Textual).

The live pane (``cockpit.tui.model.SessionView`` is a :class:`SessionHistory`), an app that
attaches (the server sends each session's events so far, then live ones: one sequence), a
resume and a continue-fresh (the conversation, the settings), a session a dead server left
interrupted, the review screen and reports all fold the same events — from the bus or from a
transcript (:func:`cockpit.runtime.transcript.read_events`) — through :meth:`SessionHistory.apply`.
Units: token counts in tokens, costs in USD (``None`` = the model has no price).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cockpit import events as ev
from cockpit.events import InjectedNote, SessionStatus, Usage


class Block:
    """One item of a pane's body, in order: ``text`` (assistant Markdown), ``tool`` (a call and,
    once known, its result and the user's answer when it asked), ``user`` (a follow-up),
    ``error`` or ``note`` (what the app says: a review's result, "continued in …").

    Streamed text is kept as its pieces and joined when ``text`` is read (:meth:`add_text`), so
    folding a long answer delta by delta costs its length, not its length squared."""

    __slots__ = ("kind", "_text", "_more", "name", "tool_use_id", "input", "result", "is_error", "approval",
                 "version")

    def __init__(self, kind: str, text: str = "", name: str = "", tool_use_id: str = "", input: Any = None,
                 result: str | None = None, is_error: bool = False, approval: str = "", version: int = 0):
        self.kind = kind
        self._text = text
        self._more: list[str] = []
        self.name = name
        self.tool_use_id = tool_use_id
        self.input = input
        self.result = result
        self.is_error = is_error
        self.approval = approval  # "allowed once" | "allowed for this session" | "denied: <reason>" | …
        self.version = version  # bumped on every change, so the widget knows what to redraw

    @property
    def text(self) -> str:
        if self._more:
            self._text = self._text + "".join(self._more)
            self._more.clear()
        return self._text

    @text.setter
    def text(self, value: str) -> None:
        self._text, self._more = value, []

    def add_text(self, more: str) -> None:
        self._more.append(more)

    def __repr__(self) -> str:
        return f"Block({self.kind!r}, text={self.text!r}, name={self.name!r}, version={self.version})"


# the line between a sandboxed command's failed run and its re-run outside, which the user allowed
# (``Session._blocked``): the re-run's output is the outcome that counts
RAN_OUTSIDE = "[run again outside the sandbox, allowed by the user:]"


def outcome_part(content: str) -> tuple[str, bool]:
    """(the part of a tool result that counts, whether it is a re-run outside the sandbox): the
    re-run's output when there was one (the failed sandboxed run stays in the full result)."""
    head, mark, tail = content.rpartition("\n" + RAN_OUTSIDE + "\n")
    return (tail, True) if mark else (content, False)


def approval_text(allowed: bool, scope: str, reason: str) -> str:
    """One line for an answered ask: ``allowed once`` / ``allowed for this session`` /
    ``allowed by a rule`` / ``denied: <reason>``."""
    if allowed:
        return {"once": "allowed once", "session": "allowed for this session"}.get(scope, f"allowed ({scope})")
    if scope == "auto":
        return f"denied (nobody could answer): {reason}" if reason else "denied (nobody could answer)"
    return f"denied: {reason}" if reason else "denied"


def reached_caps(notice: ev.BudgetNotice) -> tuple[str, ...]:
    """Which limits of the cap a ``reached`` notice names were reached: ``"usd"``, ``"tokens"``
    (a cap of both can be reached by one while the other is not)."""
    caps = []
    if notice.limit_usd is not None and notice.spent_usd is not None and notice.spent_usd >= notice.limit_usd:
        caps.append("usd")
    if notice.limit_tokens is not None and notice.spent_tokens >= notice.limit_tokens:
        caps.append("tokens")
    return tuple(caps)


@dataclass
class SessionHistory:
    session_id: str
    task: str = ""
    model: str = ""
    workspace: str = ""
    transcript_path: str = ""
    preseed_enabled: bool = True
    backend: str = "cockpit"
    permission_mode: str = ""
    tools: str = "anthropic"  # the tool schemas' style (anthropic | portable)
    placement: str = ""  # "worktree" or "in place: …"
    cwd: str = ""
    worktree: ev.WorktreeRef | None = None
    worktree_removed: str = ""  # why its worktree was dropped at the end (e.g. "no changes"); "" while it is there
    resumed_from: str = ""
    continued_from: str = ""
    sandbox: str = ""  # bubblewrap | claude-code | "" (unconfined)
    sandbox_note: str = ""
    status: SessionStatus = SessionStatus.STARTING
    detail: str = ""
    notes: tuple[InjectedNote, ...] = ()
    left_out: tuple[str, ...] = ()  # "name: why" for candidates that came close but got no line
    misses: tuple[str, ...] = ()  # notes the session read in full that were not given as a line
    preseeded: bool = False
    preseed_tokens: int = 0
    preseed_text: str = ""
    preseed_error: str = ""
    memory: bool = True  # False: the session had no memory engine (no notes folder)
    selector: ev.SelectorInfo | None = None  # the model selector's call, when one was made
    usage: Usage = field(default_factory=Usage)  # running totals, tokens (live while streaming)
    cost_usd: float | None = 0.0  # running total, USD (live while streaming)
    cost_source: str = "pricing"  # whose figure: "pricing" (our table), "claude-code", "acp:NAME" (the agent's)
    priced: bool = True
    context_tokens: int = 0
    context_window: int | None = None
    context_level: str = ""  # "" | "warn" | "managed" | "full" (the last ContextNotice)
    context_message: str = ""
    budget_scope: str = ""  # "" | "session" | "server": the cap the session last reached
    budget_caps: tuple[str, ...] = ()  # which of that cap's limits were reached: "usd", "tokens"
    budget_usd: float | None = None  # the session's own cap as last set (None: none known)
    budget_tokens: int | None = None
    requests: int = 0  # finished model responses (live partial figures are not requests)
    error: str = ""
    error_kind: str = ""  # the last SessionErrorEvent's kind ("auth", "budget", …)
    denied: list[str] = field(default_factory=list)  # asks denied for want of anyone to answer (scope "auto")
    pending: ev.ApprovalRequested | None = None  # the ask waiting for the user
    changes: ev.WorktreeChanged | None = None  # the last diff stat of its worktree
    reviewed: ev.Reviewed | None = None  # the last review action (merge / keep / discard)
    pushed: bool = False  # a pull request's push went out (a discard leaves that copy on the remote)
    overlap: dict[str, list[str]] = field(default_factory=dict)  # conflict radar: file → other sessions
    blocks: list[Block] = field(default_factory=list)
    version: int = 0  # bumped on every change
    meta_version: int = 0  # bumped on every change but answer text (status, usage, notes, …)
    epoch: int = 0  # bumped when blocks were removed/replaced: the pane redraws its body whole
    turn_start: int = 0  # index in ``blocks`` where the current request's output starts
    # facts the pane does not show; resume, continue-fresh, review and reports read them
    started: ev.SessionStarted | None = None  # the transcript's settings (system prompt, top_k, …)
    messages: list[dict] = field(default_factory=list)  # the conversation, as recorded
    final_text: str = ""  # the last answer (the end's, else the last assistant text)
    stop_reason: str | None = None
    ended: ev.SessionDone | None = None
    miss_events: list[ev.MemoryMiss] = field(default_factory=list)
    backend_records: dict[str, dict] = field(default_factory=dict)  # the last BackendRecord of each kind
    agent_session_ids: list[str] = field(default_factory=list)  # the agent's own session ids its records named
    agent_total_usd: float | None = None  # the backend's own running total (Claude Code's)
    asked: dict[str, str] = field(default_factory=dict, repr=False)  # request id → the ask's summary

    # -- folding events in -------------------------------------------------------------
    def apply(self, event: ev.Event) -> None:
        """Fold one event in (O(1) amortised; no rendering)."""
        self.version += 1
        if not isinstance(event, ev.TextDelta):
            self.meta_version += 1
        if isinstance(event, ev.TextDelta):
            last = self.blocks[-1] if self.blocks else None
            if last is None or last.kind != "text" or len(self.blocks) <= self.turn_start:
                last = Block("text")
                self.blocks.append(last)
            last.add_text(event.text)
            last.version += 1
        elif isinstance(event, ev.UsageUpdate):
            if event.agent_total_usd is not None:
                self.agent_total_usd = event.agent_total_usd
            self.usage = event.totals
            self.cost_usd = event.total_cost_usd
            self.cost_source = event.cost_source
            self.priced = event.total_cost_usd is not None
            if event.context_tokens or not event.partial:
                self.context_tokens = event.context_tokens
            self.context_window = event.context_window
            if not event.partial and event.usage.total:
                self.requests += 1
        elif isinstance(event, ev.StatusChanged):
            if event.detail.startswith("retry"):
                # the runtime re-sends an interrupted request: drop its partial text
                if len(self.blocks) > self.turn_start:
                    del self.blocks[self.turn_start :]
                    self.epoch += 1
            elif event.status is SessionStatus.STREAMING and self.status is not SessionStatus.STREAMING:
                self.turn_start = len(self.blocks)
            self.status = event.status
            self.detail = event.detail
            if event.status.is_final:
                self.pending = None
        elif isinstance(event, ev.BudgetNotice):
            if event.level == "reached":
                self.budget_scope = event.scope
                self.budget_caps = reached_caps(event)
            if event.scope == "session":
                self.budget_usd, self.budget_tokens = event.limit_usd, event.limit_tokens
            self.blocks.append(Block("note", text=f"$ {event.message}"))
        elif isinstance(event, ev.ToolCall):
            block = self._tool_block(event.tool_use_id)
            if block is not None and block.result is None:  # the same call, its title or input now known
                block.name, block.input = event.name, event.input
                block.version += 1
            else:
                self.blocks.append(
                    Block("tool", name=event.name, tool_use_id=event.tool_use_id, input=event.input)
                )
        elif isinstance(event, ev.ToolResult):
            block = self._tool_block(event.tool_use_id)
            if block is not None:
                block.result = event.content
                block.is_error = event.is_error
                block.version += 1
        elif isinstance(event, ev.ApprovalRequested):
            self.pending = event
            self.asked[event.request_id] = event.summary
        elif isinstance(event, ev.ApprovalResolved):
            if not event.allowed and event.scope == "auto":
                self.denied.append(self.asked.get(event.request_id, ""))
            if self.pending is not None and self.pending.request_id == event.request_id:
                self.pending = None
            self._set_approval(event.request_id, approval_text(event.allowed, event.scope, event.reason))
        elif isinstance(event, ev.UserMessage):
            self.blocks.append(Block("user", text=event.text))
            self.context_level = "" if self.context_level == "full" else self.context_level
        elif isinstance(event, ev.MemoryMiss):
            self.misses += (event.name,)
            self.miss_events.append(event)
        elif isinstance(event, ev.Preseeded):
            self.notes = event.notes
            self.left_out = event.left_out
            self.preseed_tokens = event.tokens
            self.preseed_text = event.text
            self.preseed_error = event.error
            self.memory = event.memory
            self.selector = event.selector
            self.preseeded = True
        elif isinstance(event, ev.SessionSpawned):
            self.sandbox, self.sandbox_note = event.sandbox, event.sandbox_note
            self.task = event.task
            self.model = event.model
            self.workspace = event.workspace
            self.transcript_path = event.transcript_path
            self.preseed_enabled = event.preseed_enabled
            self.backend = event.backend
            if self.cost_source == "pricing" and event.backend != "cockpit":  # before any usage arrives
                self.cost_source = event.backend
            self.permission_mode = event.permission_mode
            self.tools = event.tools
            self.placement = event.placement
            self.cwd = event.cwd
            self.worktree = event.worktree
            self.resumed_from = event.resumed_from
            self.continued_from = event.continued_from
            self._set_budget(event.budget)
            if event.continued_from:
                self.blocks.append(Block("note", text=f"continues session {event.continued_from} "
                                                      "(its conversation summarised in the first message)"))
        elif isinstance(event, ev.WorktreeChanged):
            self.changes = event
        elif isinstance(event, ev.WorktreeRemoved):
            self.worktree_removed = event.reason or "removed"
        elif isinstance(event, ev.Reviewed):
            if event.action in ("merge", "keep", "discard"):  # check / send-back / pr leave it open
                self.reviewed = event
            if event.action == "pr" and (event.ok or event.message.startswith("pushed")):  # (gh may fail after)
                self.pushed = True
            if event.action == "check-confirm":  # a question to the user (run this command?), not a failure
                self.blocks.append(Block("note", text=f"check: the command to confirm is {event.message}"))
            elif event.ok:
                self.blocks.append(Block("note", text=f"✓ {event.action}: {event.message}"))
            else:  # an error block: its reader marks it ✗
                self.blocks.append(Block("error", text=f"{event.action}: {event.message}"))
        elif isinstance(event, ev.ContextNotice):
            self.context_level = event.level
            self.context_message = event.message
            if event.used:
                self.context_tokens = event.used
        elif isinstance(event, ev.ConversationMessage):
            self.messages.append({"role": event.role, "content": event.content})
            if event.role == "assistant" and isinstance(event.content, list):
                said = "".join(b.get("text", "") for b in event.content if isinstance(b, dict)
                               and b.get("type") == "text")
                if said.strip():
                    self.final_text = said
        elif isinstance(event, ev.SessionStarted):
            self.started = event
            self._set_budget(event.budget)
        elif isinstance(event, ev.BackendRecord):
            self.backend_records[event.kind] = event.data
            named = event.data.get("session_id")
            if isinstance(named, str) and named and named not in self.agent_session_ids:
                self.agent_session_ids.append(named)
        elif isinstance(event, ev.SessionErrorEvent):
            self.error, self.error_kind = event.message, event.kind
            self.blocks.append(Block("error", text=f"{event.kind}: {event.message}"))
        elif isinstance(event, ev.SessionDone):
            self.status = event.status
            self.pending = None
            self.ended = event
            for block in self.blocks:  # a call it never saw the end of (its server died) is not running
                if block.kind == "tool" and block.result is None:
                    block.result = f"(no result: the session ended {event.status.value})"
                    block.version += 1
            self.stop_reason = event.stop_reason
            if event.final_text:
                self.final_text = event.final_text
            if event.usage is not None:
                self.usage, self.cost_usd = event.usage, event.cost_usd
            requests = event.extra.get("requests")
            if isinstance(requests, int) and not isinstance(requests, bool):
                self.requests = requests  # the session's own count (failed requests too)
            if event.status is SessionStatus.DONE:
                self.detail = self.detail if self.detail.startswith("continued") else (event.stop_reason or "")

    def _set_budget(self, budget: dict) -> None:
        """The session's cap as its spawn or start said (``Budget.to_dict()``; {}: not said)."""
        if budget:
            usd, tokens = budget.get("usd"), budget.get("tokens")
            self.budget_usd = float(usd) if isinstance(usd, (int, float)) and not isinstance(usd, bool) else None
            self.budget_tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None

    def _tool_block(self, tool_use_id: str) -> Block | None:
        for block in reversed(self.blocks):
            if block.kind == "tool" and block.tool_use_id == tool_use_id:
                return block
        return None

    def _set_approval(self, request_id: str, text: str) -> None:
        block = self._tool_block(request_id)
        if block is None:
            self.blocks.append(Block("note", text=f"approval {text}"))
        else:
            block.approval = text
            block.version += 1

    def add_note(self, text: str) -> None:
        """A line from the app itself (not from the runtime)."""
        self.version += 1
        self.meta_version += 1
        self.blocks.append(Block("note", text=text))


    # -- what a resume and a report read --------------------------------------------------
    @property
    def answer(self) -> str:
        """The session's answer: what its end recorded (once ended), else its last assistant text."""
        return self.ended.final_text if self.ended is not None else self.final_text

    @property
    def started_at(self) -> str:
        return self.started.started_at if self.started is not None else ""

    def conversation(self) -> list[dict]:
        """The conversation (``[{role, content}]``) made valid for a new request: a trailing
        assistant message whose tool calls have no results (killed mid-tool) is dropped."""
        msgs = [dict(m) for m in self.messages if m["role"] in ("user", "assistant")
                and isinstance(m["content"], (str, list))]
        if msgs and msgs[-1]["role"] == "assistant" and isinstance(msgs[-1]["content"], list):
            if any(isinstance(b, dict) and b.get("type") == "tool_use" for b in msgs[-1]["content"]):
                msgs.pop()
        return msgs

    def earlier_blocks(self) -> list[Block]:
        """The session's output as a predecessor's (a resumed session shows it first): its task
        as the user's first message, then its blocks."""
        return ([Block("user", text=self.task)] if self.task else []) + list(self.blocks)


def reviewed_dict(event: ev.Reviewed | None) -> dict | None:
    """The last review action as a session row gives it (``cockpit ls --json``, ``get``)."""
    if event is None:
        return None
    return {"action": event.action, "ok": event.ok, "message": event.message}


def fold(events: Iterable[ev.Event], session_id: str = "") -> SessionHistory:
    """A session's events folded (the id is the first event's when not given)."""
    history: SessionHistory | None = None if not session_id else SessionHistory(session_id)
    for event in events:
        if history is None:
            history = SessionHistory(event.session_id)
        history.apply(event)
    return history if history is not None else SessionHistory(session_id)
