"""SessionManager: spawn, kill, follow up, list, subscribe — the runtime API of the TUI and headless mode.

One shared memory engine, one shared ``AsyncAnthropic`` client (connection pool), a concurrency
cap (``RuntimeConfig.concurrency``, default 9): sessions past it wait in ``queued``. A session
holds a slot while it is starting/preseeding/streaming/running tools and gives it back while
``waiting for you`` (the cap limits concurrent model work, not open panes).

Events (``cockpit.events``), per session in this order: ``SessionSpawned``, ``StatusChanged``…,
``Preseeded`` (when preseed is on), then any of ``TextDelta``/``ToolCall``/``ToolResult``/
``UsageUpdate``/``StatusChanged``, ``SessionErrorEvent`` (when it fails), then ``StatusChanged``
(final) and ``SessionDone`` — always last, also for kills. ``subscribe()`` registers at once (no
event published after the call is missed) and ends when the manager is closed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import AsyncIterator

from cockpit.events import Event, SessionSpawned, Usage
from cockpit.runtime.config import RuntimeConfig
from cockpit.runtime.pricing import PricingTable, load_pricing
from cockpit.runtime.session import Session, new_session_id
from cockpit.runtime.transcript import load_messages, new_transcript_path, read_transcript

_CLOSE = object()


class SessionClosed(RuntimeError):
    """A follow-up was sent to a session that already ended."""


class Subscription:
    """Async iterator of events; ``close()`` to stop receiving. Unbounded buffer."""

    def __init__(self, mgr: "SessionManager"):
        self._q: asyncio.Queue = asyncio.Queue()
        self._mgr = mgr
        mgr._subs.append(self)

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> Event:
        item = await self._q.get()
        if item is _CLOSE:
            raise StopAsyncIteration
        return item

    def _put(self, item) -> None:
        self._q.put_nowait(item)

    def close(self) -> None:
        if self in self._mgr._subs:
            self._mgr._subs.remove(self)
        self._q.put_nowait(_CLOSE)


class SessionManager:
    """Runs sessions. Must be created and used inside one running asyncio loop.

    ``engine``: a ``memory.MemoryEngine`` (or None: no preseed, memory tools answer with an
    error). ``config``: :class:`RuntimeConfig` (defaults if None). ``pricing``: a
    :class:`PricingTable` (default: packaged + user override). ``client``: an
    ``anthropic.AsyncAnthropic`` to use instead of building one from the config.
    """

    def __init__(self, engine=None, config: RuntimeConfig | None = None, *, pricing: PricingTable | None = None, client=None):
        self.engine = engine
        self.config = config or RuntimeConfig()
        self.pricing = pricing or load_pricing(self.config.pricing_path)
        self._client = client
        self._own_client = client is None
        self._sessions: dict[str, Session] = {}
        self._subs: list[Subscription] = []
        self._slots = asyncio.Semaphore(max(1, self.config.concurrency))
        self._changed = asyncio.Event()
        self._total_usage = Usage()
        self._total_cost: float = 0.0
        self._unpriced = False
        self._closed = False

    # -- internals used by Session ---------------------------------------------------------
    def _get_client(self):
        if self._client is None:
            import anthropic

            kwargs = dict(api_key=self.config.api_key, max_retries=self.config.max_retries, timeout=self.config.timeout)
            if self.config.base_url:
                kwargs["base_url"] = self.config.base_url
            self._client = anthropic.AsyncAnthropic(**kwargs)
        return self._client

    def _publish(self, event: Event) -> None:
        for sub in list(self._subs):
            sub._put(event)
        self._changed.set()

    def _on_usage(self, usage: Usage, cost: float | None) -> None:
        self._total_usage = self._total_usage + usage
        if cost is None:
            self._unpriced = True
        else:
            self._total_cost += cost

    # -- public API ------------------------------------------------------------------------
    @property
    def sessions(self) -> list[Session]:
        """All sessions of this manager, in spawn order."""
        return list(self._sessions.values())

    def get(self, session_id: str) -> Session:
        """Raises KeyError for an unknown id."""
        return self._sessions[session_id]

    def subscribe(self) -> Subscription:
        """``async for event in mgr.subscribe(): …`` — every event published from now on."""
        return Subscription(self)

    def totals(self) -> tuple[Usage, float | None]:
        """Summed usage (tokens) of every response of every session, and USD cost.

        Cost is None when no response was priced; when some models are unpriced the cost
        covers the priced ones only (``Session.cost_usd`` is None for the others).
        """
        if self._unpriced and self._total_cost == 0.0:
            return self._total_usage, None
        return self._total_usage, self._total_cost

    async def spawn(
        self,
        task: str,
        workspace: str | Path | None = None,
        model: str | None = None,
        preseed: bool | None = None,
        top_k: int | None = None,
        interactive: bool | None = None,
    ) -> Session:
        """Start a session; returns at once (status ``queued`` or ``starting``).

        ``None`` arguments take the config's value (workspace: current folder).
        Raises ValueError for an empty task or a workspace that is not a folder;
        RuntimeError after ``aclose``.
        """
        if self._closed:
            raise RuntimeError("SessionManager is closed")
        if not task or not task.strip():
            raise ValueError("empty task")
        ws = Path(workspace or Path.cwd()).expanduser().resolve()
        if not ws.is_dir():
            raise ValueError(f"workspace is not a folder: {ws}")
        sid = self._new_id()
        s = Session(
            self,
            session_id=sid,
            task=task,
            model=model or self.config.model,
            workspace=ws,
            preseed_enabled=self.config.preseed if preseed is None else preseed,
            top_k=top_k or self.config.top_k,
            interactive=self.config.interactive if interactive is None else interactive,
            transcript_path=new_transcript_path(self.config.resolved_sessions_dir(), sid),
        )
        return self._start(s)

    async def resume(self, transcript_path: str | Path, *, interactive: bool | None = None) -> Session:
        """Reopen a past session: a new session (new id and transcript, header ``resumed_from``)
        holding the old conversation. It waits for a follow-up, or — when the old one stopped
        before answering the last user message — asks the model right away.
        Raises FileNotFoundError / ValueError for a missing or non-transcript file.
        """
        path = Path(transcript_path)
        records = read_transcript(path)
        h = records[0]
        messages = load_messages(records)
        if not messages:
            raise ValueError(f"{path}: transcript holds no messages to resume")
        ws = Path(h.get("workspace") or Path.cwd())
        if not ws.is_dir():
            ws = Path.cwd()
        sid = self._new_id()
        s = Session(
            self,
            session_id=sid,
            task=h.get("task", ""),
            model=h.get("model") or self.config.model,
            workspace=ws.resolve(),
            preseed_enabled=bool(h.get("preseed_enabled", True)),
            top_k=h.get("top_k") or self.config.top_k,
            interactive=self.config.interactive if interactive is None else interactive,
            transcript_path=new_transcript_path(self.config.resolved_sessions_dir(), sid),
            messages=messages,
            resumed_from=str(path),
            resumed_header=h,
        )
        return self._start(s)

    def _new_id(self) -> str:
        while True:
            sid = new_session_id()
            if sid not in self._sessions:
                return sid

    def _start(self, s: Session) -> Session:
        self._sessions[s.id] = s
        self._publish(
            SessionSpawned(s.id, s.task, s.model, str(s.workspace), str(s.transcript_path), s.preseed_enabled)
        )
        s.start()
        return s

    async def send(self, session_id: str, text: str) -> None:
        """Queue a follow-up user message. It is taken when the session is ``waiting for you``
        (at once if it is). Raises KeyError (unknown id), SessionClosed (session ended),
        ValueError (empty text)."""
        s = self._sessions[session_id]
        if s.status.is_final:
            raise SessionClosed(f"session {session_id} has ended ({s.status.value})")
        if not text or not text.strip():
            raise ValueError("empty message")
        s.post(text)

    async def kill(self, session_id: str) -> None:
        """Cancel the session's task and wait until it has ended ``killed`` (transcript closed
        with an ``end`` record). No-op when it already ended. Raises KeyError for an unknown id."""
        s = self._sessions[session_id]
        t = s._task
        if t is None or t.done():
            return
        t.cancel()
        await asyncio.wait([t])

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every session is final or ``waiting for you`` with no queued follow-up.
        Returns False on timeout."""

        async def _wait():
            while not all(s.is_idle for s in self._sessions.values()):
                self._changed.clear()
                await self._changed.wait()

        try:
            await asyncio.wait_for(_wait(), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    async def aclose(self) -> None:
        """Kill running sessions, end subscriptions, close the HTTP client. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for sid, s in list(self._sessions.items()):
            await self.kill(sid)
        for sub in list(self._subs):
            sub.close()
        if self._client is not None and self._own_client:
            try:
                await self._client.close()
            except Exception:
                pass

    async def __aenter__(self) -> "SessionManager":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
