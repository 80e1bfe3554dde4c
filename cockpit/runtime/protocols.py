"""The typed seams between the parts, in one place.

- :class:`MemoryBackend`: what the runtime needs of the memory engine (``memory.MemoryEngine``
  satisfies it, and so does the server's remote engine client).
- :class:`AppEngine`: what the app (and the memory screens) need of an engine besides that: warm
  it, sync and watch the folder, its status, lint advice (``memory.MemoryEngine`` and the remote
  engine client satisfy it).
- :class:`SessionHost`: what a session needs of whoever runs it (the ``SessionManager``): the
  config, prices, the model client, the concurrency slots, the event bus. A session gets this
  narrow view, never the manager itself.
- :class:`SessionLike`: a session as the manager and clients use it, whatever its backend
  (``cockpit.runtime.session.Session``, ``cockpit.runtime.claude_code.ClaudeCodeSession``; both
  build on ``cockpit.runtime.session_base.SessionBase``).
- :class:`Runtime`: what a client (the TUI, ``cockpit run``, the server) needs of a session
  manager. The TUI learns facts only from events; these calls are its only way to act. A spawn
  is one :class:`~cockpit.runtime.spawn.SpawnSpec`; what a spawn, resume or continue returns is a
  :class:`SessionRef` (its id); which host runs it is ``spawn``'s ``host`` keyword, never in the
  spec. ``SessionManager``, ``RemoteRuntime`` and ``MultiHostRuntime`` (a :class:`GridRuntime`)
  are checked against it by mypy (``_as_runtime`` in their modules).
- :class:`TranscriptSource`: where the review screen reads past sessions (this machine's files,
  or a host's server).
- :class:`BatchRuntime`: what ``cockpit run --no-server`` needs besides: wait for every session
  to settle, each one's report row, the totals.

Test fakes implement the same protocols (``tests/tui_fakes.py``), so they cannot drift.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cockpit.events import ApprovalRequested, Event, InjectedNote, SessionErrorEvent, SessionStatus, Usage

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.events import Reviewed
    from cockpit.runtime.budget import BudgetHit
    from cockpit.runtime.config import RuntimeConfig
    from cockpit.runtime.pricing import PricingTable
    from cockpit.runtime.ship import PullRequestDraft
    from cockpit.runtime.spawn import SpawnSpec
    from cockpit.runtime.worktree import Diff


@runtime_checkable
class MemoryBackend(Protocol):
    """The memory engine as the runtime uses it (all calls block: run them in a thread)."""

    @property
    def ready(self) -> bool: ...

    def wait_ready(self, timeout: float | None = None) -> bool: ...

    def build_preseed(self, query: str, top_k: int = 5) -> Any:
        """A ``memory.Preseed``: ``.text`` (the block, "" when none), ``.hits``, ``.tokens``."""
        ...

    def search(self, query: str, top_k: int = 5) -> list[Any]:
        """``memory.Hit``s: name, description, snippet, priority, score, path."""
        ...

    def get(self, name: str) -> dict | None:
        """The whole note named ``name`` (``name, description, body, priority, path``…), or None."""
        ...

    def save(self, name: str, description: str, body: str, priority: bool = False) -> Path:
        """Raises FileExistsError / ValueError when refused."""
        ...


@runtime_checkable
class AppEngine(MemoryBackend, Protocol):
    """The memory engine as the app uses it (blocking calls: thread workers only)."""

    def start_warmup(self) -> None: ...

    def sync(self, progress: Any = None) -> Any:
        """A ``memory.SyncReport``: added, updated, removed, changed, skipped, warnings."""
        ...

    def status(self) -> Any:
        """A ``memory.EngineStatus``: model state, notes, last sync, warnings, watch, watch_state."""
        ...

    def lint(self) -> list[Any]: ...

    def watch(self, stop: Any, on_sync: Any = None, on_status: Any = None) -> None:
        """Sync, then keep the index in step until ``stop`` (a ``threading.Event``) is set;
        ``on_status(state, detail)`` on each change of the watcher's state."""
        ...

    def close(self) -> None: ...


