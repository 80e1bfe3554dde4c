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
    """One item of a pane's body, in order: ``text`` (assistant Markdown), ``tool``
    (a call and, once known, its result), ``user`` (a follow-up) or ``error``."""

    kind: str
    text: str = ""
    name: str = ""
    tool_use_id: str = ""
    input: Any = None
    result: str | None = None
    is_error: bool = False
    version: int = 0  # bumped on every change, so the widget knows what to redraw


@dataclass
class SessionView:
    session_id: str
    task: str = ""
    model: str = ""
    workspace: str = ""
    transcript_path: str = ""
    preseed_enabled: bool = True
    status: SessionStatus = SessionStatus.STARTING
    detail: str = ""
    notes: tuple[InjectedNote, ...] = ()
    preseeded: bool = False
    preseed_tokens: int = 0
    preseed_text: str = ""
    selector: ev.SelectorInfo | None = None  # the model selector's call, when one was made
    usage: Usage = field(default_factory=Usage)  # running totals, tokens
    cost_usd: float | None = 0.0  # running total, USD
    priced: bool = True
    context_tokens: int = 0
    context_window: int | None = None
    requests: int = 0
    error: str = ""
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
            self.priced = event.total_cost_usd is not None
            self.context_tokens = event.context_tokens
            self.context_window = event.context_window
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
        elif isinstance(event, ev.ToolCall):
            self.blocks.append(
                Block("tool", name=event.name, tool_use_id=event.tool_use_id, input=event.input)
            )
        elif isinstance(event, ev.ToolResult):
            for block in reversed(self.blocks):
                if block.kind == "tool" and block.tool_use_id == event.tool_use_id:
                    block.result = event.content
                    block.is_error = event.is_error
                    block.version += 1
                    break
        elif isinstance(event, ev.Preseeded):
            self.notes = event.notes
            self.preseed_tokens = event.tokens
            self.preseed_text = event.text
            self.selector = event.selector
            self.preseeded = True
        elif isinstance(event, ev.SessionSpawned):
            self.task = event.task
            self.model = event.model
            self.workspace = event.workspace
            self.transcript_path = event.transcript_path
            self.preseed_enabled = event.preseed_enabled
        elif isinstance(event, ev.SessionErrorEvent):
            self.error = event.message
            self.blocks.append(Block("error", text=f"{event.kind}: {event.message}"))
        elif isinstance(event, ev.SessionDone):
            self.status = event.status
            if event.status is SessionStatus.DONE:
                self.detail = event.stop_reason or ""

    def add_user(self, text: str) -> None:
        """A follow-up the user sent (the runtime has no event for it)."""
        self.version += 1
        self.blocks.append(Block("user", text=text))

    def add_history(self, messages: list[dict]) -> None:
        """Put a resumed session's earlier conversation (API messages) before its blocks."""
        history: list[Block] = []
        for i, msg in enumerate(messages):
            content = msg.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
            for b in blocks:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text" and b.get("text"):
                    if msg.get("role") == "user":
                        # the first user message holds the preseed block: show just the task
                        text = self.task if i == 0 and self.task else b["text"]
                        history.append(Block("user", text=text))
                    else:
                        history.append(Block("text", text=b["text"]))
                elif b.get("type") == "tool_use":
                    history.append(Block("tool", name=b.get("name", ""), tool_use_id=b.get("id", ""),
                                         input=b.get("input"), result=""))
        if history:
            self.blocks[:0] = history
            self.turn_start += len(history)
            self.epoch += 1
            self.version += 1

    @property
    def preseed_share(self) -> float | None:
        """Preseed tokens as a fraction of all input-side tokens sent so far (0–1)."""
        sent = self.usage.input + self.usage.cache_read + self.usage.cache_write
        if not sent or not self.preseed_tokens:
            return None
        return min(1.0, self.preseed_tokens / sent)


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
