"""What the TUI knows about one session, built only from ``cockpit.events`` (no Textual).

A ``SessionView`` folds events in as they arrive (cheap, per event); a pane widget renders it
on its flush tick, so a burst of ``TextDelta``/``UsageUpdate`` events costs one repaint.
Units: token counts in tokens, costs in USD (``None`` = the model has no price, shown "n/a").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cockpit import events as ev
from cockpit.events import InjectedNote, SessionStatus, Usage


@dataclass
class Block:
    """One item of a pane's body, in order: ``text`` (assistant Markdown), ``tool`` (a call and,
    once known, its result and the user's answer when it asked), ``user`` (a follow-up),
    ``error`` or ``note`` (what the app says: a review's result, "continued in …")."""

    kind: str
    text: str = ""
    name: str = ""
    tool_use_id: str = ""
    input: Any = None
    result: str | None = None
    is_error: bool = False
    approval: str = ""  # "allowed once" | "allowed for this session" | "denied: <reason>" | …
    version: int = 0  # bumped on every change, so the widget knows what to redraw


def approval_text(allowed: bool, scope: str, reason: str) -> str:
    """One line for an answered ask: ``allowed once`` / ``allowed for this session`` /
    ``allowed by a rule`` / ``denied: <reason>``."""
    if allowed:
        return {"once": "allowed once", "session": "allowed for this session"}.get(scope, f"allowed ({scope})")
    if scope == "auto":
        return f"denied (nobody could answer): {reason}" if reason else "denied (nobody could answer)"
    return f"denied: {reason}" if reason else "denied"


@dataclass
class SessionView:
    session_id: str  # grid-wide: a remote host's ids carry the host (``cockpit.hostids``)
    host: str = ""  # the host the pane's title names ("" with one host in the grid)
    link: str = ""  # "" while its host is connected, else e.g. "reconnecting (…) · retry in 4 s"
    task: str = ""
    model: str = ""
    workspace: str = ""
    transcript_path: str = ""
    preseed_enabled: bool = True
    backend: str = "cockpit"
    permission_mode: str = ""
    placement: str = ""  # "worktree" or "in place: …"
    cwd: str = ""
    worktree: ev.WorktreeRef | None = None
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
    budget_usd: float | None = None  # the session's own cap as last set (None: none known)
    budget_tokens: int | None = None
    requests: int = 0  # finished model responses (live partial figures are not requests)
    error: str = ""
    pending: ev.ApprovalRequested | None = None  # the ask waiting for the user
    changes: ev.WorktreeChanged | None = None  # the last diff stat of its worktree
    reviewed: ev.Reviewed | None = None  # the last review action (merge / keep / discard)
    overlap: dict[str, list[str]] = field(default_factory=dict)  # conflict radar: file → other sessions
    blocks: list[Block] = field(default_factory=list)
    version: int = 0  # bumped on every change
    meta_version: int = 0  # bumped on every change but answer text (status, usage, notes, …)
    epoch: int = 0  # bumped when blocks were removed/replaced: the pane redraws its body whole
    turn_start: int = 0  # index in ``blocks`` where the current request's output starts

    # -- folding events in -------------------------------------------------------------
    def apply(self, event: ev.Event) -> None:
        """Fold one event into the view (O(1) amortised; no rendering)."""
        self.version += 1
        if not isinstance(event, ev.TextDelta):
            self.meta_version += 1
        if isinstance(event, ev.TextDelta):
            last = self.blocks[-1] if self.blocks else None
            if last is None or last.kind != "text" or len(self.blocks) <= self.turn_start:
                last = Block("text")
                self.blocks.append(last)
            last.text += event.text
            last.version += 1
        elif isinstance(event, ev.UsageUpdate):
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
            if event.scope == "session":
                self.budget_usd, self.budget_tokens = event.limit_usd, event.limit_tokens
            self.blocks.append(Block("note", text=f"$ {event.message}"))
        elif isinstance(event, ev.ToolCall):
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
        elif isinstance(event, ev.ApprovalResolved):
            if self.pending is not None and self.pending.request_id == event.request_id:
                self.pending = None
            self._set_approval(event.request_id, approval_text(event.allowed, event.scope, event.reason))
        elif isinstance(event, ev.UserMessage):
            self.blocks.append(Block("user", text=event.text))
            self.context_level = "" if self.context_level == "full" else self.context_level
        elif isinstance(event, ev.MemoryMiss):
            self.misses += (event.name,)
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
            self.placement = event.placement
            self.cwd = event.cwd
            self.worktree = event.worktree
            self.resumed_from = event.resumed_from
            self.continued_from = event.continued_from
            if event.continued_from:
                self.blocks.append(Block("note", text=f"continues session {event.continued_from} "
                                                      "(its conversation summarised in the first message)"))
        elif isinstance(event, ev.WorktreeChanged):
            self.changes = event
        elif isinstance(event, ev.Reviewed):
            if event.action in ("merge", "keep", "discard"):  # check / send-back / pr leave it open
                self.reviewed = event
            mark = "✓" if event.ok else "✗"
            self.blocks.append(Block("note" if event.ok else "error", text=f"{mark} {event.action}: {event.message}"))
        elif isinstance(event, ev.ContextNotice):
            self.context_level = event.level
            self.context_message = event.message
            if event.used:
                self.context_tokens = event.used
        elif isinstance(event, ev.SessionErrorEvent):
            self.error = event.message
            self.blocks.append(Block("error", text=f"{event.kind}: {event.message}"))
        elif isinstance(event, ev.SessionDone):
            self.status = event.status
            self.pending = None
            if event.status is SessionStatus.DONE:
                self.detail = self.detail if self.detail.startswith("continued") else (event.stop_reason or "")

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

    # -- derived facts -----------------------------------------------------------------
    @property
    def in_place(self) -> bool:
        return self.worktree is None

    @property
    def worktree_open(self) -> bool:
        """It has a worktree that no merge / keep / discard has closed yet."""
        return self.worktree is not None and not (self.reviewed is not None and self.reviewed.ok)

    @property
    def has_changes(self) -> bool:
        """Its open worktree holds changes (files changed against the base commit)."""
        return self.worktree_open and self.changes is not None and self.changes.files > 0

    @property
    def context_fraction(self) -> float | None:
        if not self.context_window:
            return None
        return self.context_tokens / self.context_window

    @property
    def context_high(self) -> bool:
        """Context use at or past the 80 % warning (or the context is full)."""
        frac = self.context_fraction
        return self.context_level in ("warn", "full") or (frac is not None and frac >= 0.8)

    @property
    def preseed_share(self) -> float | None:
        """Preseed tokens as a fraction of all input-side tokens sent so far (0–1)."""
        sent = self.usage.input + self.usage.cache_read + self.usage.cache_write
        if not sent or not self.preseed_tokens:
            return None
        return min(1.0, self.preseed_tokens / sent)

    # -- earlier output (a resumed session, or one that ran before this client attached) --
    def add_history(self, records: list[dict], note: str = "") -> None:
        """Put the earlier part of the session, rebuilt from transcript ``records``
        (``cockpit.runtime.transcript`` format), before the blocks events have added."""
        history = blocks_from_records(records, self.task)
        header = records[0] if records and records[0].get("type") == "header" else {}
        if header and not self.preseeded:  # a resumed session: the notes its first message had
            self.notes = tuple(
                InjectedNote(str(n.get("name", "")), float(n.get("score") or 0), bool(n.get("priority")),
                             str(n.get("description", "")), str(n.get("path", "")), str(n.get("kind") or "line"),
                             n.get("probability"), str(n.get("status") or ""), str(n.get("superseded_by") or ""))
                for n in header.get("injected") or [] if isinstance(n, dict))
            self.left_out = tuple(str(x) for x in header.get("left_out") or [])
            self.preseed_tokens = int(header.get("preseed_tokens") or 0)
            self.preseed_text = str(header.get("preseed_text") or "")
            self.preseed_enabled = bool(header.get("preseed_enabled", True))
            self.preseeded = True
        if note:
            history.append(Block("note", text=note))
        if history:
            self.blocks[:0] = history
            self.turn_start += len(history)
            self.epoch += 1
            self.version += 1
            self.meta_version += 1


def blocks_from_records(records: list[dict], task: str = "") -> list[Block]:
    """Pane blocks for a transcript's records: messages (text, tool calls with their results),
    approval answers, errors and review results, in order. The first user message carries the
    env and preseed blocks: it shows as the task alone."""
    out: list[Block] = []
    tools: dict[str, Block] = {}
    first_user = True
    for rec in records:
        kind = rec.get("type")
        if kind == "header":
            task = task or str(rec.get("task", ""))
        elif kind == "message":
            content = rec.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
            role = rec.get("role")
            if role == "user":
                shown_task = False
                for b in blocks:
                    if not isinstance(b, dict):
                        continue
                    if b.get("type") == "tool_result":
                        block = tools.get(str(b.get("tool_use_id", "")))
                        if block is not None:
                            block.result = _result_text(b.get("content"))
                            block.is_error = bool(b.get("is_error"))
                    elif b.get("type") == "text" and b.get("text"):
                        if first_user:
                            if not shown_task:
                                out.append(Block("user", text=task or b["text"]))
                                shown_task = True
                        else:
                            out.append(Block("user", text=b["text"]))
                first_user = False
            else:
                for b in blocks:
                    if not isinstance(b, dict):
                        continue
                    if b.get("type") == "text" and b.get("text"):
                        out.append(Block("text", text=b["text"]))
                    elif b.get("type") == "tool_use":
                        block = Block("tool", name=str(b.get("name", "")), tool_use_id=str(b.get("id", "")),
                                      input=b.get("input"))
                        tools[block.tool_use_id] = block
                        out.append(block)
        elif kind == "approval_result":
            text = approval_text(bool(rec.get("allowed")), str(rec.get("scope", "once")), str(rec.get("reason", "")))
            block = tools.get(str(rec.get("request_id", "")))
            if block is not None:
                block.approval = text
        elif kind == "error":
            out.append(Block("error", text=f"{rec.get('kind', 'error')}: {rec.get('message', '')}"))
        elif kind == "review":
            mark = "✓" if rec.get("ok") else "✗"
            out.append(Block("note", text=f"{mark} {rec.get('action', '')}: {rec.get('message', '')}"))
    return out


def _result_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content)
    return "" if content is None else str(content)


