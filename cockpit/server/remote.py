"""The runtime and the memory engine as a client sees them through the server.

:class:`RemoteRuntime` implements ``cockpit.runtime.protocols.Runtime`` (what the TUI and the
other clients call) over an :class:`~cockpit.server.client.AsyncClient`; events arrive already
typed (``cockpit.wire``). :class:`RemoteEngine` offers the memory engine's blocking API (search,
build_preseed, save, sync, status, lint, ready, wait_ready, watch) over a
:class:`~cockpit.server.client.BlockingClient`, returning objects with the same attributes as
``memory``'s (``Hit``, ``Preseed``, ``EngineStatus`` …) — so the TUI's spawn preview and memory
screen, the memory CLI and the MCP server work unchanged against the server's warm engine.
"""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import fields, replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol

from cockpit import wire
from cockpit.events import Event, Reviewed, SessionStatus, Usage
from cockpit.runtime.config import RuntimeConfig
from cockpit.server.client import AsyncClient
from cockpit.server.transport import Transport

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.ship import PullRequestDraft
    from cockpit.runtime.spawn import SpawnSpec
    from cockpit.runtime.worktree import Diff

CLIENT_CONFIG_KEYS = (
    "api_key", "auth_token", "base_url", "model", "max_tokens", "max_turns", "top_k", "preseed", "max_retries",
    "timeout", "permission_mode", "allow", "deny", "tools", "worktrees", "bash_timeout", "context_management",
    "backend", "claude_setting_sources", "sandbox", "network", "allow_hosts", "sandbox_hide", "protected", "pass_env",
    "check_command",
    "max_budget_usd", "max_budget_tokens", "agents", "acp_timeout", "provider_keys",
)


KEY_FIELDS = ("api_key", "auth_token", "provider_keys")  # what a host with api_keys = "host" never gets


def config_payload(config: RuntimeConfig, send_keys: bool = True) -> dict:
    """The settings a client sends with a spawn (its own flags > environment > config file);
    without :data:`KEY_FIELDS` when ``send_keys`` is false (the server's own are used)."""
    data = {f.name: getattr(config, f.name) for f in fields(config)
            if f.name in CLIENT_CONFIG_KEYS and (send_keys or f.name not in KEY_FIELDS)}
    for key in ("allow", "deny", "allow_hosts", "sandbox_hide", "protected", "pass_env"):
        data[key] = list(getattr(config, key))
    data["agents"] = [a.to_wire() for a in config.agents]  # this client's [agents.NAME], not the server's
    return data


def client_payload(config: RuntimeConfig, send_keys: bool = True) -> dict:
    """:func:`config_payload` of this client's settings with the key its ``api_key_helper`` prints
    when it has none (which may block: the helper runs)."""
    from cockpit.runtime import keyhelper

    if send_keys and keyhelper.wanted(config):
        config = keyhelper.keyed(config, "this machine's api_key_helper")
    return config_payload(config, send_keys)


class SessionInfo(SimpleNamespace):
    """A session as the server describes it (``Session.to_dict()`` keys as attributes)."""

    id: str


def spawn_params(spec: SpawnSpec, config: RuntimeConfig) -> dict[str, Any]:
    """``spec`` as the ``spawn`` method's params, ``interactive`` this client's when the spec
    leaves it open. Its workspace goes as given (``RemoteRuntime.spawn`` names it as the server's
    side does: absolute here, or a host's own path)."""
    interactive = config.interactive if spec.interactive is None else spec.interactive
    return replace(spec, interactive=interactive).to_wire()


class _Subscription:
    def __init__(self, runtime: RemoteRuntime):
        self._rt = runtime

    def __aiter__(self) -> _Subscription:
        return self

    async def __anext__(self) -> Event:
        while True:
            payload = await self._rt.client.events.get()
            if payload is None:
                raise StopAsyncIteration
            try:
                return wire.event_from_json(payload)
            except wire.WireError:
                continue  # an event type this client does not know (newer server): skip it

    def close(self) -> None:
        self._rt.client.events.put_nowait(None)


