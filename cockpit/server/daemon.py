"""``cockpit server run``: the server process (see ``docs/PROTOCOL.md`` for the protocol).

It owns one :class:`~cockpit.runtime.SessionManager` (every session, its worktree and its
shell), one warm :class:`memory.MemoryEngine` per notes folder (sharing one embedding model), and
the live-session registry. It listens on a Unix socket in a 0700 folder (socket 0600; a peer whose
uid differs from the server's is refused where ``SO_PEERCRED`` exists), and on TCP only when asked
(``--listen 127.0.0.1:PORT``, then every TCP client must present the token printed at start).

Robustness: a request line that is not JSON-RPC, or over :data:`rpc.MAX_LINE` bytes, gets an error
reply and its connection is closed; a failing handler answers with an error and the server stays
up; at most :data:`MAX_CONNECTIONS` connections at once; one lock file makes a second server exit
at once; a stale socket from a dead server is replaced. SIGTERM/SIGINT end sessions cleanly
(finished ones ``done``, working ones ``killed`` with "server stopped"). After a SIGKILL or a power
loss, the next start finds the sessions that were live in ``live.json`` and marks them
``interrupted`` (an ``end`` record is appended to their transcripts). After any end of the server,
those, and the sessions that ended with their change still in their worktree, are restored from
their transcripts into the new server's manager (:meth:`SessionManager.restore`): listed, replayed
to clients, reviewed, resumed and closed as any session that ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import secrets
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any, Literal

from cockpit import wire
from cockpit.events import (
    ApprovalRequested,
    ApprovalResolved,
    BackendRecord,
    ConversationMessage,
    Event,
    InstructionsLoaded,
    MemoryMiss,
    Retrying,
    Reviewed,
    RuleApplied,
    SessionDone,
    SessionForgotten,
    SessionSpawned,
    SessionStatus,
    StatusChanged,
    TextDelta,
    ToolCall,
    ToolResult,
    UserMessage,
)
from cockpit.runtime import RuntimeConfig, SessionManager, ids, keyguard
from cockpit.runtime.claude_code import looks_like_session_id
from cockpit.runtime.config import ConfigError, load_config, read_config_file
from cockpit.runtime.history import SessionHistory, fold
from cockpit.runtime.manager import SessionClosed, awaits_review, notes_of
from cockpit.runtime.session_base import EndedSession
from cockpit.runtime.spawn import Count, Dollars, SpawnSpec
from cockpit.runtime.transcript import append_event, list_transcripts, read_events, transcript_row
from cockpit.runtime.worktree import WorktreeError
from cockpit.server import paths, rpc
from cockpit.server.engines import EngineRegistry
from cockpit.server.methods import FLAT, METHODS, AbsPath, NonEmpty, Request, SessionId, method
from cockpit.server.remote import CLIENT_CONFIG_KEYS

log = logging.getLogger("cockpit.server")
_REPLIED = object()  # a handler that sent its reply itself
MAX_CONNECTIONS = 512
SNAPSHOT_FIELD_CHARS = 16_000  # a tool's output, input or approval detail in a snapshot (the transcript has all)
# … and in a live event: one event is one line, which must fit a client's line limit (rpc.MAX_LINE)
# even when JSON escapes every character (up to 6 bytes each)
LIVE_FIELD_CHARS = 1_000_000


class AlreadyRunning(RuntimeError):
    """Another server holds the lock for this data folder."""


def events_left(sid: str, transcript: str) -> list[Event]:
    """The events of a session an earlier server left, from its transcript; one that never ended
    (its server died) gets its end written now (``StatusChanged`` and ``SessionDone``,
    ``interrupted``). Raises OSError / ValueError."""
    events = read_events(Path(transcript), [])
    if not any(isinstance(e, SessionDone) for e in events):
        why = f"the server stopped while it ran; resume it: cockpit resume {sid} (in the app: r, then o)"
        h = fold(events, sid)
        ending = [StatusChanged(sid, SessionStatus.INTERRUPTED, why),
                  SessionDone(sid, SessionStatus.INTERRUPTED, extra={"transcript_path": transcript},
                              usage=h.usage, cost_usd=h.cost_usd, reason=why)]
        for event in ending:
            with contextlib.suppress(OSError):
                append_event(Path(transcript), event)
        events += ending
    return events


# what a new server answers before it knows the sessions the last one left (see Server._recover)
NO_RECOVERY_WAIT = frozenset({"hello", "server.status", "server.stop"})

# what a session an earlier server's end interrupted cannot do until resumed (the others answer
# for it as for any session that ended)
LIVE_ONLY_METHODS = frozenset({"send", "answer", "budget", "continue"})


def _read_left(sid: str, transcript: str) -> tuple[list[Event], SessionHistory] | None:
    """:func:`events_left` and those folded; None (logged) when the transcript cannot be read."""
    try:
        events = events_left(sid, transcript)
        return events, fold(events, sid)
    except (OSError, ValueError) as exc:
        log.warning("session %s could not be read from its transcript %s: %s", sid, transcript, exc)
        return None


class LiveRegistry:
    """``live.json``: session id → transcript path of every session not yet ended
    (``sessions``), of those a dead server left ``interrupted`` that nobody resumed or closed
    yet (they stay listed across restarts), and of those that ended with their change still in
    their worktree (``review``: not merged, kept, discarded or closed — the next server lists them
    again). Written atomically (fsync before rename) whenever one of these changes."""

    SECTIONS = ("sessions", "interrupted", "review")

    def __init__(self, path: Path):
        self.path = path
        self.live: dict[str, str] = {}
        self.interrupted: dict[str, str] = {}
        self.review: dict[str, str] = {}

    def load(self) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        """What the file says: ``(sessions live, sessions interrupted, sessions awaiting review)``,
        id → transcript path (empty when it is missing or damaged)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            if not isinstance(exc, FileNotFoundError):
                log.warning("%s could not be read (%s): no session of the last server is recovered", self.path, exc)
            return {}, {}, {}
        out: list[dict[str, str]] = []
        for key in self.SECTIONS:  # a damaged section loses only itself
            section = data.get(key, {}) if isinstance(data, dict) else None
            if isinstance(section, dict):
                out.append({str(k): v for k, v in section.items() if isinstance(v, str)})
            else:
                log.warning("%s: its %r section is damaged (%s): left out", self.path, key, type(section).__name__)
                out.append({})
        return out[0], out[1], out[2]

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"pid": os.getpid(), "sessions": self.live, "interrupted": self.interrupted,
                       "review": self.review}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    def add(self, sid: str, transcript: str) -> None:
        self.live[sid] = transcript
        self._write()

    def remove(self, sid: str, awaits_review: bool = False) -> None:
        """``sid`` ended; ``awaits_review``: its change is still in its worktree."""
        was = self.live.pop(sid, None)
        if awaits_review and was is not None:
            self.review[sid] = was
        if was is not None:
            self._write()

    def clear(self, interrupted: dict[str, str] | None = None, review: dict[str, str] | None = None) -> None:
        """No live sessions (a new server); ``interrupted``: the ones still waiting for a resume,
        ``review``: for a review."""
        self.live = {}
        self.interrupted = dict(interrupted or {})
        self.review = dict(review or {})
        self._write()

    def done_with(self, sid: str) -> None:
        """``sid`` was resumed or closed, or its change merged, kept or discarded: the next server
        does not restore it."""
        if self.review.pop(sid, None) is not None or self.interrupted.pop(sid, None) is not None:
            self._write()


