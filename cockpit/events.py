"""Typed events a ``SessionManager`` publishes; the TUI, headless mode and every other client
consume only these.

Every event is a frozen dataclass with ``session_id`` (time-ordered id, e.g. ``"mf3k2q9x7d"``; see
``cockpit.runtime.ids``). Subscribe with ``SessionManager.subscribe()`` (an async iterator of
these events). No Textual or anthropic import here. :data:`EVENT_TYPES` lists every concrete
event class by name (the wire protocol serialises events with their type name).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class SessionStatus(enum.StrEnum):
    """A session's state, known from the loop itself (never guessed).

    queued → starting → preseeding → streaming ⇄ running tool (⇄ needs approval) → waiting for
    you → … → done | error | killed | interrupted. ``queued`` = spawned past the concurrency cap,
    waiting for a slot; ``needs approval`` = a tool call waits for the user's yes/no;
    ``budget reached`` = a spend cap (the session's or the server's) was reached: it waits until
    the user raises the cap (``cockpit.runtime.budget``); ``interrupted`` = the process that ran
    it died (found on the next start).
    """

    QUEUED = "queued"
    STARTING = "starting"
    PRESEEDING = "preseeding"
    STREAMING = "streaming"
    RUNNING_TOOL = "running tool"
    NEEDS_APPROVAL = "needs approval"
    WAITING = "waiting for you"
    BUDGET_REACHED = "budget reached"
    DONE = "done"
    ERROR = "error"
    KILLED = "killed"
    INTERRUPTED = "interrupted"

    @property
    def is_final(self) -> bool:
        return self in (SessionStatus.DONE, SessionStatus.ERROR, SessionStatus.KILLED, SessionStatus.INTERRUPTED)

    @property
    def is_working(self) -> bool:
        """Not over and not waiting for a follow-up: what "stop every working session" stops
        (queued, starting, preseeding, streaming, running a tool, needing approval, at a cap)."""
        return self is not SessionStatus.WAITING and not self.is_final

    @property
    def needs_user(self) -> bool:
        """The session is blocked on the user (an approval, a follow-up, a higher spend cap)."""
        return self in (SessionStatus.NEEDS_APPROVAL, SessionStatus.WAITING, SessionStatus.BUDGET_REACHED)


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

    def __add__(self, other: Usage) -> Usage:
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
    """One note put in a session's preseed block: ``score`` is its cosine with the task,
    ``probability`` the judge's (None for a priority note given by rule, or an older record);
    ``kind``: ``line`` (given in full) or ``index`` (listed under "may be relevant");
    ``status``/``superseded_by``: its lifecycle (a superseded note is listed, never a line)."""

    name: str
    score: float
    priority: bool
    description: str = ""
    path: str = ""
    kind: str = "line"
    probability: float | None = None
    status: str = ""
    superseded_by: str = ""


@dataclass(frozen=True)
class WorktreeRef:
    """Where a session works: ``path`` (worktree root), ``branch``, ``base_commit`` (full hash),
    ``base_branch`` (None when the repository was on a detached HEAD)."""

    path: str
    branch: str
    base_commit: str
    base_branch: str | None = None


@dataclass(frozen=True)
class Event:
    session_id: str


@dataclass(frozen=True)
class SessionSpawned(Event):
    """``workspace``: the folder the user chose; ``cwd``: where the session works (its worktree,
    or ``workspace`` itself); ``worktree`` None when it runs in place, ``placement`` says why
    ("worktree", "in place: not a git repository", "in place: --no-worktree", …).
    ``resumed_from``: the transcript a resumed session was reopened from ("" otherwise; its
    earlier conversation is in that file); ``continued_from``: the session id a fresh session
    continues (``SessionManager.continue_fresh``; "" otherwise)."""

    task: str
    model: str
    workspace: str
    transcript_path: str
    preseed_enabled: bool
    backend: str = "cockpit"
    permission_mode: str = "default"
    cwd: str = ""
    worktree: WorktreeRef | None = None
    placement: str = ""
    tools: str = "anthropic"
    resumed_from: str = ""
    continued_from: str = ""
    sandbox: str = ""  # bubblewrap | claude-code | "" (unconfined: commands run as the user)
    sandbox_note: str = ""  # what the sandbox allows, or why there is none
    budget: dict = field(default_factory=dict)  # its spend cap as spawned, ``Budget.to_dict()`` ({} = not said)


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
    ``error``: why preseeding failed ("" when it did not) — a failure is never shown as
    "no note qualified"; ``selector``: the model selector's call, when one was configured;
    ``memory``: False when the session has no memory engine (no notes folder), so "no note
    qualified" is not said either."""

    notes: tuple[InjectedNote, ...]
    tokens: int  # estimated tokens of ``text``
    text: str
    error: str = ""
    selector: SelectorInfo | None = None
    memory: bool = True
    left_out: tuple[str, ...] = ()  # "name: why" for candidates that came close but got no line