class RemoteRuntime:
    """``Runtime`` over the server. Create with :meth:`attach` (subscribes; :meth:`snapshot`
    then holds the events so far). ``config``: this client's settings, sent with every spawn
    (its keys only when ``send_keys``: a host with ``api_keys = "host"`` uses its own);
    ``notes``/``index``: the notes folder (and index file) sessions spawned here use."""

    backends: tuple[str, ...] = ("cockpit",)
    server_instance = ""  # the server process's random id (its hello's ``instance``)
    outlives_app = True  # quitting the app detaches: the sessions go on in the server

    def __init__(self, client: AsyncClient, config: RuntimeConfig, notes: str | None = None, index: str | None = None,
                 workspace: str | None = None, send_keys: bool = True):
        self.client = client
        self.config = config
        self.send_keys = send_keys
        conn = getattr(client, "connection", None)  # a transport's (ssh: the bridge's hello)
        hello = conn.hello if conn is not None else {}
        self.host: str | None = str(client.path).removeprefix("host ") if hello else None  # None: this machine
        # made absolute here: the server does not share this process's current folder; on another
        # host the paths are that host's (``~/`` its home, as its bridge said)
        self._home = str(hello.get("home") or "") if hello else None
        self.notes = self._there(notes)
        self.index = self._there(index)
        self.workspace = self._there(workspace)  # a spawn's default workspace (else this process's folder)
        self._snapshot: list[Event] = []
        self._totals = (Usage(), 0.0)

    def _there(self, path: str | None) -> str | None:
        """``path`` as the server's side names it: resolved here for this machine's server; on
        another host kept as given, ``~/…`` made that host's home."""
        if not path:
            return None
        if self._home is None:
            return str(Path(path).expanduser().resolve())
        if (path == "~" or path.startswith("~/")) and self._home:
            return self._home + path[1:]
        return path

    @classmethod
    async def attach(cls, config: RuntimeConfig, notes: str | None = None, index: str | None = None,
                     path: Path | None = None, transport: Transport | None = None,
                     workspace: str | None = None, send_keys: bool = True) -> RemoteRuntime:
        """Connect (to the socket at ``path``, or through ``transport``: ssh to a host), say
        hello, subscribe. ``workspace``: where spawns go when they name none; ``send_keys``:
        whether this client's keys go with a spawn."""
        client = await (AsyncClient.over(transport) if transport is not None else AsyncClient.connect(path))
        try:
            return await cls._attached(cls(client, config, notes, index, workspace, send_keys))
        except BaseException:
            await client.close()
            raise

    @classmethod
    async def _attached(cls, rt: RemoteRuntime) -> RemoteRuntime:
        hello = await rt.client.call("hello", client="cockpit")
        rt.backends = tuple(hello.get("backends") or ("cockpit",))  # what the server can run
        rt.server_instance = str(hello.get("instance") or "")
        reply = await rt.client.call("subscribe")
        rt._snapshot = [wire.event_from_json(e) for e in reply.get("events", [])]
        return rt

    def snapshot(self) -> list[Event]:
        return list(self._snapshot)

    def subscribe(self) -> _Subscription:
        return _Subscription(self)

    async def spawn(self, spec: SpawnSpec, *, host: str | None = None) -> SessionInfo:
        """Spawn ``spec`` on the server, its workspace named as the server's side does
        (:meth:`_there`; none given: this runtime's ``workspace``, else this process's current
        folder — on another host there is none: a ValueError). Refusals come back as
        ``RemoteError`` (a ValueError). ``host``: ``Runtime.spawn``'s (a grid's); one server is
        one host, so only None (any other value is a ValueError, before anything is sent)."""
        if host is not None:
            raise ValueError(f"this runtime has one host: cannot spawn on host {host!r}")
        if spec.workspace:
            workspace = self._there(os.fspath(spec.workspace))
        elif self.workspace or self.host is None:
            workspace = self.workspace or str(Path.cwd().resolve())
        else:  # this folder is not the host's
            raise ValueError(f"no workspace on host {self.host}: give one, or set workspace in [hosts.{self.host}]")
        row = await self.client.call("spawn", **spawn_params(replace(spec, workspace=workspace), self.config),
                                     notes=self.notes, index=self.index,
                                     config=await self._payload())
        return SessionInfo(**row)

    async def _payload(self) -> dict:
        """This client's settings for a spawn or resume: with its keys (the key its own
        ``api_key_helper`` prints when it has none) unless the host uses its own."""
        from cockpit.runtime import keyhelper

        if self.send_keys and keyhelper.wanted(self.config):  # (the helper runs: off the loop)
            return await asyncio.to_thread(client_payload, self.config, self.send_keys)
        return config_payload(self.config, self.send_keys)

    async def set_budget(self, session_id: str | None, usd: float | None = None, tokens: int | None = None,
                         clear: bool = False) -> dict:
        """The ``budget`` RPC: a session's cap, or the server's (``session_id`` None)."""
        where: dict[str, Any] = {"server": True} if session_id is None else {"id": session_id}
        return await self.client.call("budget", **where, usd=usd, tokens=tokens, clear=clear)

    async def send(self, session_id: str, text: str) -> None:
        await self.client.call("send", id=session_id, text=text)

    async def kill(self, session_id: str, reason: str = "killed by the user") -> None:
        await self.client.call("kill", id=session_id, reason=reason)

    async def stop(self, session_id: str, reason: str = "") -> None:
        await self.client.call("stop", id=session_id, reason=reason)

    async def answer(self, session_id: str, request_id: str | None, allow: bool, scope: str = "once",
                     reason: str = "") -> None:
        await self.client.call("answer", id=session_id, request_id=request_id, allow=allow, scope=scope, reason=reason)

    async def diff(self, session_id: str) -> Diff:
        return wire.diff_from_json(await self.client.call("diff", id=session_id))

    async def review(self, session_id: str, action: str) -> Reviewed:
        extra = {"config": await self._payload()} if action == "send-back" else {}  # it may resume the session
        return _reviewed(await self.client.call("review", id=session_id, action=action, **extra))

    async def draft_pull_request(self, session_id: str) -> PullRequestDraft:
        from cockpit.runtime.ship import PullRequestDraft

        out = await self.client.call("pr", id=session_id, draft=True)
        return PullRequestDraft(str(out["title"]), str(out["body"]))

    async def pull_request(self, session_id: str, title: str = "", body: str = "") -> Reviewed:
        return _reviewed(await self.client.call("pr", id=session_id, title=title, body=body))

    async def resume(self, transcript_path: str | Path, *, interactive: bool | None = None,
                     host: str | None = None) -> SessionInfo:
        """Resume the transcript ``transcript_path`` (a file of the server's host; or a Claude
        Code session id). ``host``: as :meth:`spawn`'s, only None."""
        if host is not None:
            raise ValueError(f"this runtime has one host: cannot resume on host {host!r}")
        if self.host is not None:  # another host's file: named as that host does
            given = self._there(os.fspath(transcript_path)) or ""
        else:
            path = Path(transcript_path).expanduser()
            given = str(path.resolve()) if path.exists() else str(transcript_path)  # else a Claude Code session id
        row = await self.client.call("resume", path=given, notes=self.notes, index=self.index,
                                     interactive=True if interactive is None else interactive,
                                     config=await self._payload())
        return SessionInfo(**row)

    async def continue_fresh(self, session_id: str) -> SessionInfo:
        return SessionInfo(**await self.client.call("continue", id=session_id))

    async def forget(self, session_id: str) -> None:
        await self.client.call("forget", id=session_id)

    async def quiesce(self, session_id: str) -> None:
        await self.client.call("quiesce", id=session_id)

    async def list(self) -> list[dict]:
        return (await self.client.call("list"))["sessions"]

    async def stop_all(self) -> None:
        """Kill every session of the server that is still working (queued, streaming, running a
        tool, needing approval, paused at a spend cap); finished and waiting ones are left for review."""
        for row in await self.list():
            try:
                working = SessionStatus(row["status"]).is_working
            except ValueError:  # a state this client does not know (a newer server): stopped too
                working = True
            if working:
                await self.kill(row["id"], reason="stopped from the app")

    async def aclose(self) -> None:
        """Detach: the sessions go on in the server."""
        await self.client.close()


