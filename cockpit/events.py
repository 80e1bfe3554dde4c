"""Typed events a ``SessionManager`` publishes; the TUI and headless mode consume only these.

Every event is a frozen dataclass with ``session_id`` (short hex id, e.g. ``"a1b2c3"``).
Subscribe with ``SessionManager.subscribe()`` (an async iterator of these events).
No Textual or anthropic import here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class SessionStatus(str, enum.Enum):
    """A session's state, known from the loop itself (never guessed).

    queued → starting → preseeding → streaming ⇄ running tool → waiting for you → … →
    done | error | killed.  ``queued`` = spawned past the concurrency cap, waiting for a slot.
    """

    QUEUED = "queued"
    STARTING = "starting"
    PRESEEDING = "preseeding"
    STREAMING = "streaming"
    RUNNING_TOOL = "running tool"
    WAITING = "waiting for you"
    DONE = "done"
    ERROR = "error"
    KILLED = "killed"

    @property
    def is_final(self) -> bool:
        return self in (SessionStatus.DONE, SessionStatus.ERROR, SessionStatus.KILLED)


@dataclass(frozen=True)
class Usage:
    """Token counts as the Messages API reports them in ``usage`` (all in tokens).

    ``cache_write`` = ``cache_creation_input_tokens``; ``cache_read`` = ``cache_read_input_tokens``.
    ``input`` excludes both (as in the API).
    """

    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_write + other.cache_write,
            self.cache_read + other.cache_read,
        )

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read


@dataclass(frozen=True)
class InjectedNote:
    """One note put in a session's preseed block: ``score`` is the engine's fused score."""

    name: str
    score: float
    priority: bool
    description: str = ""
    path: str = ""


@dataclass(frozen=True)
class Event:
    session_id: str


@dataclass(frozen=True)
class SessionSpawned(Event):
    task: str
    model: str
    workspace: str
    transcript_path: str
    preseed_enabled: bool


@dataclass(frozen=True)
class StatusChanged(Event):
    status: SessionStatus
    detail: str = ""  # e.g. "waiting for model warm-up", "retry 2/3", "turn cap reached"


@dataclass(frozen=True)
class SelectorInfo:
    """The model selector's part in a preseed (``preseed.selector = "model"``).

    ``usage``: tokens of its call (also in the session's totals); ``cost_usd``: USD, None when
    ``model`` has no price; ``latency_ms``: wall time of the call; ``chosen``: notes it chose
    (0 = "none apply": no block), None when it fell back to the embedded selection, ``error``
    saying why (one line)."""

    model: str
    usage: Usage
    cost_usd: float | None
    latency_ms: float
    chosen: int | None
    error: str | None = None


@dataclass(frozen=True)
class Preseeded(Event):
    """The block put into the first user message (``text`` exactly as sent; "" when none).
    ``selector``: the model selector's call, when one was configured."""

    notes: tuple[InjectedNote, ...]
    tokens: int  # estimated tokens of ``text``
    text: str
    selector: SelectorInfo | None = None


@dataclass(frozen=True)
class TextDelta(Event):
    text: str


@dataclass(frozen=True)
class ToolCall(Event):
    tool_use_id: str
    name: str
    input: Any


@dataclass(frozen=True)
class ToolResult(Event):
    tool_use_id: str
    name: str
    content: str
    is_error: bool


@dataclass(frozen=True)
class UsageUpdate(Event):
    """One response's ``usage`` and the session's running totals.

    ``cost_usd``/``total_cost_usd`` are ``None`` when the model id has no price ("n/a").
    ``context_tokens``: the last request's input+cache tokens; ``context_window``: the model's
    window in tokens (``None`` when unknown).
    """

    usage: Usage
    totals: Usage
    cost_usd: float | None
    total_cost_usd: float | None
    context_tokens: int = 0
    context_window: int | None = None


@dataclass(frozen=True)
class SessionErrorEvent(Event):
    message: str  # one line, never contains the API key
    kind: str = "error"  # "rate_limit", "overloaded", "auth", "connection", "interrupted", "api", "internal"


@dataclass(frozen=True)
class SessionDone(Event):
    status: SessionStatus  # DONE, ERROR or KILLED
    final_text: str = ""
    stop_reason: str | None = None
    extra: dict = field(default_factory=dict)