class SessionHost(Protocol):
    """What a session needs of the manager that runs it."""

    config: RuntimeConfig
    pricing: PricingTable
    engine: MemoryBackend | None
    slots: asyncio.Semaphore

    def publish(self, event: Event) -> None: ...

    def client(self, config: RuntimeConfig | None = None) -> Any:
        """The shared ``anthropic.AsyncAnthropic`` for ``config``'s key and base URL (one per
        pair, connection pools shared); None = the host's own config."""
        ...

    def add_usage(self, usage: Usage, cost_usd: float | None) -> None:
        """Count one finished response in the totals (tokens, USD or None when unpriced)."""
        ...

    def totals(self) -> tuple[Usage, float | None]:
        """Summed usage of every session (tokens), and USD (None when nothing was priced)."""
        ...

    def server_budget_hit(self) -> BudgetHit | None:
        """The server's spend cap when the sum over every session has reached it, else None."""
        ...

    @property
    def context_management_supported(self) -> bool | None:
        """None = not tried yet; False once the endpoint refused the beta."""
        ...

    def set_context_management_supported(self, value: bool) -> None: ...


class SessionLike(Protocol):
    """One session, any backend: what the manager and every client read and call.

    ``spec`` is a ``SessionSpec`` (task, model, workspace, cwd, worktree, placement, permission
    mode, backend). ``usage`` in tokens; ``cost_usd`` in USD (None: unpriced); ``cost_source``
    ``pricing`` (our table) | ``claude-code`` (Claude Code's own ``total_cost_usd``)."""

    id: str
    spec: Any
    status: SessionStatus
    detail: str
    injected: tuple[InjectedNote, ...]
    preseed_text: str
    preseed_tokens: int
    preseed_error: str
    final_text: str
    stop_reason: str | None
    error: SessionErrorEvent | None
    pending: ApprovalRequested | None
    messages: list[dict]
    transcript_path: Path
    continued_in: str | None
    worktree_removed: bool
    context_full: bool
    cost_source: str

    @property
    def task(self) -> str: ...

    @property
    def worktree(self) -> Any: ...

    @property
    def usage(self) -> Usage: ...

    @property
    def cost_usd(self) -> float | None: ...

    @property
    def requests(self) -> int: ...

    @property
    def is_idle(self) -> bool: ...

    def start(self) -> None: ...

    def post(self, text: str | None) -> None: ...

    def answer(self, request_id: str, allow: bool, scope: str = "once", reason: str = "") -> None: ...

    def to_dict(self) -> dict: ...


class Subscription(Protocol):
    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def __anext__(self) -> Event: ...

    def close(self) -> None: ...


class SessionRef(Protocol):
    """A session a runtime started (spawn, resume, continue): at least its id. The facts about it
    come as events."""

    @property
    def id(self) -> str: ...