def reap_orphans(session_ids: set[str]) -> list[int]:
    """Kill what a dead server's sessions left running — their shells and whatever those started
    (a ``sleep`` in the background, a dev server) — found by the ``COCKPIT_SESSION_ID=…``
    every session's shell environment carries (so a reused pid is never hit). Linux ``/proc``;
    elsewhere nothing. Returns the pids killed."""
    if not session_ids or not os.path.isdir("/proc"):
        return []
    marks = {f"COCKPIT_SESSION_ID={sid}".encode() for sid in session_ids}
    killed = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = set(fh.read().split(b"\0"))
        except OSError:  # gone, or not ours
            continue
        if env & marks:
            with contextlib.suppress(OSError):
                os.kill(int(entry), signal.SIGKILL)
                killed.append(int(entry))
    return killed


class Connection:
    """One client connection: a write lock, an authenticated flag, an optional event pump."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tcp: bool):
        self.reader = reader
        self.writer = writer
        self.tcp = tcp
        self.authed = not tcp
        self.lock = asyncio.Lock()
        self.pump: asyncio.Task | None = None
        self.tasks: set[asyncio.Task] = set()
        self.closed = False
        self.peer_pid: int | None = None  # the client's process (a Unix socket's peer), when known

    async def send(self, data: bytes) -> None:
        if self.closed:
            return
        async with self.lock:
            try:
                self.writer.write(data)
                await self.writer.drain()
            except (ConnectionError, RuntimeError):
                self.closed = True

    def close(self) -> None:
        self.closed = True
        for t in list(self.tasks) + ([self.pump] if self.pump else []):
            t.cancel()
        with contextlib.suppress(Exception):
            self.writer.close()


class Server:
    """The server. ``listen``: optional (host, port) for TCP; ``token``: the TCP token."""

    def __init__(self, config: RuntimeConfig | None = None, listen: tuple[str, int] | None = None):
        self.config = config or load_config({"interactive": True})
        self.manager: SessionManager | None = None
        self.engines = EngineRegistry()
        self.registry = LiveRegistry(paths.registry_path())
        self.conns: set[Connection] = set()
        self.listen = listen
        self.token = secrets.token_urlsafe(24) if listen else None
        self.started_at = time.time()
        self.instance = secrets.token_hex(8)  # this server process, whatever name a client reached it by
        self._stop = asyncio.Event()
        self._recovered = asyncio.Event()  # the last server's sessions are known (see _recover)
        self._recovery: asyncio.Task | None = None
        self._watch_task: asyncio.Task | None = None
        self._lock_fd: int | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self.socket_path = paths.socket_path()

    # -- lifecycle ---------------------------------------------------------------------------
    def _acquire_lock(self) -> None:
        lock = paths.lock_path()
        paths.ensure_private_dir(lock.parent)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise AlreadyRunning(f"a Cockpit server already runs for this data folder (lock {lock})") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    async def start(self) -> None:
        """Take the lock, listen, recover interrupted sessions. Raises AlreadyRunning."""
        self._acquire_lock()
        sock = self.socket_path
        paths.ensure_private_dir(sock.parent)
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()  # we hold the lock: whatever is there is a dead server's
        old = os.umask(0o177)
        try:
            self._servers.append(await asyncio.start_unix_server(
                lambda r, w: self._accept(r, w, tcp=False), path=str(sock), limit=rpc.MAX_LINE,
                backlog=1024))  # a burst of clients (nine panes, hooks, CLIs) waits, never EAGAIN
        finally:
            os.umask(old)
        os.chmod(sock, 0o600)
        if self.listen:
            host, port = self.listen
            self._servers.append(await asyncio.start_server(
                lambda r, w: self._accept(r, w, tcp=True), host=host, port=port, limit=rpc.MAX_LINE))
        self.manager = SessionManager(None, self.config)
        # what the last server left is read off the loop: this server answers at once, and a
        # request about sessions waits until it is known (a keepalive every second meanwhile)
        self._recovery = asyncio.get_running_loop().create_task(self._recover())

    async def _recover(self) -> None:
        """The sessions the previous server left: those live then are ``interrupted`` (their end
        written now); each interrupted one, and each that ended with its change still in its
        worktree, is restored into the manager (:meth:`SessionManager.restore`). Their transcripts
        are read and folded in a thread, one at a time; requests wait for :attr:`_recovered`."""
        try:
            await self._recover_sessions()
        except Exception:  # never a server that waits forever: what could be recovered is
            log.exception("recovering the last server's sessions failed")
        finally:
            self._recovered.set()
            self._watch_task = asyncio.get_running_loop().create_task(self._track_live())

    async def _recover_sessions(self) -> None:
        assert self.manager is not None
        live, interrupted, review = self.registry.load()
        reaped = await asyncio.to_thread(reap_orphans, set(live))
        if reaped:
            log.warning("killed %d processes the interrupted sessions left running: %s", len(reaped), reaped)
        kept: dict[str, dict[str, str]] = {"interrupted": {}, "review": {}}
        for sid, transcript in {**review, **interrupted, **live}.items():
            read = await asyncio.to_thread(_read_left, sid, transcript)  # one at a time: memory for one
            if read is None:
                continue
            try:
                restored = self.manager.restore(transcript, *read)
            except Exception as exc:  # one damaged session never keeps the server from starting
                log.warning("session %s could not be restored (%s): %s", sid, transcript, exc)
                continue
            if sid in live:
                log.info("session %s was interrupted by the previous server's end", sid)
            if restored is not None:  # (None: it ended, and its change was reviewed from a terminal since)
                interrupted_now = restored.status is SessionStatus.INTERRUPTED
                kept["interrupted" if interrupted_now else "review"][sid] = transcript
        self.registry.clear(kept["interrupted"], kept["review"])

    async def _track_live(self) -> None:
        assert self.manager is not None
        async for event in self.manager.subscribe():
            if isinstance(event, SessionSpawned):
                self.registry.add(event.session_id, event.transcript_path)
            elif isinstance(event, SessionDone):
                self.registry.remove(event.session_id, self._left_for_review(event.session_id))
            elif isinstance(event, SessionForgotten) or (
                    isinstance(event, Reviewed) and event.ok and event.action in ("merge", "keep", "discard")):
                self.registry.done_with(event.session_id)

    def _interrupted(self, id: str | None, path: str | None = None) -> tuple[str, str, str] | None:
        """``(id, transcript, notes folder)`` of the session a previous server left interrupted
        that ``id`` or ``path`` (its transcript) names; None when none is."""
        for x in self.mgr.sessions:
            if not isinstance(x, EndedSession) or x.status is not SessionStatus.INTERRUPTED:
                continue
            if x.id == id or (id is None and path is not None
                              and os.path.realpath(path) == os.path.realpath(x.transcript_path)):
                return x.id, str(x.transcript_path), str(notes_of(x) or "")
        return None

    def _left_for_review(self, sid: str) -> bool:
        """Whether session ``sid``, which just ended, left its change in its worktree."""
        assert self.manager is not None
        try:
            s = self.manager.get(sid)
        except KeyError:
            return False
        return awaits_review(s) and s.worktree is not None and os.path.isdir(s.worktree.path)

    async def serve_forever(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._stop.set)
        await self._stop.wait()
        await self.shutdown()

    async def shutdown(self) -> None:
        log.info("stopping: ending sessions")
        if self._recovery is not None and not self._recovery.done():
            await self._recovery  # (a thread reading transcripts: it ends by itself)
        for srv in self._servers:
            srv.close()
        if self.manager is not None:
            await self.manager.aclose(reason="server stopped")
        for conn in list(self.conns):
            conn.close()
        await asyncio.to_thread(self.engines.close)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        log.info("stopped")

    # -- connections -------------------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tcp: bool) -> None:
        conn = Connection(reader, writer, tcp)
        if len(self.conns) >= MAX_CONNECTIONS:
            await conn.send(rpc.error(None, rpc.RpcError(rpc.REFUSED, "too many connections")))
            conn.close()
            return
        peer = None if tcp else _peer(writer)
        conn.peer_pid = peer[0] if peer else None
        if not tcp and not _same_user(peer):
            await conn.send(rpc.error(None, rpc.RpcError(rpc.UNAUTHORIZED, "this server belongs to another user")))
            conn.close()
            return
        self.conns.add(conn)
        beat = asyncio.get_running_loop().create_task(self._keepalive(conn))
        try:
            await self._serve(conn)
        finally:
            beat.cancel()
            self.conns.discard(conn)
            conn.close()

    @staticmethod
    async def _keepalive(conn: Connection) -> None:
        """A ``keepalive`` notification every :data:`rpc.KEEPALIVE_S` while a request is in flight
        (``wait``, a memory call warming the model) or events are subscribed: a client's read
        timeout then tells a hung server from a long call (nothing is sent on an idle connection,
        whose client may not be reading)."""
        while not conn.closed:
            await asyncio.sleep(rpc.KEEPALIVE_S)
            if conn.tasks or conn.pump is not None:
                await conn.send(rpc.KEEPALIVE)

    async def _serve(self, conn: Connection) -> None:
        while not conn.closed:
            try:
                line = await conn.reader.readline()
            except ValueError:  # over the line limit
                too_long = rpc.RpcError(rpc.PARSE_ERROR, f"request line over {rpc.MAX_LINE} bytes")
                await conn.send(rpc.error(None, too_long))
                return
            except (ConnectionError, asyncio.IncompleteReadError):
                return
            if not line:
                return
            if not line.endswith(b"\n"):  # a half-sent line and EOF
                await conn.send(rpc.error(None, rpc.RpcError(rpc.PARSE_ERROR, "incomplete request line")))
                return
            if not line.strip():
                continue
            try:
                msg_id, method, params = rpc.parse_request(line)
            except rpc.RpcError as err:
                await conn.send(rpc.error(None, err))
                return
            if not conn.authed:
                token = str(params.get("token", ""))
                if method == "hello" and self.token and secrets.compare_digest(token, self.token):
                    conn.authed = True
                else:
                    refused = rpc.RpcError(rpc.UNAUTHORIZED, "TCP clients must say hello with the server's token")
                    await conn.send(rpc.error(msg_id, refused))
                    return
            task = asyncio.get_running_loop().create_task(self._dispatch(conn, msg_id, method, params))
            conn.tasks.add(task)
            task.add_done_callback(conn.tasks.discard)

    async def _dispatch(self, conn: Connection, msg_id: Any, method: str, params: dict) -> None:
        entry = METHODS.get(method)
        try:
            if entry is None:
                raise rpc.RpcError(rpc.METHOD_NOT_FOUND, f"unknown method {method!r}")
            if not self._recovered.is_set() and method not in NO_RECOVERY_WAIT:
                await self._recovered.wait()
            bound = entry.bind(params)
            if isinstance(bound.get("id"), str):  # a prefix or suffix: the one session it names
                bound["id"] = self._full_id(bound["id"])
                if method in LIVE_ONLY_METHODS and self._interrupted(bound["id"]) is not None:
                    raise rpc.RpcError(rpc.REFUSED, f"session {bound['id']} was interrupted (a server stopped "
                                                    f"while it ran): resume it first — cockpit resume {bound['id']}, "
                                                    "or in the app r, then o on it")
            if isinstance(bound.get("ids"), list):
                bound["ids"] = [self._full_id(i) for i in bound["ids"]]
            result = await entry.func(self, Request(conn, msg_id), **bound)
            if result is not _REPLIED:
                await conn.send(rpc.response(msg_id, result))
        except rpc.RpcError as err:
            await conn.send(rpc.error(msg_id, err))
        except asyncio.CancelledError:
            raise
        except wire.ParamError as exc:  # a parameter of the wrong type or value (one line naming it)
            await conn.send(rpc.error(msg_id, rpc.RpcError(rpc.INVALID_PARAMS, str(exc))))
        except KeyError as exc:
            missing = rpc.RpcError(rpc.NOT_FOUND, str(exc.args[0]) if exc.args else "not found")
            await conn.send(rpc.error(msg_id, missing))
        except (ValueError, TypeError, SessionClosed, WorktreeError, ConfigError, OSError) as exc:
            # OSError: a path the request names that cannot be read (missing, a folder, no
            # permission); FileExistsError: memory.save of a name taken (NoteExistsError)
            await conn.send(rpc.error(msg_id, rpc.RpcError(rpc.REFUSED, str(exc))))
        except Exception as exc:  # a bug: answer, log, stay up
            log.exception("handler %s failed", method)
            await conn.send(rpc.error(msg_id, rpc.RpcError(rpc.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")))

    # -- helpers ------------------------------------------------------------------------------
    def _full_id(self, query: str) -> str:
        """The id of the one session — live, or interrupted by an earlier server — that ``query``
        names (its id, or a prefix/suffix of at least 4 characters); ``query`` itself when it
        names none (the handler says so). Raises KeyError when it names several."""
        if any(s.id == query for s in self.mgr.sessions):
            return query
        found = [(s.id, s.task) for s in self.mgr.sessions if ids.matches(query, s.id)]
        if len(found) > 1:
            raise KeyError(ids.not_one(query, found))
        return found[0][0] if found else query

    @property
    def mgr(self) -> SessionManager:
        assert self.manager is not None
        return self.manager

    def _config(self, given: dict | None, interactive: bool, conn: Connection | None = None) -> RuntimeConfig:
        """The settings a client sent with a spawn or resume (``config``) over the server's own."""
        given = given or {}
        unknown = sorted(k for k in given if k not in CLIENT_CONFIG_KEYS)
        if unknown:  # a setting this server does not know is refused, not dropped
            raise wire.ParamError(f"unknown config key {unknown[0]!r} (known: {', '.join(CLIENT_CONFIG_KEYS)})")
        overrides = {k: (tuple(v) if k in ("allow", "deny", "allow_hosts", "sandbox_hide", "protected", "pass_env")
                         and isinstance(v, list) else v)
                     for k, v in given.items() if k in CLIENT_CONFIG_KEYS and k != "agents"}
        agents = given.get("agents")
        if agents:  # the client's [agents.NAME] tables: commands it runs, so only from this user's socket
            from cockpit.runtime.acp.agents import AgentConfigError, AgentDef

            if conn is not None and conn.tcp:
                raise wire.ParamError("agent definitions are taken from the Unix socket only")
            if not isinstance(agents, list):
                raise wire.ParamError(f"config.agents must be a list, got {agents!r}"[:200])
            try:
                overrides["agents"] = tuple(AgentDef.from_wire(a) for a in agents)
            except AgentConfigError as exc:
                raise wire.ParamError(str(exc)) from None
        overrides["interactive"] = interactive
        cfg = load_config(overrides, env={}, config_file=Path(os.devnull), base=self.config)
        if not (cfg.api_key or cfg.auth_token):  # the key helper as config.toml says now: one fixed
            # after the server started is used at the next spawn, not after a restart
            try:
                helper = read_config_file().get("api_key_helper")
            except ConfigError:
                helper = cfg.api_key_helper
            cfg = dataclasses.replace(cfg, api_key_helper=helper)
        return cfg

    def _engine(self, notes: str | None, index: str | None):
        return self.engines.get(notes, index) if notes else None

    def _need_engine(self, notes: str | None, index: str | None):
        if not notes:
            raise wire.ParamError("notes (an absolute folder path) is required")
        if not Path(notes).is_dir():
            raise rpc.RpcError(rpc.UNAVAILABLE, f"notes folder not found: {notes}")
        return self.engines.get(notes, index)

    async def _ready_engine(self, notes: str | None, index: str | None):
        engine = await asyncio.to_thread(self._need_engine, notes, index)
        await asyncio.to_thread(engine.wait_ready, 120)  # model warm and the first sync done
        return engine

    # -- handlers (each registered in cockpit.server.methods; params checked from the annotations) --
    @method("hello", doc="`token`: TCP clients only (their first request)",
            result="`server`, `protocol` (1), `pid`, `started_at`, `instance` (a random id of this server process: "
                   "a client that reached one server under two names sees it twice), `backends` (the session "
                   "backends `spawn` can run here: `cockpit`, `claude-code` when its extra is installed, `acp:NAME` "
                   "for each installed ACP agent)")
    async def h_hello(self, req: Request, client: str = "", token: str = "") -> dict:
        from cockpit import __version__

        return {"server": "cockpit", "version": __version__, "protocol": rpc.PROTOCOL_VERSION, "pid": os.getpid(),
                "started_at": self.started_at, "instance": self.instance, "python": sys.version.split()[0],
                "backends": list(self.mgr.backends)}

    @method("subscribe", result="`events`: every session's events so far (text coalesced), including sessions a "
            "previous server left `interrupted` — tool output, tool input and approval details over 16,000 "
            "characters cut, and the oldest finished sessions left out when the reply would not fit one line "
            "(their transcripts have everything); then notifications follow, none lost or repeated (in those, "
            "the same fields are cut at 1,000,000 characters, so one event always fits a client's 16 MiB line)")
    async def h_subscribe(self, req: Request) -> object:
        conn = req.conn
        if conn.pump is not None:
            raise rpc.RpcError(rpc.REFUSED, "already subscribed")
        sub = self.mgr.subscribe()  # registered before the snapshot: nothing falls in between
        events = self.mgr.snapshot()
        queue: asyncio.Queue[bytes] = asyncio.Queue()

        async def forward() -> None:
            async for event in sub:
                queue.put_nowait(rpc.notification("event", wire.event_to_json(_cut(event, LIVE_FIELD_CHARS))))
                if queue.qsize() > rpc.MAX_PENDING_EVENTS:  # a client that stopped reading
                    conn.close()
                    return

        async def pump() -> None:
            fwd = asyncio.get_running_loop().create_task(forward())
            try:
                while not conn.closed:
                    await conn.send(await queue.get())
            finally:
                fwd.cancel()
                sub.close()

        # the reply (with the snapshot) goes out before the first event the pump sends
        await conn.send(rpc.response(req.id, {"events": self._snapshot_json(events)}))
        conn.pump = asyncio.get_running_loop().create_task(pump())
        return _REPLIED

    def _snapshot_json(self, events: list[Event]) -> list[dict]:
        """``events`` as JSON for a subscribe reply, small enough for one protocol line: long tool
        output, tool input and approval details are cut (each session's transcript has them whole);
        if that is still too much, the output of the oldest finished sessions is left out (oldest
        first: their pane keeps its state, notes, changes and cost, and says where the output is),
        and only then whole finished sessions, oldest first."""
        budget = rpc.MAX_LINE * 3 // 4  # the reply is one line: it must fit a client's line limit
        rows = [wire.event_to_json(_cut(e)) for e in events]
        sizes = [len(json.dumps(r, ensure_ascii=False, default=str).encode()) for r in rows]
        total = sum(sizes)
        if total <= budget:
            return rows
        live = {s.id for s in self.mgr.sessions if not s.status.is_final}
        whole: dict[str, int] = {}
        output: dict[str, int] = {}
        for e, size in zip(events, sizes, strict=True):
            whole[e.session_id] = whole.get(e.session_id, 0) + size
            if isinstance(e, _OUTPUT):
                output[e.session_id] = output.get(e.session_id, 0) + size
        finished = [sid for sid in whole if sid not in live]  # first seen = oldest
        thin: set[str] = set()
        for sid in finished:
            if total <= budget:
                break
            if output.get(sid):
                thin.add(sid)
                total -= output[sid] - 200  # (the line saying so)
        dropped: set[str] = set()
        for sid in finished:
            if total <= budget:
                break
            dropped.add(sid)
            total -= whole[sid] - (output.get(sid, 0) - 200 if sid in thin else 0)
        if thin or dropped:
            log.warning("snapshot: the output of %d finished session(s) and %d whole one(s) left out to fit "
                        "one line (see their transcripts)", len(thin - dropped), len(dropped))
        out = []
        said: set[str] = set()
        for e, r in zip(events, rows, strict=True):
            sid = e.session_id
            if sid in dropped:
                continue
            if sid in thin and isinstance(e, _OUTPUT):
                if sid not in said:
                    said.add(sid)
                    note = ("[its output is left out here, too long to send with every other session's: r shows "
                            "its transcript]\n")
                    out.append(wire.event_to_json(TextDelta(sid, note)))
                continue
            out.append(r)
        return out

    @method("list", result="`sessions`: each as `get`")
    async def h_list(self, req: Request) -> dict:
        rows = [await self.mgr.describe(s.id) for s in self.mgr.sessions]
        return {"sessions": rows}

    @method("get", result="the session: `id`, `task`, `model`, `backend`, `status`, `workspace`, `cwd`, `placement`, "
            "`worktree` {path, branch, base_commit, base_branch}, `diff` {files, added, removed}, `permission_mode`, "
            "`answer`, `error`, `injected`, `preseed_tokens`, `usage`, `cost_usd` (USD), `requests`, `budget` "
            "{usd, tokens} (its spend cap; null = none), `transcript`, `reviewed` {action, ok, message} (how its "
            "worktree ended: merge / keep / discard; null until then)")
    async def h_get(self, req: Request, id: SessionId) -> dict:
        return await self.mgr.describe(self.mgr.get(id).id)

    @method("forget", result="`{}` — a finished (or interrupted) session leaves the list and every client (a "
            "`SessionForgotten` event); its transcript, worktree and branch stay. Refused (code 2) while it still runs")
    async def h_forget(self, req: Request, id: SessionId) -> dict:
        await self.mgr.forget(id)
        return {}

    @method("quiesce", result="`{}` — before you work in the session's worktree yourself (`cockpit shell`): its "
            "shell and the jobs it left are ended (it lives on). Refused (code 2) while it works")
    async def h_quiesce(self, req: Request, id: SessionId) -> dict:
        await self.mgr.quiesce(id)
        return {}

    @method("spawn", doc="The first params are the fields of `cockpit.runtime.spawn.SpawnSpec` (null = the "
            "config's value; `workspace` is required here and absolute; `max_budget_usd` / `max_budget_tokens`: "
            "the session's spend cap, over the config's). `notes`: the notes folder; `config`: the client's "
            "settings (`api_key`, `auth_token`, `base_url`, `max_tokens`, `max_turns`, `permission_mode`, `allow`, "
            "`deny`, `max_budget_usd`, `max_budget_tokens`, … — never logged; an unknown key is refused)",
            result="the session (as `get`)")
    async def h_spawn(self, req: Request, spec: Annotated[SpawnSpec, FLAT], notes: AbsPath | None = None,
                      index: AbsPath | None = None, config: dict | None = None) -> dict:
        if spec.workspace is None or not os.path.isabs(spec.workspace):
            raise wire.ParamError(f"workspace must be an absolute path (the server does not share the client's "
                                  f"current folder), got {spec.workspace!r}")
        interactive = True if spec.interactive is None else spec.interactive
        cfg = self._config(config, interactive, req.conn)
        engine = await asyncio.to_thread(self._engine, notes, index)
        s = await self.mgr.spawn(dataclasses.replace(spec, interactive=interactive), config=cfg, engine=engine)
        return s.to_dict()

    @method("budget", doc="`id` (a session) or `server: true` (the cap on the sum over every session); to set it: "
            "`usd` and/or `tokens`, `clear` (drop the cap first). Setting a cap wakes the sessions paused at it; "
            "one still at a cap stays paused. Without `usd`/`tokens`/`clear` it only answers",
            result="`scope` (`session`/`server`), `id`, `usd`, `tokens` (the cap; null = none), `spent_usd`, "
                   "`spent_tokens`, `reached`, `status` (the session's), `paused` (ids of the sessions in "
                   "`budget reached` still at a cap), `going_on` (ids of those in `budget reached` a raised cap "
                   "woke: they go on as soon as they run again), `held_by` (a session's: the cap it is at now, "
                   "`session` or `server`; null: none)")
    async def h_budget(self, req: Request, id: SessionId | None = None, server: bool = False,
                       usd: Dollars | None = None, tokens: Count | None = None, clear: bool = False) -> dict:
        """A session's spend cap (``id``) or the server's (``server: true``): set it when ``usd``,
        ``tokens`` or ``clear`` is given (a paused session goes on once no cap is reached), and
        answer the cap with its spend either way."""
        if not server and id is None:
            raise wire.ParamError("id is required (or server: true)")
        sid = None if server else id
        if usd is None and tokens is None and not clear:
            return self.mgr.budget_info(None if sid is None else self.mgr.get(sid).id)
        return await self.mgr.set_budget(sid, usd, tokens, clear=clear)

    @method("send", result="`{}`")
    async def h_send(self, req: Request, id: SessionId, text: NonEmpty) -> dict:
        await self.mgr.send(id, text)
        return {}

    @method("kill", result="`{}`")
    async def h_kill(self, req: Request, id: SessionId, reason: str = "") -> dict:
        await self.mgr.kill(id, reason=reason or "killed by the user")
        return {}

    @method("stop", doc="a session waiting for you ends `done`; one still working is killed with `reason`",
            result="`{}`")
    async def h_end(self, req: Request, id: SessionId, reason: str = "") -> dict:
        await self.mgr.stop(id, reason=reason or "ended by the user")
        return {}

    @method("answer", doc="`request_id` null = the pending one; `scope` `once`/`session`",
            result="`id`, `tool`, `summary`, `suggestion`: what was answered")
    async def h_answer(self, req: Request, id: SessionId, allow: bool, request_id: str | None = None,
                       scope: str = "once", reason: str = "") -> dict:
        session = self.mgr.get(id)
        ask = session.pending
        if request_id is not None and (ask is None or ask.request_id != request_id):
            ask = None
        await self.mgr.answer(id, request_id, allow, scope or "once", reason)
        # what was answered, for the client to say (`cockpit approve` prints it)
        return {"id": session.id, "tool": ask.tool if ask else "", "summary": ask.summary if ask else "",
                "suggestion": ask.suggestion if ask else ""}

    @method("diff", result="`files`: [{path, status, added, removed, patch, old_path, protected}]; `conflicts`: "
            "the files a merge would conflict in now; `unresolved`: those holding conflict markers")
    async def h_diff(self, req: Request, id: SessionId) -> dict:
        return wire.diff_to_json(await self.mgr.diff(id))

    @method("review", doc="`action`: `merge`/`keep`/`discard`; `check` — the check command on the change merged "
            "onto the base: a command from a note not confirmed yet answers `action: \"check-confirm\"` with the "
            "command as `message`, then `check-confirmed` runs it; `send-back` — a conflicting change back to its "
            "session as a follow-up (one that ended is resumed with `config`: the client's settings, as `spawn`'s); "
            "`pr`", result="a `Reviewed` event")
    async def h_review(self, req: Request, id: SessionId, action: NonEmpty, config: dict | None = None) -> dict:
        cfg = self._config(config, True, req.conn) if config is not None else None
        return wire.event_to_json(await self.mgr.review(id, action, config=cfg))

    @method("pr", doc="`title`, `body` empty: drafted; `draft` true: only the draft",
            result="`{title, body}` for a draft, else a `Reviewed` event (`action: \"pr\"`)")
    async def h_pr(self, req: Request, id: SessionId, title: str = "", body: str = "", draft: bool = False) -> dict:
        if draft:
            text = await self.mgr.draft_pull_request(id)
            return {"title": text.title, "body": text.body}
        return wire.event_to_json(await self.mgr.pull_request(id, title, body))

    @method("resume", doc="`id`: a session a previous server left interrupted, or `path`: a transcript (absolute) "
            "or a Claude Code session id", result="the new session")
    async def h_resume(self, req: Request, id: SessionId | None = None, path: NonEmpty | None = None,
                       interactive: bool = True, notes: AbsPath | None = None, index: AbsPath | None = None,
                       config: dict | None = None) -> dict:
        old = self._interrupted(id, path if id is None else None)
        if old is None and path is None:
            raise wire.ParamError("path is required (or the id of an interrupted session)")
        where = old[1] if old else str(path)
        if not old and not os.path.isabs(where) and not looks_like_session_id(where):
            raise wire.ParamError(f"path must be an absolute transcript path or a Claude Code session id, "
                                  f"got {where!r}")
        cfg = self._config(config, interactive, req.conn)
        notes = (old[2] if old else "") or notes
        engine = await asyncio.to_thread(self.engines.get, str(notes), index) if notes else None
        s = await self.mgr.resume(where, interactive=interactive, config=cfg, engine=engine)
        if old:  # resumed: it leaves the list and every client's grid, as when closed
            await self.mgr.forget(old[0])
        return s.to_dict()

    @method("transcripts", result="`transcripts`: every transcript in this server's transcript folder (live and "
            "past sessions), newest first: `path`, `session_id`, `task`, `model`, `started_at`, `status` (null: no "
            "end recorded), `cost_usd`, `mtime`")
    async def h_transcripts(self, req: Request) -> dict:
        infos = await asyncio.to_thread(list_transcripts, self.config.resolved_sessions_dir())
        return {"transcripts": [transcript_row(i) for i in infos]}

    @method("transcript", doc="`path`: one of `transcripts` (a file of this server's transcript folder)",
            result="`events`: the transcript's events (long tool output, input and approval details cut as in "
                   "`subscribe`'s snapshot; when they would not fit one line, the first ones and `truncated`: how "
                   "many were left out), `warnings`: damaged lines skipped")
    async def h_transcript(self, req: Request, path: NonEmpty) -> dict:
        folder = self.config.resolved_sessions_dir().resolve()
        file = Path(path)
        if not file.is_absolute() or file.suffix != ".jsonl" or file.resolve().parent != folder:
            raise wire.ParamError(f"path must be a transcript of this server's folder {folder} (see transcripts), "
                                  f"got {path!r}")
        warnings: list[str] = []
        events = await asyncio.to_thread(read_events, file, warnings)
        rows, size, budget = [], 0, rpc.MAX_LINE * 3 // 4
        for event in events:
            row = wire.event_to_json(_cut(event))
            size += len(json.dumps(row, ensure_ascii=False, default=str).encode())
            if size > budget:
                break
            rows.append(row)
        return {"events": rows, "warnings": warnings[:100], "truncated": len(events) - len(rows)}

    @method("continue", result="the new session (context full → a fresh session with a summary)")
    async def h_continue(self, req: Request, id: SessionId) -> dict:
        return (await self.mgr.continue_fresh(id)).to_dict()

    @method("wait", result="`sessions` once all are final (or idle)")
    async def h_wait(self, req: Request, ids: list[SessionId], until: Literal["final", "idle"] = "final") -> dict:
        """Wait until the sessions ``ids`` are final (``until`` "final") or idle (``until`` "idle")."""
        sessions = [self.mgr.get(i) for i in ids]
        sub = self.mgr.subscribe()
        try:
            def done() -> bool:
                return all(s.status.is_final if until == "final" else s.is_idle for s in sessions)
            while not done():
                await anext(sub)
        finally:
            sub.close()
        return {"sessions": [await self.mgr.describe(s.id) for s in sessions]}

    @method("totals", result="`usage`, `cost_usd` of every response")
    async def h_totals(self, req: Request) -> dict:
        usage, cost = self.mgr.totals()
        return {"usage": {**usage.__dict__, "total": usage.total}, "cost_usd": cost}

    # memory: `notes` names the engine (one per notes folder), `index` its index file
    @method("memory.search", result="`hits`")
    async def h_mem_search(self, req: Request, query: NonEmpty, notes: AbsPath | None = None,
                           index: AbsPath | None = None, top_k: int | None = None) -> dict:
        engine = await self._ready_engine(notes, index)
        hits = await asyncio.to_thread(engine.search, query, top_k or 5)
        return {"hits": [h.to_dict() for h in hits]}

    @method("memory.preseed", doc="`ready_timeout` (seconds): when the engine is not warm by then the reply is "
            "`{\"text\": \"\", \"hits\": [], \"warming\": true}` at once (the hook's use)",
            result="the block: `text`, `tokens`, `hits`, `considered` …")
    async def h_mem_preseed(self, req: Request, query: NonEmpty, notes: AbsPath | None = None,
                            index: AbsPath | None = None, top_k: int | None = None,
                            ready_timeout: float | None = None) -> dict:
        if ready_timeout is not None:  # the hook: no block rather than a wait for the model
            engine = await asyncio.to_thread(self._need_engine, notes, index)
            if not await asyncio.to_thread(engine.wait_ready, min(120.0, max(0.0, ready_timeout))):
                return {"text": "", "hits": [], "considered": [], "warming": True}
        engine = await self._ready_engine(notes, index)
        pre = await asyncio.to_thread(engine.build_preseed, query, top_k or None)
        return pre.to_dict()

    @method("memory.save", result="`path`")
    async def h_mem_save(self, req: Request, name: NonEmpty, description: NonEmpty, notes: AbsPath | None = None,
                         index: AbsPath | None = None, body: str = "", priority: bool = False) -> dict:
        engine = await asyncio.to_thread(self._need_engine, notes, index)
        path = await asyncio.to_thread(engine.save, name, description, body, priority)
        return {"path": str(path)}

    @method("memory.index", result="the sync report")
    async def h_mem_index(self, req: Request, notes: AbsPath | None = None, index: AbsPath | None = None) -> dict:
        opened = notes is not None and self.engines.existing(notes, index) is None
        engine = await asyncio.to_thread(self._need_engine, notes, index)
        report = await asyncio.to_thread(engine.sync)
        first = getattr(engine, "first_report", None)
        if opened and first is not None and first is not report and not report.changed:
            # the engine this request opened was synced by its watcher first: that sync is what
            # the request did (the second found nothing, and said "up to date")
            return first.to_dict()
        return report.to_dict()

    @method("memory.status", result="the engine's status, `index_path`, `notes_dir`, `ready`")
    async def h_mem_status(self, req: Request, notes: AbsPath | None = None, index: AbsPath | None = None) -> dict:
        # an engine the server already has answers even while its folder is missing: its watcher
        # says so ("missing"), which is what an attached app shows in its header
        known = self.engines.existing(notes, index) if notes else None
        engine = known if known is not None else await asyncio.to_thread(self._need_engine, notes, index)
        st = await asyncio.to_thread(engine.status)
        return {**wire.to_plain(st), "index_path": str(st.index_path), "notes_dir": str(st.notes_dir),
                "ready": bool(engine.ready)}

    @method("memory.lint", result="`issues`")
    async def h_mem_lint(self, req: Request, notes: AbsPath | None = None, index: AbsPath | None = None) -> dict:
        engine = await asyncio.to_thread(self._need_engine, notes, index)
        return {"issues": [i.to_dict() for i in await asyncio.to_thread(engine.lint)]}

    @method("memory.wait_ready", result="`ready`")
    async def h_mem_wait_ready(self, req: Request, notes: AbsPath | None = None, index: AbsPath | None = None,
                               timeout: float | None = None) -> dict:
        engine = await asyncio.to_thread(self._need_engine, notes, index)
        ok = await asyncio.to_thread(engine.wait_ready, timeout)
        return {"ready": bool(ok)}

    @method("memory.get", result="the whole note `{name, description, body, priority, type, path}`")
    async def h_mem_get(self, req: Request, name: NonEmpty, notes: AbsPath | None = None,
                        index: AbsPath | None = None) -> dict:
        engine = await self._ready_engine(notes, index)
        note = await asyncio.to_thread(engine.get, name)
        if note is None:
            raise rpc.RpcError(rpc.NOT_FOUND, f"no note named {name!r}")
        return note

    @method("memory.list", result="`notes`: `[{name, description, priority, path}]`")
    async def h_mem_list(self, req: Request, notes: AbsPath | None = None, index: AbsPath | None = None) -> dict:
        engine = await self._ready_engine(notes, index)
        return {"notes": await asyncio.to_thread(engine.list_notes)}

    @method("server.status", result="`pid`, `uptime_s`, `sessions` by state, `clients` (processes connected), "
            "`connections`, `socket`, `engines`, `log`, "
            "`prepared` (`modules`: a session's modules loaded; `model`: the embedding model warming, ready, error "
            "or not started)")
    async def h_status(self, req: Request) -> dict:
        counts: dict[str, int] = {}
        for s in self.mgr.sessions:
            counts[s.status.value] = counts.get(s.status.value, 0) + 1
        return {"pid": os.getpid(), "uptime_s": round(time.time() - self.started_at, 1), "sessions": counts,
                # processes connected (an app holds two connections: its calls and its events)
                "clients": len({c.peer_pid or id(c) for c in self.conns}), "connections": len(self.conns),
                "socket": str(self.socket_path),
                "engines": self.engines.describe(), "log": str(paths.log_path()), "prepared": prepared()}

    @method("server.stop", result="`{\"stopping\": true}`, then a clean stop")
    async def h_stop(self, req: Request) -> dict:
        asyncio.get_running_loop().call_soon(self._stop.set)
        return {"stopping": True}