def _reviewed(payload: Any) -> Reviewed:
    event = wire.event_from_json(payload)
    if not isinstance(event, Reviewed):
        raise wire.WireError(f"expected a Reviewed event, got {type(event).__name__}")
    return event


if TYPE_CHECKING:  # mypy checks RemoteRuntime against the protocol its clients use
    from cockpit.runtime.protocols import Runtime

    def _as_runtime(rt: RemoteRuntime) -> Runtime:
        return rt


# -- the memory engine over a blocking client -----------------------------------------------------
def _ns(data: Any) -> Any:
    if isinstance(data, dict):
        return SimpleNamespace(**{k: _ns(v) for k, v in data.items()})
    if isinstance(data, list):
        return [_ns(v) for v in data]
    return data


class Remote(SimpleNamespace):
    """A value the server sent (attributes as ``memory``'s own types); ``to_dict()`` gives it back."""

    def to_dict(self) -> dict:
        return dict(getattr(self, "_raw", {}))


def _obj(d: dict, **extra: Any) -> Remote:
    ns = Remote(**{**d, **extra})
    ns._raw = d
    return ns


def _hit(d: dict) -> Remote:
    return _obj({"probability": None, "status": "", "superseded_by": ""} | d, path=Path(d.get("path", "")))


class Caller(Protocol):
    """What :class:`RemoteEngine` needs of a connection: one blocking request at a time
    (:class:`~cockpit.server.client.BlockingClient`, or one that connects on first use)."""

    def call(self, method: str, **params: Any) -> Any: ...

    def close(self) -> None: ...


