"""Several hosts in one grid: :class:`MultiHostRuntime` implements ``Runtime`` over one server
connection per host.

Each host is a :class:`Host`: its name and a *connector* — an async callable returning a
connected, subscribed ``Runtime`` of that host's server (a :class:`~cockpit.server.remote.RemoteRuntime`
over a Unix socket, or over an SSH bridge: ``cockpit.server.host_config`` makes them). Session
ids are qualified with their host (``box:mf3k2q9x7d``; the local host's stay plain:
``cockpit.hostids``), so every event says its host; calls about a session go to the host that
owns it, a spawn to the host it names.

Connections: every host is tried at once; :meth:`MultiHostRuntime.attach` waits for the first
attempts at most ``first_wait`` seconds, so a host that cannot be reached never holds up the
others — it shows as ``unreachable`` (a :class:`~cockpit.events.HostStatus` event) and is tried
again in the background. A connection that drops (the server went away, the SSH link broke, a
hung peer's read timeout) is a ``reconnecting`` host: tried again with exponential back-off
(:class:`Backoff`, capped). When it is back, the server's attach snapshot replays each of its
sessions from the start: the stream carries ``HostStatus(replaying)``, that snapshot, then
``HostStatus(connected)``, and the client rebuilds those sessions from it — nothing twice,
nothing missing (the sessions never stopped).

One subscriber (the app): events of every host arrive on one queue, in each host's order.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from cockpit import hostids
from cockpit.events import Event, HostStatus, Reviewed, SessionSpawned
from cockpit.runtime.config import RuntimeConfig
from cockpit.runtime.protocols import Runtime, SessionRef
from cockpit.server import rpc
from cockpit.server.client import ServerError

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.ship import PullRequestDraft
    from cockpit.runtime.spawn import SpawnSpec
    from cockpit.runtime.worktree import Diff

log = logging.getLogger("cockpit.hosts")  # each host's connects, drops and replays (the reconnect log)
Connector = Callable[[], Awaitable[Runtime]]
ShellOpener = Callable[[str, "str | None"], int]
"""Runs an interactive shell in a folder of a host (or ``$EDITOR`` on a file there), blocking,
with this terminal's stdio; its exit code (``cockpit.server.ssh.open_shell``)."""
# at most this long for the first attempts before the app shows the grid: a host still connecting
# then (a slow link, a hung one) shows `connecting` and joins when it answers — the grid, this
# machine's sessions included, is never held blank for it (it was 10 s, the whole screen blank)
FIRST_WAIT_S = 2.0
CONNECT_TIMEOUT_S = 60.0  # a connector that has not connected by then has failed (a hung peer)


@dataclass(frozen=True)
class Backoff:
    """Seconds before retry ``attempt`` (1, 2, …): ``first`` × ``factor`` ** (attempt − 1), at most ``cap``."""

    first: float = 0.5
    factor: float = 2.0
    cap: float = 30.0

    def delay(self, attempt: int) -> float:
        return min(self.cap, self.first * self.factor ** max(0, attempt - 1))


@dataclass(frozen=True)
class Host:
    """One host of the grid: ``name`` (``local`` = this machine; see ``cockpit.hostids``),
    ``connect`` (its connector), ``workspace`` / ``notes``: folders *on that host* (the spawn
    dialog's default workspace there, the notes its sessions get; None: the app's own for the
    local host, else the server's defaults). ``same_machine``: its folders are this machine's
    (the local server, or another one reached over a Unix socket), so the app's workspace is a
    default there too. ``shell``: how the app opens a shell in a folder there (an SSH host's
    ``ssh -t``); None: its folders are this machine's, a local shell opens them."""

    name: str
    connect: Connector
    workspace: str | None = None
    notes: str | None = None
    same_machine: bool = False
    shell: ShellOpener | None = None


class HostUnavailable(ServerError):
    """A call about a host that is not connected now (one line for the user)."""


@dataclass
class _Link:
    host: Host
    runtime: Runtime | None = None
    state: str = "connecting"
    detail: str = ""
    reached: bool = False  # connected at least once
    displaced: bool = False  # connected at attach, then found to be an earlier host's server: dropped
    task: asyncio.Task | None = None
    first_try: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)


def its_own(event: Event) -> bool:
    """Whether a host's server may send ``event``: one of its sessions' (a ``HostStatus`` is the
    grid's alone, and an event of no session would land on the local host). A host that sends
    anything else — broken or hostile — is not listened to about other hosts."""
    return bool(event.session_id) and not isinstance(event, HostStatus)