def overlaps(views: Any) -> dict[str, dict[str, list[str]]]:
    """The conflict radar: for each session, each changed file that another session with an open
    worktree (not merged, kept or discarded; live or waiting) has changed too → those sessions'
    ids. ``views``: a list or a dict of :class:`SessionView`."""
    items = list(views.values()) if isinstance(views, dict) else list(views)
    touching: dict[str, list[str]] = {}
    for v in items:
        if v.worktree_open and v.changes is not None and not v.status.is_final:
            for path in v.changes.paths:
                touching.setdefault(path, []).append(v.session_id)
    out: dict[str, dict[str, list[str]]] = {}
    for path, sids in touching.items():
        if len(sids) > 1:
            for sid in sids:
                out.setdefault(sid, {})[path] = [o for o in sids if o != sid]
    return out


def count_by_status(views: list[SessionView]) -> dict[SessionStatus, int]:
    """Sessions per state, in the runtime's state order, omitting zeros."""
    counts: dict[SessionStatus, int] = {}
    for status in SessionStatus:
        n = sum(1 for v in views if v.status is status)
        if n:
            counts[status] = n
    return counts


def totals(views: list[SessionView]) -> tuple[Usage, float | None, bool]:
    """(summed usage in tokens, summed USD of priced sessions or None, any unpriced?)."""
    usage = Usage()
    cost: float | None = None
    unpriced = False
    for v in views:
        usage = usage + v.usage
        if v.cost_usd is None:
            unpriced = True
        else:
            cost = (cost or 0.0) + v.cost_usd
    return usage, cost, unpriced