class Runtime(Protocol):
    """A session manager as clients use it: ``cockpit.runtime.manager.SessionManager`` in the
    client's own process, ``cockpit.server.remote.RemoteRuntime`` over the server. ``config``:
    the settings sessions spawned here use; ``outlives_app``: the sessions go on when the app
    quits (a server); ``backends``: the agents ``spawn`` can run."""

    config: RuntimeConfig
    outlives_app: bool

    @property
    def backends(self) -> tuple[str, ...]: ...

    async def stop_all(self) -> None:
        """Kill every session still working; finished and waiting ones are left for review."""

    async def spawn(self, spec: SpawnSpec, *, host: str | None = None) -> SessionRef:
        """Start the session ``spec`` describes, on ``host`` (a :class:`GridRuntime`'s host; None:
        the runtime's own or default one — a runtime of one host refuses any other value).
        Raises ValueError (one line) when it is refused."""
        ...

    async def send(self, session_id: str, text: str) -> None: ...

    async def kill(self, session_id: str, reason: str = "") -> None: ...

    async def stop(self, session_id: str, reason: str = "") -> None:
        """End a session: one waiting for you (its work finished) ends ``done``; one still working
        is killed with ``reason``."""

    async def answer(self, session_id: str, request_id: str | None, allow: bool, scope: str = "once",
                     reason: str = "") -> None:
        """Answer the approval ``request_id`` (None: the one pending)."""

    async def review(self, session_id: str, action: str) -> Reviewed: ...

    async def diff(self, session_id: str) -> Diff: ...

    async def draft_pull_request(self, session_id: str) -> PullRequestDraft:
        """The pull request's text drafted from the session; nothing pushed."""
        ...

    async def pull_request(self, session_id: str, title: str = "", body: str = "") -> Reviewed:
        """Push the branch and open a pull request (``title``/``body`` empty: drafted)."""
        ...

    async def resume(self, transcript_path: str | Path, *, interactive: bool | None = None,
                     host: str | None = None) -> SessionRef:
        """Reopen the past session of ``transcript_path`` (a file of ``host``: a :class:`GridRuntime`'s
        host, None the runtime's own or default one — as ``spawn``'s ``host``)."""
        ...

    async def continue_fresh(self, session_id: str) -> SessionRef: ...

    async def forget(self, session_id: str) -> None:
        """Drop a finished session from every client's list (``SessionForgotten``)."""
        ...

    async def quiesce(self, session_id: str) -> None:
        """Before you work in a session's worktree yourself (a shell): nothing of it runs there any
        more — its shell and the jobs it left are ended (it lives on: the next command starts a new
        shell). Raises ValueError while it works."""
        ...

    async def set_budget(self, session_id: str | None, usd: float | None = None, tokens: int | None = None,
                         clear: bool = False) -> dict:
        """Set (raise) a session's spend cap, or the server's when ``session_id`` is None; a
        session paused in ``budget reached`` goes on once no cap is reached. Returns the cap and
        the spend (see ``SessionManager.budget_info``)."""
        ...

    def subscribe(self) -> Subscription: ...

    def snapshot(self) -> list[Event]:
        """Events that rebuild every live session's view (for a client attaching late)."""
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class GridRuntime(Runtime, Protocol):
    """A ``Runtime`` over several hosts (``cockpit.server.hosts.MultiHostRuntime``): what the
    spawn dialog asks besides (the app narrows to it with ``isinstance``, a typed check, never a
    ``getattr`` probe). Its ``spawn`` routes by ``host=NAME`` (None: :attr:`default_host`)."""

    default_host: str

    @property
    def hosts(self) -> tuple[Any, ...]:
        """``cockpit.server.hosts.Host``: name, workspace and notes there."""
        ...

    def host_state(self, name: str) -> str: ...

    def backends_of(self, host: str) -> tuple[str, ...]: ...

    def engine_of(self, host: str) -> Any:
        """That host's server's engine for its notes (blocking calls, from threads), or None."""
        ...

    def shell_opener(self, host: str) -> Callable[[str, str | None], int] | None:
        """Opens a shell in a folder of ``host`` (or ``$EDITOR`` on a file there), blocking, with
        this terminal's stdio; None when that host's folders are this machine's."""
        ...

    def transcripts_of(self, host: str) -> TranscriptSource:
        """The past sessions of ``host``'s server (call on the app's loop; read from threads)."""
        ...


class TranscriptSource(Protocol):
    """Where the review screen finds past sessions (blocking calls, from worker threads): this
    machine's transcript files (``cockpit.runtime.transcript.FileTranscripts``) or a host's
    server (``cockpit.server.remote.HostTranscripts``). ``host``: "" for this machine."""

    host: str

    def listing(self) -> list[Any]:
        """``cockpit.runtime.transcript.TranscriptInfo`` of every transcript, newest first."""
        ...

    def read(self, path: Path, warnings: list[str]) -> list[Event]:
        """The events of the transcript ``path`` (damaged lines skipped, said in ``warnings``).
        Raises OSError / ValueError (``ServerError`` for a host) when it cannot be read."""
        ...

    def stamp(self, path: Path) -> float:
        """Changes when the transcript grows (a search's cache key). May raise OSError."""
        ...


class BatchRuntime(Protocol):
    """A session manager as the in-process headless runner uses it (``SessionManager``)."""

    async def spawn(self, spec: SpawnSpec) -> SessionRef: ...

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Until every session is final or waits for the user; False on timeout."""
        ...

    async def describe(self, session_id: str) -> dict:
        """The session's row of the ``cockpit run --json`` report (``to_dict()`` + ``diff``)."""
        ...

    def totals(self) -> tuple[Usage, float | None]:
        """Summed usage in tokens, and USD (None when nothing was priced)."""
        ...

    async def aclose(self) -> None: ...