class LocalCaller:
    """A :class:`Caller` to this machine's server that outlives it. It connects at its first call;
    when the connection is gone (the server stopped, crashed, or was restarted) a call connects
    again — starting the server when none runs, as the app's own connection does — and is sent
    once more. A hung server (``ServerHung``: stopped with SIGSTOP) is said at once, not retried;
    the next call tries it again."""

    def __init__(self) -> None:
        self._client: Any = None
        self._lock = threading.Lock()

    def _connected(self, stale: Any = None) -> Any:
        from cockpit.server.client import BlockingClient, ensure_server

        with self._lock:  # the first thread here (re)connects; the others use its connection
            if self._client is None or self._client is stale:
                if self._client is not None:
                    self._client.close()
                    self._client = None
                if stale is not None:
                    ensure_server()
                self._client = BlockingClient()  # (a stopped server: ServerHung, for this call)
            return self._client

    def call(self, method: str, **params: Any) -> Any:
        from cockpit.server.client import ServerError, ServerHung

        client = self._connected()
        try:
            return client.call(method, **params)
        except ServerHung:
            with self._lock:
                if self._client is client:
                    client.close()
                    self._client = None  # asked again at the next call
            raise
        except ServerError:
            return self._connected(stale=client).call(method, **params)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


class RemoteEngine:
    """The memory engine of the server for one notes folder (blocking calls; use from threads).
    Raises ``cockpit.server.client.RemoteError`` / ``ServerError`` like the engine raises its own."""

    def __init__(self, client: Caller, notes: str | Path, index: str | Path | None = None):
        self.client = client
        self.notes_dir = Path(notes).expanduser().resolve()
        self.index_path: Path | None = Path(index).expanduser().resolve() if index else None
        self.index = str(self.index_path) if self.index_path else None  # the server's cwd is not ours
        self._ready = False

    def _call(self, method: str, **params: Any) -> Any:
        return self.client.call(method, notes=str(self.notes_dir), index=self.index, **params)

    def start_warmup(self) -> None:
        pass  # the server warms its engines itself

    @property
    def ready(self) -> bool:
        return self._ready

    def wait_ready(self, timeout: float | None = None) -> bool:
        self._ready = bool(self._call("memory.wait_ready", timeout=timeout)["ready"])
        return self._ready

    def search(self, query: str, top_k: int = 5) -> list[Any]:
        return [_hit(h) for h in self._call("memory.search", query=query, top_k=top_k)["hits"]]

    def build_preseed(self, query: str, top_k: int | None = None, selector: Any = None) -> Any:
        """The block the server's engine builds. A model ``selector`` runs where the client is
        (it holds the API key): pass None here (the memory CLI uses the local engine for it)."""
        if selector is not None:
            raise ValueError("a model selector runs in-process; the remote engine takes none")
        d = self._call("memory.preseed", query=query, top_k=top_k)
        return _obj(d, hits=[_hit(h) for h in d["hits"]], considered=[_hit(h) for h in d.get("considered", [])],
                    index=[_hit(h) for h in d.get("index", [])],
                    left_out=[(x["name"], x["why"]) for x in d.get("left_out", [])],
                    priority_cut=list(d.get("priority_cut", [])), selector=None)

    def preseed(self, query: str, top_k: int | None = None) -> str:
        return self.build_preseed(query, top_k).text

    def save(self, name: str, description: str, body: str, priority: bool = False) -> Path:
        from cockpit.server.client import RemoteError

        try:
            return Path(self._call("memory.save", name=name, description=description, body=body,
                                   priority=priority)["path"])
        except RemoteError as exc:
            raise ValueError(exc.message) from None

    def sync(self, progress: Any = None, paths: Any = None) -> Any:
        d = self._call("memory.index")
        return _obj(d, skipped=[tuple(x) for x in d.get("skipped", [])],
                    changed=bool(d.get("added") or d.get("updated") or d.get("removed") or d.get("renamed")))

    def status(self) -> Any:
        d = self._call("memory.status")
        self._ready = bool(d.pop("ready", False))
        self.index_path = Path(d["index_path"])
        return _obj(d, index_path=Path(d["index_path"]), notes_dir=Path(d["notes_dir"]))

    def get(self, name: str) -> dict | None:
        from cockpit.server.client import RemoteError
        from cockpit.server.rpc import NOT_FOUND

        try:
            return self._call("memory.get", name=name)
        except RemoteError as exc:
            if exc.code == NOT_FOUND:
                return None
            raise

    def list_notes(self) -> list[dict]:
        return self._call("memory.list")["notes"]

    def lint(self) -> list[Any]:
        return [_obj(i) for i in self._call("memory.lint")["issues"]]

    def watch(self, stop: threading.Event, on_sync: Any = None, on_status: Any = None, **_: Any) -> None:
        """The server watches the folder; this follows its syncs and its watcher's state (a
        status poll each second): ``on_sync`` and ``on_status(state, detail)`` as
        :meth:`memory.MemoryEngine.watch` calls them — e.g. "missing" while the notes folder is
        gone, "recovered" once the server re-watched it after a full resync."""
        last = None
        last_watch: tuple[Any, Any] = (None, None)
        while not stop.is_set():
            try:
                st = self.status()
            except Exception:
                st = None
            if st is not None and st.last_sync != last:
                last = st.last_sync
                if on_sync is not None:
                    on_sync(SimpleNamespace(added=0, updated=0, removed=0, changed=False, skipped=[], warnings=[]))
            state = (getattr(st, "watch_state", None), getattr(st, "watch", None)) if st is not None else last_watch
            if state != last_watch and state[0] is not None:
                if on_status is not None:
                    on_status(state[0], state[1] or "")
            last_watch = state
            stop.wait(1.0)

    def close(self) -> None:
        self.client.close()


