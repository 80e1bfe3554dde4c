"""Clients of the Cockpit server, and starting it the way tmux does.

- :func:`ensure_server`: connect to the running server, or start one in the background (detached,
  its own session, output to ``server.log`` in the data folder) and wait for it to say it is
  ready (a pipe it writes "ready" to — no polling, no sleeps). Raises :class:`ServerError`.
- :class:`AsyncClient`: requests and the subscribed event stream, for asyncio programs (the TUI,
  ``cockpit run``, ``cockpit attach``).
- :class:`BlockingClient`: requests only, thread-safe, for blocking code (the memory commands, the
  remote memory engine used from worker threads, the MCP server).

Timeouts: connecting gives up after :data:`CONNECT_TIMEOUT_S`; a read that sees nothing for
:func:`read_timeout` seconds (``$COCKPIT_SERVER_TIMEOUT``, default :data:`READ_TIMEOUT_S`) while
a request is in flight or events are subscribed raises :class:`ServerHung` — a stopped (SIGSTOP)
or hung server still accepts connections (the kernel does), so a connect alone proves nothing.
Calls that legitimately wait long (``wait``, a memory call while the model loads, the event
stream) stay alive on the server's ``keepalive`` notifications (every :data:`rpc.KEEPALIVE_S`).

Errors from the server arrive as :class:`RemoteError` (``code`` as in :mod:`cockpit.server.rpc`);
"not found" (code 1) is also a ``KeyError`` and "refused" (code 2) also a ``ValueError``, the
errors the in-process runtime raises, so a client of ``Runtime`` handles both the same way.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - asyncio is imported where it is used: the hook must start fast
    import asyncio

    from cockpit.server.transport import Connection, Transport

from cockpit.server import paths, rpc

START_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 30.0  # thirty keepalives missed: a server busy on a loaded machine is not a hung one


def read_timeout() -> float:
    """Seconds a client waits for a line from the server (``$COCKPIT_SERVER_TIMEOUT``)."""
    try:
        value = float(os.environ.get("COCKPIT_SERVER_TIMEOUT") or READ_TIMEOUT_S)
    except ValueError:
        return READ_TIMEOUT_S
    return value if value > 0 else READ_TIMEOUT_S


class ServerError(RuntimeError):
    """The server cannot be reached or started (one line for the user)."""


class ServerHung(ServerError):
    """The server accepted the connection but does not answer (stopped with SIGSTOP, or hung)."""


def hung_message(path: Path | str | None = None) -> str:
    if isinstance(path, str) and path.startswith("host "):  # a remote server, through ssh
        import shlex

        name = path.removeprefix("host ").split(" ", 1)[0]
        return (f"{path} did not answer for {read_timeout():.0f} s (the connection or the remote server hung); "
                f"try again, or `cockpit doctor --host {shlex.quote(name)}`")
    from cockpit.host_cli import hint  # (run whole on a host: its hints name it, to work as copied)

    return (f"the Cockpit server at {path or paths.socket_path()} does not answer (stopped or hung?) — "
            f"`cockpit server stop --force{hint(None)}` ends it (its sessions end as after a crash: `interrupted`)")


def server_pid() -> int | None:
    """The pid of the server holding this data folder's lock (None when no server holds it)."""
    import fcntl

    lock = paths.lock_path()
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # held: a server runs; its pid is in the file
            try:
                return int(os.read(fd, 32).split()[0])
            except (ValueError, IndexError, OSError):
                return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def stopped_pid(path: Path | str | None = None) -> int | None:
    """The pid of this data folder's server when it is stopped (SIGSTOP, Ctrl-Z: state ``T`` in
    ``/proc``), else None. A stopped server's socket still accepts (the kernel does), so without
    this a client would learn it only from its read timeout. Only for the default socket (the
    lock names the server of this data folder); None where ``/proc`` is missing."""
    if path is not None and Path(path) != paths.socket_path():
        return None
    pid = server_pid()
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state = stat.rpartition(")")[2].split()[:1]
    return pid if state and state[0] in ("T", "t") else None


def _late_message(path: Path | str) -> str:
    who = path if str(path).startswith("host ") else f"the Cockpit server at {path}"
    return f"{who} did not answer in time (busy, stopped or hung?)"


