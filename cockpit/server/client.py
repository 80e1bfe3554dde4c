"""Clients of the Cockpit server, and starting it the way tmux does.

- :func:`ensure_server`: connect to the running server, or start one in the background (detached,
  its own session, output to ``server.log`` in the data folder) and wait for it to say it is
  ready (a pipe it writes "ready" to — no polling, no sleeps). Raises :class:`ServerError`.
- :class:`AsyncClient`: requests and the subscribed event stream, for asyncio programs (the TUI,
  ``cockpit run``, ``cockpit attach``).
- :class:`BlockingClient`: requests only, thread-safe, for blocking code (the memory commands, the
  remote memory engine used from worker threads, the MCP server).

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

from cockpit.server import paths, rpc

START_TIMEOUT_S = 60.0


class ServerError(RuntimeError):
    """The server cannot be reached or started (one line for the user)."""


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


def _probe(path: Path) -> bool:
    """True when a server accepts connections on ``path``."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2.0)
    try:
        s.connect(str(path))
        return True
    except (FileNotFoundError, ConnectionRefusedError, OSError):
        return False
    finally:
        s.close()


def server_running() -> bool:
    return _probe(paths.socket_path())


def start_server(timeout: float = START_TIMEOUT_S, listen: str | None = None) -> int:
    """Start ``cockpit server run`` in the background and wait until it listens. Returns its pid.
    Raises ServerError with the log's last lines when it does not come up."""
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
    code = proc.poll()
    if code == 3:  # another server won the race: use it
        return -1
    tail = ""
    try:
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
    except OSError:
        pass
    raise ServerError(f"the Cockpit server did not start (exit {code}); see {log}: {tail}")


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


def _check(msg: dict) -> Any:
    if "error" in msg and msg["error"] is not None:
        err = msg["error"]
        raise remote_error(int(err.get("code", rpc.INTERNAL_ERROR)), str(err.get("message", "error")))
    return msg.get("result")


class BlockingClient:
    """One socket, one request at a time (a lock makes it safe across threads)."""

    def __init__(self, path: Path | None = None, timeout: float | None = None):
        self.path = Path(path or paths.socket_path())
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(str(self.path))
        except OSError as exc:
            self._sock.close()
            raise ServerError(f"cannot connect to the Cockpit server at {self.path}: {exc}") from None
        self._file = self._sock.makefile("rb")
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def call(self, method: str, **params: Any) -> Any:
        """Send a request, return its result. Raises RemoteError, ServerError (connection lost)."""
        with self._lock:
            msg_id = next(self._ids)
            try:
                self._sock.sendall(rpc.request(msg_id, method, params))
                while True:
                    line = self._file.readline(rpc.MAX_LINE + 1)
                    if not line:
                        raise ServerError("the Cockpit server closed the connection")
                    msg = json.loads(line)
                    if msg.get("id") == msg_id:
                        return _check(msg)
            except OSError as exc:
                raise ServerError(f"lost the Cockpit server: {exc}") from None

    def close(self) -> None:
        try:
            self._file.close()
            self._sock.close()
        except OSError:
            pass

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncClient:
    """Requests and events over one connection. ``await AsyncClient.connect(path)``; then
    ``await call(method, **params)``; ``events`` is an asyncio.Queue of event payloads
    (``{"type", "data"}``) once ``subscribe`` was called; None is put when the connection ends."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        import asyncio

        self.reader = reader
        self.writer = writer
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self.events: asyncio.Queue[dict | None] = asyncio.Queue()
        self.closed = False
        self._task = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, path: Path | None = None) -> AsyncClient:
        import asyncio

        try:
            reader, writer = await asyncio.open_unix_connection(str(path or paths.socket_path()), limit=rpc.MAX_LINE)
        except OSError as exc:
            raise ServerError(f"cannot connect to the Cockpit server: {exc}") from None
        return cls(reader, writer)

    async def _read(self) -> None:
        import asyncio

        try:
            while True:
                line = await self.reader.readline()
                if not line:
                    break
                msg = json.loads(line)
                if "id" in msg and msg["id"] in self._pending:
                    fut = self._pending.pop(msg["id"])
                    if not fut.done():
                        fut.set_result(msg)
                elif msg.get("method") == "event":
                    self.events.put_nowait(msg.get("params"))
        except (ConnectionError, ValueError, asyncio.IncompleteReadError):
            pass
        finally:
            self.closed = True
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ServerError("the Cockpit server closed the connection"))
            self._pending.clear()
            self.events.put_nowait(None)

    async def call(self, method: str, **params: Any) -> Any:
        if self.closed:
            raise ServerError("the connection to the Cockpit server is closed")
        import asyncio

        msg_id = next(self._ids)
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        self.writer.write(rpc.request(msg_id, method, params))
        await self.writer.drain()
        return _check(await fut)

    async def close(self) -> None:
        self.closed = True
        self._task.cancel()
        try:
            self.writer.close()
            await self.writer.wait_closed()
        except Exception:
            pass


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
        time.sleep(0.05)
    return False