def qualify_event(host: str, event: Event) -> Event:
    """``event`` with its session ids qualified by ``host`` (the local host's stay as they are)."""
    if host == hostids.LOCAL:
        return event
    changes: dict[str, Any] = {"session_id": hostids.qualify(host, event.session_id)}
    if isinstance(event, SessionSpawned) and event.continued_from:
        changes["continued_from"] = hostids.qualify(host, event.continued_from)
    return dataclasses.replace(event, **changes)


@dataclass(frozen=True)
class _Ref:
    """A started session's grid-wide id, when the host's answer cannot carry it."""

    id: str


def _qualified_ref(host: str, ref: SessionRef) -> SessionRef:
    """What spawn, resume or continue returned, its id qualified by ``host`` (a ``SessionInfo``
    row in place; anything else as a bare :class:`_Ref`)."""
    if host == hostids.LOCAL:
        return ref
    sid = hostids.qualify(host, ref.id)
    if isinstance(ref, SimpleNamespace):  # RemoteRuntime's SessionInfo: its other facts kept
        ref.id = sid
        return ref
    return _Ref(sid)


def _qualified_reviewed(host: str, event: Reviewed) -> Reviewed:
    if host == hostids.LOCAL:
        return event
    return dataclasses.replace(event, session_id=hostids.qualify(host, event.session_id))


class _Subscription:
    def __init__(self, queue: asyncio.Queue[Event | None]):
        self._queue = queue

    def __aiter__(self) -> _Subscription:
        return self

    async def __anext__(self) -> Event:
        event = await self._queue.get()
        if event is None:
            raise StopAsyncIteration
        return event

    def close(self) -> None:
        self._queue.put_nowait(None)