# a session's output: what a finished session's snapshot leaves out first when it is too long
_OUTPUT = (TextDelta, ToolCall, ToolResult, ConversationMessage, UserMessage, ApprovalRequested, ApprovalResolved,
           BackendRecord, MemoryMiss, InstructionsLoaded, RuleApplied, Retrying)


def _cut(event: Event, limit: int = SNAPSHOT_FIELD_CHARS) -> Event:
    """``event`` with its long tool output / input / approval detail cut to ``limit`` characters
    (a line saying how many more the transcript holds)."""
    def cut(value: Any) -> Any:
        if isinstance(value, str) and len(value) > limit:
            more = len(value) - limit
            return value[:limit] + f"\n[… {more:,} more characters in the transcript]"
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        if isinstance(value, list):
            return [cut(v) for v in value]
        return value

    if isinstance(event, ToolResult):
        return dataclasses.replace(event, content=cut(event.content))
    if isinstance(event, ToolCall):
        return dataclasses.replace(event, input=cut(event.input))
    if isinstance(event, ApprovalRequested):
        return dataclasses.replace(event, detail=cut(event.detail))
    if isinstance(event, ConversationMessage):
        return dataclasses.replace(event, content=cut(event.content))
    return event


def _peer(writer: asyncio.StreamWriter) -> tuple[int, int] | None:
    """The (pid, uid) of a Unix socket's peer; None where the platform does not say."""
    sock = writer.get_extra_info("socket")
    opt = getattr(socket, "SO_PEERCRED", None)
    if sock is None or opt is None:
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return None
    pid, uid, _gid = struct.unpack("3i", creds)
    return pid, uid