class HostTranscripts:
    """The past sessions of another host, read from its server (``transcripts``, ``transcript``):
    a :class:`~cockpit.runtime.protocols.TranscriptSource` for the review screen, blocking calls
    from its worker threads. Paths are the host's."""

    def __init__(self, client: Caller, host: str):
        self.client = client
        self.host = host
        self._stamps: dict[Path, float] = {}

    def listing(self) -> list[Any]:
        from cockpit.runtime.transcript import transcript_info

        rows = self.client.call("transcripts")["transcripts"]
        self._stamps = {Path(str(r["path"])): float(r.get("mtime") or 0.0) for r in rows}
        return [transcript_info(r) for r in rows]

    def read(self, path: Path, warnings: list[str]) -> list[Event]:
        reply = self.client.call("transcript", path=str(path))
        events = []
        for row in reply.get("events", []):
            try:
                events.append(wire.event_from_json(row))
            except wire.WireError:  # an event type this client does not know (a newer server)
                continue
        warnings.extend(f"host {self.host}: {w}" for w in reply.get("warnings", []))
        if reply.get("truncated"):
            warnings.append(f"host {self.host}: its last {reply['truncated']} events are not shown (over one "
                            f"reply's size); the file there has them: {path}")
        return events

    def stamp(self, path: Path) -> float:
        """The transcript's time as the last listing saw it (a search's cache key)."""
        return self._stamps.get(Path(path), 0.0)


__all__ = ["RemoteRuntime", "RemoteEngine", "HostTranscripts", "SessionInfo", "config_payload",
           "CLIENT_CONFIG_KEYS"]