def stopped_message(pid: int, host: str | None = None) -> str:
    """What to do about a stopped server; ``host``: the one it runs on, as another machine's
    command line names it (default: the host a command run whole there is told of, else none)."""
    from cockpit.host_cli import hint, hinted_host

    host = host or hinted_host()
    where = f" on {host}" if host else ""
    return (f"the Cockpit server (pid {pid}) is stopped (SIGSTOP or Ctrl-Z) — `kill -CONT {pid}`{where} lets it go on; "
            f"`cockpit server stop --force{hint(host)}` ends it (its sessions end as after a crash: `interrupted`)")


def _refuse_stopped(path: Path) -> None:
    pid = stopped_pid(path)
    if pid is not None:
        raise ServerHung(stopped_message(pid))


def _hung(path: Path | str | None) -> ServerHung:
    """The error for a server that does not answer at ``path``: named stopped, with what to do,
    when its process is (SIGSTOP: its socket may still take or queue connections), else hung."""
    pid = stopped_pid(path)  # (None for any path but this data folder's socket: a host's, say)
    return ServerHung(stopped_message(pid) if pid is not None else hung_message(path))


class RemoteError(RuntimeError):
    """An error reply: ``code`` and ``message``."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:  # the message as it is (KeyError's str would quote it)
        return self.message


class RemoteNotFound(RemoteError, KeyError):
    """Code 1 (no such session or approval): a ``KeyError``, as ``SessionManager`` raises."""


class RemoteRefused(RemoteError, ValueError):
    """Code 2 (the state or a value does not allow it): a ``ValueError``, as ``SessionManager`` raises."""


def remote_error(code: int, message: str) -> RemoteError:
    """The exception for an error reply (:class:`RemoteNotFound`, :class:`RemoteRefused` or
    :class:`RemoteError`)."""
    kind = {rpc.NOT_FOUND: RemoteNotFound, rpc.REFUSED: RemoteRefused}.get(code, RemoteError)
    return kind(code, message)


def _probe(path: Path, timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """True when a server accepts connections on ``path`` (a stopped server still does: the
    kernel accepts for it; only a request tells)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(path))
        return True
    except (FileNotFoundError, ConnectionRefusedError, OSError):
        return False
    finally:
        s.close()


def server_running() -> bool:
    return _probe(paths.socket_path())


def start_server(timeout: float = START_TIMEOUT_S, listen: str | None = None, _retry: bool = False) -> int:
    """Start ``cockpit server run`` in the background and wait until it listens. Returns its pid,
    or -1 when a server started at the same moment by another client won (then it listens when
    this returns). Raises ServerError with the log's last lines when none comes up."""
    import select
    import subprocess

    log = paths.log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    r, w = os.pipe()
    cmd = [sys.executable, "-m", "cockpit", "server", "run", "--ready-fd", str(w)]
    if listen:
        cmd += ["--listen", listen]
    # the key comes with each spawn from its client; kept out of the server's own environment, a
    # session's shell cannot read it from its parent's /proc/<pid>/environ
    from cockpit.runtime.keyguard import KEY_VARS

    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, pass_fds=(w,),
                                start_new_session=True, close_fds=True, cwd="/", env=env)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], timeout)
        data = os.read(r, 64) if ready else b""
    finally:
        os.close(r)
    if data.startswith(b"ready"):
        return proc.pid
    try:  # the pipe closed without "ready": the process is exiting (poll() alone could run first)
        code = proc.wait(timeout=5.0 if ready else 0.1)
    except subprocess.TimeoutExpired:
        code = None
    if code == 3:  # another server holds the lock (a concurrent start won the race): wait for it
        if _wait_listening(time.monotonic() + timeout):
            return -1
        if not _retry:  # it died before listening: try once more ourselves
            return start_server(timeout, listen, _retry=True)
        raise ServerError(f"another Cockpit server took the lock but never listened on {paths.socket_path()}; "
                          f"see {log}")
    tail = ""
    try:
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
    except OSError:
        pass
    if code is None:
        raise ServerError(f"the Cockpit server (pid {proc.pid}) is still starting after {timeout:.0f} s "
                          f"without listening; see {log}: {tail}")
    raise ServerError(f"the Cockpit server exited with code {code} before it listened; see {log}: {tail}")


def _wait_listening(deadline: float) -> bool:
    """Wait until a server listens on the socket (True), or no server holds the lock any more
    (False: the one that won the race died), or ``deadline``."""
    sock = paths.socket_path()
    delay = 0.005
    while time.monotonic() < deadline:
        if _probe(sock):
            return True
        if server_pid() is None and not _probe(sock):
            return False
        time.sleep(delay)  # the winner binds within milliseconds of taking the lock
        delay = min(delay * 2, 0.1)
    return False