@dataclass(frozen=True)
class MemoryMiss(Event):
    """The session read a note in full that its preseed did not give as a line (a miss of the
    preseed): ``via`` is ``memory_get``, ``file`` (it opened the note's file) or the MCP tool's
    name; ``in_index``: the block listed it under "may be relevant". Counted in the pane;
    ``cockpit memory misses`` lists them and ``cockpit memory calibrate`` learns from them."""

    name: str
    via: str
    in_index: bool = False
    notes: str = ""  # the notes folder the note is in (``cockpit memory misses`` filters on it)
    task: str = ""
    given: tuple[str, ...] = ()  # the notes the preseed did give as lines (not priority ones)


@dataclass(frozen=True)
class InstructionsLoaded(Event):
    """The instruction files a session works under (CLAUDE.md, AGENTS.md, rule files; paths
    relative to the project root): ``always`` went into its system block, ``path_scoped`` apply
    when the task or a tool touches a matching path, ``on_request`` are listed for the model to
    read when relevant; ``warnings`` name files that were skipped and why."""

    always: tuple[str, ...] = ()
    path_scoped: tuple[str, ...] = ()
    on_request: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleApplied(Event):
    """A path-scoped rule was given to the model: ``where`` is "task" (the task names a matching
    path) or the tool_use id whose result it was attached to."""

    rule: str
    where: str


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
    """One response's ``usage`` and the session's running totals (for a claude-code session: one
    turn's, from its result message).

    ``cost_usd``/``total_cost_usd`` are ``None`` when the model id has no price ("n/a");
    ``cost_source`` says where the USD come from.
    ``context_tokens``: the last request's input+cache tokens; ``context_window``: the model's
    window in tokens (``None`` when unknown).
    """

    usage: Usage
    totals: Usage
    cost_usd: float | None
    total_cost_usd: float | None
    context_tokens: int = 0
    context_window: int | None = None
    partial: bool = False  # True while the response streams (message_start / message_delta figures)
    cost_source: str = "pricing"  # "pricing" (our table) or "claude-code" (its total_cost_usd)
    model: str = ""  # the model that answered ("" in a partial figure)
    stop_reason: str | None = None
    source: str = ""  # "selector": the preseed's model selector call ("" = the session's own request)
    agent_total_usd: float | None = None  # the backend's own running total (Claude Code's total_cost_usd)


@dataclass(frozen=True)
class UserMessage(Event):
    """A follow-up the user sent (from any client)."""

    text: str


@dataclass(frozen=True)
class ApprovalRequested(Event):
    """A tool call waits for the user. ``kind``: bash | edit | create | memory_save, or tool (any
    other tool of a claude-code session, e.g. WebFetch); ``summary``: one line (the command, or
    "str_replace src/app.py"); ``detail``: the command, the edit's unified diff, or the input;
    ``suggestion``: the rule "allow for this session" would add (e.g. ``Bash(pytest *)``)."""

    request_id: str
    tool: str
    kind: str
    summary: str
    detail: str
    suggestion: str = ""


@dataclass(frozen=True)
class ApprovalResolved(Event):
    """The answer: ``allowed``; ``scope`` once | session | rule | auto (nobody could answer);
    ``reason`` (a denial's reason goes back to the model)."""

    request_id: str
    allowed: bool
    scope: str = "once"
    reason: str = ""


@dataclass(frozen=True)
class WorktreeChanged(Event):
    """The session's change against its base commit: files changed, lines added/removed, and the
    changed paths (``paths``, for the conflict radar: two live sessions changing one file)."""

    files: int
    added: int
    removed: int
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reviewed(Event):
    """A review action ended: ``action`` merge | keep | discard; ``ok``; ``message`` one line."""

    action: str
    ok: bool
    message: str


@dataclass(frozen=True)
class ContextNotice(Event):
    """Context use crossed a threshold: ``level`` warn (80 %) | managed (the API's context
    management took over) | full (the turn ended; continue in a fresh session)."""

    level: str
    used: int
    window: int | None
    message: str