def _same_user(peer: tuple[int, int] | None) -> bool:
    # no peer credentials on this platform: the 0600 socket in a 0700 folder is the guard
    return peer is None or peer[1] == os.getuid()


PREWARM_MODULES = (
    "anthropic",  # the model calls: ≈ 1 CPU-s of imports a first session otherwise waits for
    "cockpit.runtime.model_call", "cockpit.runtime.session", "cockpit.runtime.sandbox",
    "cockpit.runtime.worktree", "memory.engine",
)


def prewarm() -> None:
    """What every first session needs, loaded once the server listens instead of when the first
    spawn asks for it: the embedding model (shared by every notes folder's engine) and the
    modules of a session and its model calls. Best effort: a failure here is met again, and
    reported, where the session needs the piece."""
    import importlib

    global _PREWARMED_MODEL
    try:
        from memory.embedder import get_embedder

        _PREWARMED_MODEL = get_embedder()  # the one every engine of the default model shares
        _PREWARMED_MODEL.start()  # loads in its own thread
    except Exception:  # pragma: no cover - reported by the first engine that needs it
        log.debug("prewarm: embedder", exc_info=True)
    for name in PREWARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # pragma: no cover - an optional extra missing, say
            log.debug("prewarm: %s", name, exc_info=True)
    PREWARMED.set()