def ensure_server(start: bool = True) -> Path:
    """The socket of a running server, starting one when ``start`` (else ServerError)."""
    sock = paths.socket_path()
    if _probe(sock):
        return sock
    if not start:
        raise ServerError("no Cockpit server is running")
    start_server()
    if not _probe(sock):
        raise ServerError(f"the Cockpit server started but does not answer on {sock}")
    return sock


def connect_timeout_for(transport: Transport) -> float:
    """Seconds to open a connection: the transport's own (an ssh host's ``timeout``), else
    :data:`CONNECT_TIMEOUT_S`."""
    return float(getattr(transport, "connect_timeout", CONNECT_TIMEOUT_S))


def _check(msg: dict) -> Any:
    """The result of a reply, or its error raised (its message one line: no escape sequences
    or control characters from a peer reach a terminal or a label)."""
    if "error" in msg and msg["error"] is not None:
        from cockpit.textsafe import flat

        err = msg["error"]
        if not isinstance(err, dict):  # not JSON-RPC's {"code", "message"}: a broken peer's
            raise RemoteError(rpc.INTERNAL_ERROR, flat(err))
        code = err.get("code", rpc.INTERNAL_ERROR)
        code = code if isinstance(code, int) and not isinstance(code, bool) else rpc.INTERNAL_ERROR
        raise remote_error(code, flat(err.get("message", "error")))
    return msg.get("result")


def decode(line: bytes, where: Path | str) -> dict:
    """One line of the protocol as its JSON object. Anything else — not JSON, not UTF-8, nested
    past the parser's depth, not an object, longer than :data:`rpc.MAX_LINE` — is a
    :class:`ServerError` naming ``where`` (a broken or hostile peer, e.g. a host behind ssh)."""
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        msg = None
    if not isinstance(msg, dict):
        raise ServerError(f"{where} sent a message that is not the Cockpit protocol "
                          f"(a line of {len(line)} bytes that is no JSON object): is it a Cockpit server?")
    return msg