class MultiHostRuntime:
    """``Runtime`` over several hosts. Create with :meth:`attach`. ``config``: the client's
    settings (sent with every spawn, to whichever host); ``default_host``: where a spawn that
    names none goes (the local host when there is one, else the first)."""

    outlives_app = True  # every host's sessions go on in its server

    def __init__(self, hosts: Sequence[Host], config: RuntimeConfig, backoff: Backoff = Backoff(),
                 connect_timeout: float = CONNECT_TIMEOUT_S):
        if not hosts:
            raise ValueError("a grid needs at least one host")
        names = [hostids.check_name(h.name) for h in hosts]
        if len(set(names)) != len(names):
            raise ValueError(f"a host is named twice: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
        self.config = config
        self.backoff = backoff
        self.connect_timeout = connect_timeout
        self._links = {h.name: _Link(h) for h in hosts}
        self.default_host = hostids.LOCAL if hostids.LOCAL in self._links else names[0]
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._snapshot: list[Event] | None = None  # taken once the first attempts are over
        self._closed = False
        self._closing: set[asyncio.Task] = set()  # displaced hosts' connections being closed

    @classmethod
    async def attach(cls, hosts: Sequence[Host], config: RuntimeConfig, *, first_wait: float = FIRST_WAIT_S,
                     backoff: Backoff = Backoff(), connect_timeout: float = CONNECT_TIMEOUT_S) -> MultiHostRuntime:
        """Connect to every host at once; return when each has been tried (at most ``first_wait``
        seconds: a host still trying goes on in the background; one attempt fails after
        ``connect_timeout`` seconds)."""
        rt = cls(hosts, config, backoff, connect_timeout)
        for link in rt._links.values():
            link.task = asyncio.get_running_loop().create_task(rt._run(link), name=f"host {link.host.name}")
        waits = [asyncio.ensure_future(link.first_try.wait()) for link in rt._links.values()]
        _, pending = await asyncio.wait(waits, timeout=first_wait)
        for fut in pending:
            fut.cancel()
        rt._take_snapshot()
        return rt

    # -- what the app reads ----------------------------------------------------------
    @property
    def hosts(self) -> tuple[Host, ...]:
        return tuple(link.host for link in self._links.values())

    def host(self, name: str) -> Host:
        return self._link(name).host

    def host_state(self, name: str) -> str:
        """connecting | connected | reconnecting | unreachable."""
        return self._link(name).state

    @property
    def backends(self) -> tuple[str, ...]:
        return self.backends_of(self.default_host)

    def backends_of(self, host: str) -> tuple[str, ...]:
        runtime = self._link(host).runtime
        return tuple(runtime.backends) if runtime is not None else ("cockpit",)

    def engine_of(self, host: str) -> Any:
        """A :class:`~cockpit.server.remote.RemoteEngine` of ``host``'s notes (``Host.notes``) over
        the grid's own connection to it — whatever the transport — for blocking calls from a worker
        thread (the spawn dialog's preview); None when no notes folder is known there."""
        from cockpit.server.remote import RemoteEngine

        notes = self._link(host).host.notes
        if not notes:
            return None
        return RemoteEngine(_LoopCaller(self, host, asyncio.get_running_loop()), notes)

    def shell_opener(self, host: str) -> ShellOpener | None:
        """How to open a shell in a folder of ``host`` (None: its folders are this machine's)."""
        return self._link(host).host.shell

    def transcripts_of(self, host: str) -> Any:
        """The past sessions of ``host``'s server (a :class:`~cockpit.server.remote.HostTranscripts`
        over the grid's own connection to it: blocking calls, from a worker thread)."""
        from cockpit.server.remote import HostTranscripts

        return HostTranscripts(_LoopCaller(self, host, asyncio.get_running_loop()), host)

    def snapshot(self) -> list[Event]:
        """Each host's state (a ``HostStatus``), then the sessions of the hosts reached at
        attach (their later connections replay through the event stream)."""
        return list(self._snapshot or [])

    def subscribe(self) -> _Subscription:
        return _Subscription(self._queue)

    # -- connections -----------------------------------------------------------------
    def _link(self, name: str) -> _Link:
        link = self._links.get(name)
        if link is None:
            raise KeyError(f"no host {name!r} in this grid (hosts: {', '.join(self._links)})")
        return link

    def _status(self, link: _Link, retry_in: float | None = None) -> HostStatus:
        return HostStatus("", link.host.name, link.state, link.detail, retry_in)

    def _take_snapshot(self) -> None:
        out: list[Event] = []
        for link in self._links.values():
            out.append(self._status(link))
            if link.runtime is not None:
                out.extend(qualify_event(link.host.name, e) for e in link.runtime.snapshot() if its_own(e))
        self._snapshot = out  # from now on a connection's snapshot goes through the stream

    async def _run(self, link: _Link) -> None:
        """Connect, follow the host's events, and after a drop connect again (back-off)."""
        name = link.host.name
        attempt = 0
        while not self._closed:
            try:
                runtime = await asyncio.wait_for(link.host.connect(), self.connect_timeout)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if isinstance(exc, TimeoutError):
                    exc = ServerError(f"no connection within {self.connect_timeout:g} s (hung?)")
                attempt += 1
                await self._try_later(link, attempt, "reconnecting" if link.reached else "unreachable",
                                      one_line(exc))
                continue
            twin = self._same_server(link, runtime)
            names = list(self._links)
            if twin is not None and self._snapshot is None and names.index(name) < names.index(twin):
                self._displace(self._links[twin], name)  # at attach the first named keeps it, whoever was first
                twin = None
            if twin is not None:  # one server under two names: its sessions would show twice
                with contextlib.suppress(Exception):
                    await runtime.aclose()
                self._default_to(twin, instead_of=name)
                attempt += 1  # tried again: if that host's server goes, this name may reach another
                await self._try_later(link, attempt, "unreachable", self._twin_detail(twin))
                continue
            attempt = 0
            replay = self._snapshot is not None or link.reached  # else the attach snapshot holds it
            link.runtime, link.reached, link.state, link.detail = runtime, True, "connected", ""
            subscription = runtime.subscribe()  # no await from here to the snapshot: nothing missed
            if replay:
                link.state = "replaying"
                self._queue.put_nowait(self._status(link))
                replayed = [e for e in runtime.snapshot() if its_own(e)]
                for event in replayed:
                    self._queue.put_nowait(qualify_event(name, event))
                link.state = "connected"
                self._queue.put_nowait(self._status(link))
                log.info("host %s: back, %d events replayed", name, len(replayed))
            else:
                log.info("host %s: connected", name)
            link.first_try.set()
            behind = ""
            try:
                async for event in subscription:
                    if link.displaced:
                        break
                    if self._queue.qsize() >= rpc.MAX_PENDING_EVENTS:  # the app is not keeping up with it
                        behind = f"{self._queue.qsize()} of its events waiting to be shown: reconnecting"
                        break
                    if its_own(event):
                        self._queue.put_nowait(qualify_event(name, event))
            finally:
                link.runtime = None
                with contextlib.suppress(Exception):
                    await runtime.aclose()
            if self._closed:
                return
            if link.displaced:  # said in the attach snapshot; tried again later (refused while the twin holds it)
                link.displaced = False
                attempt += 1
                await asyncio.sleep(self.backoff.delay(attempt))
                continue
            client = getattr(runtime, "client", None)
            link.state = "reconnecting"
            link.detail = behind or one_line(getattr(client, "error", None) or "the connection dropped")
            log.info("host %s: connection lost (%s), reconnecting", name, link.detail)
            self._queue.put_nowait(self._status(link, 0.0))
            while behind and not self._closed and self._queue.qsize() > rpc.MAX_PENDING_EVENTS // 2:
                await asyncio.sleep(0.1)  # its replay waits until the app has caught up

    async def _try_later(self, link: _Link, attempt: int, state: str, detail: str) -> None:
        """``link`` failed its ``attempt``-th try: say so (once the attach snapshot is taken, as an
        event with the next try's delay) and wait for the back-off."""
        delay = self.backoff.delay(attempt)
        link.state, link.detail = state, detail
        link.first_try.set()
        log.info("host %s: %s (%s), next try in %g s", link.host.name, state, detail, delay)
        if self._snapshot is not None:
            self._queue.put_nowait(self._status(link, delay))
        await asyncio.sleep(delay)

    def _displace(self, link: _Link, twin: str) -> None:
        """Drop ``link``'s connection (before the attach snapshot: nothing of it was shown): its
        server is ``twin``'s."""
        runtime, link.runtime, link.displaced = link.runtime, None, True
        link.state, link.detail = "unreachable", self._twin_detail(twin)
        self._default_to(twin, instead_of=link.host.name)
        if runtime is not None:  # closing it ends its subscription
            task = asyncio.get_running_loop().create_task(runtime.aclose())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    def _default_to(self, twin: str, instead_of: str) -> None:
        """A spawn that names no host goes to ``twin`` when it went to ``instead_of``, another name
        of the same server (``local`` refused as the twin of a host named before it)."""
        if self.default_host == instead_of:
            self.default_host = twin

    @staticmethod
    def _twin_detail(twin: str) -> str:
        return (f"the same Cockpit server as host {twin} (another name for it): its sessions show under "
                f"{twin}; name it once in the grid")

    def _same_server(self, link: _Link, runtime: Runtime) -> str | None:
        """The name of another connected host whose server is the one ``runtime`` reached
        (the same ``instance`` in both hellos), or None."""
        instance = getattr(runtime, "server_instance", "")  # a RemoteRuntime's; "" when unknown
        if not instance:
            return None
        for other in self._links.values():
            if other is not link and other.runtime is not None \
                    and getattr(other.runtime, "server_instance", "") == instance:
                return other.host.name
        return None

    # -- routing ---------------------------------------------------------------------
    def _owner(self, session_id: str) -> tuple[str, str, Runtime]:
        host, local_id = hostids.split(session_id)
        return host, local_id, self._connected(host)

    def _connected(self, host: str) -> Runtime:
        link = self._link(host)
        if link.runtime is None:
            why = f" ({link.detail})" if link.detail else ""
            raise HostUnavailable(f"host {host} is {link.state}{why}: try again when it is back")
        return link.runtime

    async def spawn(self, spec: SpawnSpec, *, host: str | None = None) -> SessionRef:
        """Spawn ``spec`` on ``host`` (None: :attr:`default_host`); the spec goes to that host's
        server unchanged, but for its workspace: None there is the host's own (``Host.workspace``).
        A host not in the grid is a ValueError; one not connected now, :class:`HostUnavailable`."""
        name = host or self.default_host
        if name not in self._links:
            raise ValueError(f"no host {name!r} in this grid (hosts: {', '.join(self._links)})")
        runtime = self._connected(name)
        workspace = self._link(name).host.workspace
        if spec.workspace is None and workspace:
            spec = dataclasses.replace(spec, workspace=workspace)
        return _qualified_ref(name, await runtime.spawn(spec))

    async def send(self, session_id: str, text: str) -> None:
        _, sid, runtime = self._owner(session_id)
        await runtime.send(sid, text)

    async def kill(self, session_id: str, reason: str = "") -> None:
        _, sid, runtime = self._owner(session_id)
        await runtime.kill(sid, reason)

    async def stop(self, session_id: str, reason: str = "") -> None:
        _, sid, runtime = self._owner(session_id)
        await runtime.stop(sid, reason)

    async def answer(self, session_id: str, request_id: str | None, allow: bool, scope: str = "once",
                     reason: str = "") -> None:
        _, sid, runtime = self._owner(session_id)
        await runtime.answer(sid, request_id, allow, scope, reason)

    async def review(self, session_id: str, action: str) -> Reviewed:
        host, sid, runtime = self._owner(session_id)
        return _qualified_reviewed(host, await runtime.review(sid, action))

    async def diff(self, session_id: str) -> Diff:
        _, sid, runtime = self._owner(session_id)
        return await runtime.diff(sid)

    async def draft_pull_request(self, session_id: str) -> PullRequestDraft:
        _, sid, runtime = self._owner(session_id)
        return await runtime.draft_pull_request(sid)

    async def pull_request(self, session_id: str, title: str = "", body: str = "") -> Reviewed:
        host, sid, runtime = self._owner(session_id)
        return _qualified_reviewed(host, await runtime.pull_request(sid, title=title, body=body))

    async def resume(self, transcript_path: str | Path, *, interactive: bool | None = None,
                     host: str | None = None) -> SessionRef:
        """Resume a transcript of ``host`` (a path there, as its ``transcripts`` list names it) on
        that host; None: the default host (a file of this machine when that is ``local``)."""
        name = host or self.default_host
        if name not in self._links:
            raise ValueError(f"no host {name!r} in this grid (hosts: {', '.join(self._links)})")
        runtime = self._connected(name)
        return _qualified_ref(name, await runtime.resume(transcript_path, interactive=interactive))

    async def continue_fresh(self, session_id: str) -> SessionRef:
        host, sid, runtime = self._owner(session_id)
        return _qualified_ref(host, await runtime.continue_fresh(sid))

    async def forget(self, session_id: str) -> None:
        _, sid, runtime = self._owner(session_id)
        await runtime.forget(sid)

    async def quiesce(self, session_id: str) -> None:
        _, sid, runtime = self._owner(session_id)
        await runtime.quiesce(sid)

    async def set_budget(self, session_id: str | None, usd: float | None = None, tokens: int | None = None,
                         clear: bool = False) -> dict:
        """A session's cap on its host; the server's cap (``session_id`` None): the default host's."""
        if session_id is None:
            return await self._connected(self.default_host).set_budget(None, usd, tokens, clear)
        _, sid, runtime = self._owner(session_id)
        return await runtime.set_budget(sid, usd, tokens, clear)

    async def stop_all(self) -> None:
        """Every connected host stops its working sessions (at once)."""
        runtimes = [link.runtime for link in self._links.values() if link.runtime is not None]
        await asyncio.gather(*(r.stop_all() for r in runtimes))

    async def aclose(self) -> None:
        """Detach from every host (their sessions go on)."""
        self._closed = True
        for link in self._links.values():
            if link.task is not None:
                link.task.cancel()
        for link in self._links.values():
            if link.task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await link.task
            if link.runtime is not None:
                with contextlib.suppress(Exception):
                    await link.runtime.aclose()
                link.runtime = None
        self._queue.put_nowait(None)


class _LoopCaller:
    """``RemoteEngine``'s blocking ``Caller`` over a host's async connection: a worker thread's
    call runs on the app's loop, and waits at most the client's read timeout (a hung host is
    ``ServerHung``, never a hang)."""

    def __init__(self, grid: MultiHostRuntime, host: str, loop: asyncio.AbstractEventLoop):
        self._grid, self._host, self._loop = grid, host, loop

    def call(self, method: str, **params: Any) -> Any:
        import concurrent.futures

        from cockpit.server.client import ServerHung, read_timeout

        client = getattr(self._grid._connected(self._host), "client", None)
        if client is None:
            raise HostUnavailable(f"host {self._host} offers no memory calls")
        future = asyncio.run_coroutine_threadsafe(client.call(method, **params), self._loop)
        try:
            return future.result(timeout=read_timeout() * 2)  # keepalives keep a slow call alive
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ServerHung(f"host {self._host} did not answer {method} in time") from None

    def close(self) -> None:
        pass  # the connection is the grid's


if TYPE_CHECKING:  # mypy checks MultiHostRuntime against the protocols the app uses
    from cockpit.runtime.protocols import GridRuntime

    def _as_runtime(rt: MultiHostRuntime) -> Runtime:
        return rt

    def _as_grid_runtime(rt: MultiHostRuntime) -> GridRuntime:
        return rt


def one_line(exc: object) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200] if text else ""


__all__ = ["Backoff", "Connector", "ShellOpener", "Host", "HostUnavailable", "MultiHostRuntime", "qualify_event"]