PREWARMED = threading.Event()  # prewarm's imports are done (the model may still be loading)
_PREWARMED_MODEL: Any = None  # the embedder prewarm started loading


def prepared() -> dict:
    """What ``server.status`` says of :func:`prewarm`: ``modules`` imported, the embedding
    ``model``'s state (warming | ready | error; "not started" before prewarm asked for it)."""
    model = _PREWARMED_MODEL.state if _PREWARMED_MODEL is not None else "not started"
    return {"modules": PREWARMED.is_set(), "model": model}


def run_server(listen: tuple[str, int] | None = None, ready_fd: int | None = None) -> int:
    """Run a server in this process until SIGTERM/SIGINT or ``server.stop``. Writes "ready\\n" to
    ``ready_fd`` once it listens (how an auto-starting client knows). Returns an exit code."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx2", "httpx", "httpcore", "sentence_transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    async def main() -> int:
        try:
            config = load_config({"interactive": True})
        except ConfigError as exc:
            print(f"cockpit server: error: {exc}", file=sys.stderr)
            return 2
        # a key exported where `cockpit server run` was typed: in the config now, out of the
        # environment; and neither environ nor memory readable by the sessions' shells
        if not keyguard.guard_process():
            log.warning("could not make the server undumpable (prctl): its sessions' shells may read its memory")
        server = Server(config, listen)
        try:
            await server.start()
        except AlreadyRunning as exc:
            print(f"cockpit server: {exc}", file=sys.stderr)
            return 3
        except OSError as exc:
            print(f"cockpit server: cannot listen: {exc}", file=sys.stderr)
            return 2
        log.info("listening on %s (pid %d)", server.socket_path, os.getpid())
        if server.token:
            host, port = server.listen  # type: ignore[misc]
            print(f"cockpit server: also listening on {host}:{port}; TCP token (shown once): {server.token}",
                  flush=True)
        if ready_fd is not None:
            with contextlib.suppress(OSError):
                os.write(ready_fd, b"ready\n")
                os.close(ready_fd)
        if os.environ.get("COCKPIT_PREWARM", "1") != "0":
            threading.Thread(target=prewarm, name="prewarm", daemon=True).start()
        await server.serve_forever()
        return 0

    return asyncio.run(main())


__all__ = ["Server", "run_server", "AlreadyRunning"]