def _connect(path: Path, timeout: float) -> socket.socket:
    """A connected socket to the server at ``path``, within ``timeout`` seconds. A Unix socket
    whose listen queue is full answers EAGAIN at once (a flood of clients): tried again until the
    time is up. Raises ServerHung (no answer in time) or ServerError."""
    end = time.monotonic() + timeout
    pause = 0.005
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(max(0.05, end - time.monotonic()))
        try:
            sock.connect(str(path))
        except TimeoutError:
            sock.close()
            raise _hung(path) from None
        except BlockingIOError:  # EAGAIN: the queue is full for now
            sock.close()
            if time.monotonic() + pause >= end:
                raise _hung(path) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
            continue
        except OSError as exc:
            sock.close()
            raise ServerError(f"cannot connect to the Cockpit server at {path}: {exc}") from None
        try:
            _refuse_other_user(sock, path)
            _refuse_stopped(path)
        except ServerError:
            sock.close()
            raise
        return sock


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket (None where the platform does
    not say: no ``SO_PEERCRED``)."""
    import struct

    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return None
    return struct.unpack("3i", creds)[1]


def _refuse_other_user(sock: socket.socket, path: Path | str) -> None:
    """A server socket another user serves (a ``[hosts.NAME] socket`` in a shared folder such as
    /tmp, taken first) is refused: each spawn sends the API key to the server."""
    uid = peer_uid(sock)
    if uid is not None and uid != os.getuid():
        raise ServerError(f"{path} is served by another user (uid {uid}), not by you: refusing it "
                          "(each spawn sends your API key to the server)")


class BlockingClient:
    """One socket, one request at a time (a lock makes it safe across threads)."""

    def __init__(self, path: Path | None = None, timeout: float | None = None,
                 connect_timeout: float = CONNECT_TIMEOUT_S, connection: Connection | None = None):
        """``timeout``: seconds a read waits for a line (default :func:`read_timeout`; the server
        sends keepalives during long calls). ``deadline`` (a ``time.monotonic()`` value, or None)
        bounds each whole call (the hook's). ``connection``: one a transport opened (then
        ``path`` is unused; see :meth:`over`)."""
        self.path: Path | str = connection.where if connection is not None else Path(path or paths.socket_path())
        self.timeout = read_timeout() if timeout is None else timeout
        self.deadline: float | None = None
        self._broken: ServerError | None = None
        self.connection = connection  # what a transport opened (its ssh child ends with close())
        self._sock = connection.sock if connection is not None else _connect(Path(self.path), connect_timeout)
        self._sock.settimeout(self.timeout)
        self._file = self._sock.makefile("rb")
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def call(self, method: str, **params: Any) -> Any:
        """Send a request, return its result. Raises RemoteError, ServerError (connection lost),
        ServerHung (no line, not even a keepalive, within the read timeout or the deadline)."""
        with self._lock:
            if self._broken is not None:
                raise self._broken
            msg_id = next(self._ids)
            deadline = self.deadline
            if method in rpc.QUICK_METHODS:
                quick = time.monotonic() + 2 * self.timeout
                deadline = quick if deadline is None else min(deadline, quick)
            try:
                self._sock.settimeout(self._wait(deadline))
                self._sock.sendall(rpc.request(msg_id, method, params))
                while True:
                    self._sock.settimeout(self._wait(deadline))
                    line = self._file.readline(rpc.MAX_LINE + 1)
                    if not line:
                        raise ServerError("the Cockpit server closed the connection")
                    try:
                        msg = decode(line, self.path)
                    except ServerError as exc:  # what follows on this stream cannot be trusted either
                        self._broken = exc
                        raise
                    if msg.get("id") == msg_id:
                        return _check(msg)
            except TimeoutError:
                late = deadline is not None and time.monotonic() >= deadline
                self._broken = ServerHung(_late_message(self.path)) if late else _hung(self.path)
                raise self._broken from None
            except OSError as exc:
                raise ServerError(f"lost the Cockpit server: {exc}") from None

    @classmethod
    def over(cls, transport: Transport, timeout: float | None = None,
             connect_timeout: float | None = None) -> BlockingClient:
        """A client on a new connection of ``transport`` (a local socket, or ssh to a host)."""
        return cls(timeout=timeout, connection=transport.connect(
            connect_timeout if connect_timeout is not None else connect_timeout_for(transport)))

    def _wait(self, deadline: float | None) -> float:
        """The socket timeout for the next read: the read timeout, cut to what ``deadline`` leaves."""
        if deadline is None:
            return self.timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return min(self.timeout, left)

    def close(self) -> None:
        try:
            self._file.close()
            self._sock.close()
        except OSError:
            pass
        if self.connection is not None:
            self.connection.close()

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


READ_BATCH = 64  # lines read in one go at most (more are waiting: the loop runs others in between)


class AsyncClient:
    """Requests and events over one connection. ``await AsyncClient.connect(path)``; then
    ``await call(method, **params)``; ``events`` is an asyncio.Queue of event payloads
    (``{"type", "data"}``) once ``subscribe`` was called; None is put when the connection ends."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: Path | str | None = None,
                 timeout: float | None = None, connection: Connection | None = None):
        import asyncio

        self.reader = reader
        self.writer = writer
        self.path = path or paths.socket_path()
        self.connection = connection  # what a transport opened (its ssh child ends with close())
        self.timeout = read_timeout() if timeout is None else timeout
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self.events: asyncio.Queue[dict | None] = asyncio.Queue()
        self.closed = False
        self.subscribed = False
        self.error: ServerError | None = None  # why the connection ended, when the server hung
        self._last = asyncio.get_running_loop().time()  # the last line read or request sent
        self._task = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, path: Path | None = None, timeout: float | None = None) -> AsyncClient:
        import asyncio

        where = Path(path or paths.socket_path())
        end = time.monotonic() + CONNECT_TIMEOUT_S
        pause = 0.005
        while True:
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_unix_connection(str(where), limit=rpc.MAX_LINE),
                    max(0.05, end - time.monotonic()))
                try:
                    _refuse_other_user(writer.get_extra_info("socket"), where)
                except ServerError:
                    writer.close()
                    raise
                if stopped_pid(where) is not None:
                    writer.close()
                    _refuse_stopped(where)
                return cls(reader, writer, where, timeout)
            except TimeoutError:
                raise _hung(where) from None
            except BlockingIOError:  # EAGAIN: the server's listen queue is full for now
                if time.monotonic() + pause >= end:
                    raise _hung(where) from None
                await asyncio.sleep(pause)
                pause = min(pause * 2, 0.1)
            except OSError as exc:
                raise ServerError(f"cannot connect to the Cockpit server: {exc}") from None

    @classmethod
    async def over(cls, transport: Transport, timeout: float | None = None) -> AsyncClient:
        """A client on a new connection of ``transport`` (opened in a worker thread: an ssh
        handshake does not stall the event loop)."""
        import asyncio

        conn = await asyncio.to_thread(transport.connect, connect_timeout_for(transport))
        try:
            reader, writer = await asyncio.open_unix_connection(sock=conn.sock, limit=rpc.MAX_LINE)
        except OSError as exc:
            conn.close()
            raise ServerError(f"cannot use the connection to {conn.where}: {exc}") from None
        return cls(reader, writer, conn.where, timeout, connection=conn)

    async def _read(self) -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        backlog = 0
        read = 0
        try:
            while True:
                waiting = bool(self._pending) or self.subscribed  # a line (at least a keepalive) is due
                wait = self.timeout - (loop.time() - self._last) if waiting else self.timeout
                try:
                    # a timeout scope, not wait_for: no task per line, so the lines already
                    # received are read in one go (the app folds the events they carry together)
                    async with asyncio.timeout(max(wait, 0.01)):
                        line = await self.reader.readline()
                    read += 1
                    if read % READ_BATCH == 0:  # a backlog: let the app draw between batches
                        await asyncio.sleep(0)
                except TimeoutError:  # readline keeps a partial line in the buffer when cancelled
                    if (self._pending or self.subscribed) and loop.time() - self._last >= self.timeout:
                        self.error = _hung(self.path)
                        break
                    continue
                self._last = loop.time()
                if not line:
                    break
                try:
                    msg = decode(line, self.path)
                except ServerError as exc:  # a broken peer: the connection ends, saying why
                    self.error = exc
                    break
                msg_id = msg.get("id")
                if isinstance(msg_id, int) and msg_id in self._pending:
                    fut = self._pending.pop(msg_id)
                    if not fut.done():
                        fut.set_result(msg)
                elif msg.get("method") == "event":
                    # bytes queued since the reader last caught up: a bound on what it has not read
                    backlog = len(line) if self.events.empty() else backlog + len(line)
                    if backlog > rpc.MAX_PENDING_BYTES or self.events.qsize() >= rpc.MAX_PENDING_EVENTS:
                        self.error = ServerError(f"{self.path} sent events faster than they could be read "
                                                 f"({self.events.qsize()} waiting): the connection was closed")
                        break
                    self.events.put_nowait(msg.get("params"))
        except (ConnectionError, ValueError, asyncio.IncompleteReadError):
            pass
        finally:
            self.closed = True
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(self.error or ServerError("the Cockpit server closed the connection"))
            self._pending.clear()
            self.events.put_nowait(None)

    async def call(self, method: str, **params: Any) -> Any:
        if self.closed:
            raise self.error or ServerError("the connection to the Cockpit server is closed")
        import asyncio

        msg_id = next(self._ids)
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        if not self._pending:
            self._last = asyncio.get_running_loop().time()
        self._pending[msg_id] = fut
        self.writer.write(rpc.request(msg_id, method, params))
        try:
            await asyncio.wait_for(self.writer.drain(), self.timeout)
        except TimeoutError:
            self._pending.pop(msg_id, None)
            raise _hung(self.path) from None
        if method in rpc.QUICK_METHODS:
            try:
                msg = await asyncio.wait_for(fut, 2 * self.timeout)
            except TimeoutError:
                self._pending.pop(msg_id, None)
                raise ServerHung(_late_message(self.path)) from None
        else:
            msg = await fut
        result = _check(msg)
        if method == "subscribe":
            self.subscribed = True
        return result

    async def close(self) -> None:
        self.closed = True
        self._task.cancel()
        try:
            self.writer.close()
            await self.writer.wait_closed()
        except Exception:
            pass
        if self.connection is not None:
            import asyncio

            await asyncio.to_thread(self.connection.close)


def wait_for_stop(pid: int, timeout: float = 30.0) -> bool:
    """True once process ``pid`` has exited (checked with signal 0)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)  # our own child (we started it): reap it
            if done == pid:
                return True
        except ChildProcessError:
            pass
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if _zombie(pid):  # dead, not yet reaped by its parent (another process's child)
            return True
        time.sleep(0.05)
    return False


def _zombie(pid: int) -> bool:
    """True when ``pid`` has exited whole (a zombie whose threads are gone too: only then are its
    sockets closed) and waits for its parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            if f.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                return False
        return len(os.listdir(f"/proc/{pid}/task")) <= 1
    except (OSError, IndexError):
        return False