@dataclass(frozen=True)
class BudgetNotice(Event):
    """A spend cap (``cockpit.runtime.budget``). ``level``: reached (the session pauses in
    ``budget reached``; a headless one ends ``error``, kind ``budget``) | raised (the cap was set
    anew; the session goes on once it is no longer reached). ``scope``: session | server (the sum
    over every session); ``limit_usd`` / ``limit_tokens``: the cap (None = no cap of that kind);
    ``spent_usd`` / ``spent_tokens``: the spend it is measured against; ``message``: one line."""

    level: str
    scope: str
    spent_usd: float | None
    spent_tokens: int
    limit_usd: float | None = None
    limit_tokens: int | None = None
    message: str = ""


@dataclass(frozen=True)
class SessionErrorEvent(Event):
    message: str  # one line, never contains the API key
    kind: str = "error"  # "rate_limit", "overloaded", "auth", "connection", "interrupted", "api", "internal", "budget"


@dataclass(frozen=True)
class SessionDone(Event):
    """Always a session's last event but a review's. ``usage``/``cost_usd``: its totals (tokens,
    USD; None = unpriced); ``reason``: why it ended so (a kill's reason, the error, "continued in
    …"; "" for a plain done); ``extra``: ``transcript_path``, ``requests`` and the backend's own
    end facts (``claude_session_id``, ``acp_session_id``, …)."""

    status: SessionStatus  # DONE, ERROR, KILLED or INTERRUPTED
    final_text: str = ""
    stop_reason: str | None = None
    extra: dict = field(default_factory=dict)
    usage: Usage | None = None
    cost_usd: float | None = None
    reason: str = ""
    ended_at: str = ""


@dataclass(frozen=True)
class SessionForgotten(Event):
    """A finished session closed by a client (the pane's close): it leaves the server's list and
    every client's grid. Its transcript, worktree and branch stay; its spend stays in the totals:
    ``usage`` and ``cost_usd`` are what it spent (an app that attaches later counts them too)."""

    usage: Usage | None = None
    cost_usd: float | None = None


# -- facts the transcript keeps that a client's view may ignore --------------------------------
@dataclass(frozen=True)
class SessionStarted(Event):
    """The session's settings no other event carries, written once its first message is known
    (after ``Preseeded``): ``started_at`` (ISO-8601 UTC), the ``system_prompt`` as sent,
    ``top_k``, ``interactive``, ``notes`` (the notes folder), ``sandbox_off`` (the user turned the
    sandbox off: a resume stays unconfined), ``budget`` (the cap, ``Budget.to_dict()``) and the
    backend's own facts (``extra``: Cockpit's instruction files, Claude Code's or the ACP agent's
    settings). ``version``: the transcript format (3: every line an event)."""

    started_at: str
    system_prompt: str = ""
    top_k: int | None = None
    interactive: bool = True
    notes: str = ""
    sandbox_off: bool = False
    budget: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    version: int = 3


@dataclass(frozen=True)
class ConversationMessage(Event):
    """A message the conversation holds, as sent to the model (``role`` user | assistant;
    ``content``: API content blocks) — what a resume or a continuation rebuilds the
    conversation from. The pane shows the same facts from ``TextDelta``/``ToolCall``/…"""

    role: str
    content: Any


@dataclass(frozen=True)
class Retrying(Event):
    """A failure the runtime retries (a dropped stream, a rate limit, a refused context-management
    request): ``kind`` and one-line ``message``, like :class:`SessionErrorEvent`'s."""

    kind: str
    message: str


@dataclass(frozen=True)
class WorktreeRemoved(Event):
    """The session's worktree and branch were dropped at its end (``reason``: it changed nothing)."""

    reason: str


@dataclass(frozen=True)
class BackendRecord(Event):
    """A backend's own fact for the transcript (Claude Code's session id and result, an ACP
    agent's plan, thoughts and stderr, …): ``kind`` names it, ``data`` holds it (JSON-ready)."""

    kind: str
    data: dict = field(default_factory=dict)


@dataclass(frozen=True)
class HostStatus(Event):
    """A host's connection, as a client of several hosts sees it (``cockpit.server.hosts``; never
    sent by a server). About no one session: ``session_id`` is "". ``state``: connected |
    replaying (the host is back: its sessions' events from the start follow, and replace what the
    client showed of them; ``connected`` again ends the replay) | reconnecting (the connection
    dropped; the sessions go on there) | unreachable (never reached since the client started).
    ``detail``: why, one line; ``retry_in``: seconds to the next attempt (None: none planned)."""

    host: str
    state: str
    detail: str = ""
    retry_in: float | None = None


def _concrete_events() -> dict[str, type[Event]]:
    out: dict[str, type[Event]] = {}
    stack = list(Event.__subclasses__())
    while stack:
        cls = stack.pop()
        out[cls.__name__] = cls
        stack.extend(cls.__subclasses__())
    return out


EVENT_TYPES: dict[str, type[Event]] = _concrete_events()
