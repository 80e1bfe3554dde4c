"""The network allowlist of a sandbox whose network is ``allow``: an HTTP(S) proxy outside it.

The sandbox has its own network namespace (no route anywhere); its only way out is a Unix socket
bound into it, behind which this proxy runs in the server. Inside, a small forwarder
(:data:`FORWARDER`, started with the shell) listens on ``127.0.0.1:3128`` and relays to that
socket, and ``HTTP_PROXY``/``HTTPS_PROXY`` (and npm's and pip's own settings) point there. The
proxy takes ``CONNECT host:port`` (HTTPS, git over https, anything tunnelled) and plain
``http://`` requests, and lets through only hosts on the allowlist: ``pypi.org`` is that host
exactly, ``*.npmjs.org`` any host below it (not ``npmjs.org`` itself); a ``:port`` on an entry
limits it to that port, else 80 and 443. Anything else gets ``403 Forbidden (cockpit sandbox: …)``
— the text the session shows the model and the user. A program that ignores the proxy variables
has no network at all: the allowlist is enforced by the namespace, not by reading commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os

MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT = 15.0


def host_allowed(host: str, port: int, allow: tuple[str, ...]) -> bool:
    """``host:port`` is on the allowlist ``allow`` (see the module doc)."""
    host = host.lower().rstrip(".")
    for entry in allow:
        name, _, want = entry.lower().partition(":")
        if want and port != int(want):
            continue
        if not want and port not in (80, 443):
            continue
        if name.startswith("*.") and fnmatch.fnmatchcase(host, name) and host.count(".") >= name.count("."):
            return True
        if host == name:
            return True
    return False


def _forbidden(host: str) -> bytes:
    body = f"cockpit sandbox: {host} is not on this session's network allowlist\n".encode()
    return (b"HTTP/1.1 403 Forbidden (cockpit sandbox: host not on the allowlist)\r\n"
            b"Content-Type: text/plain\r\nConnection: close\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Bytes from ``reader`` to ``writer`` until either side ends; ``writer`` is closed then
    (this proxy's tunnels, and the ACP sessions' model relay)."""
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


MAX_TUNNELS = 128  # open connections through one session's proxy (it runs in the server: its memory and files)
MAX_TUNNELS_ALL = 384  # … and through all the sessions' proxies of the server together (two files each)
MAX_BLOCKED = 100  # distinct refused hosts remembered (each cut to MAX_HOST characters); the rest counted
MAX_HOST = 253  # the longest DNS name


class AllowlistProxy:
    """The proxy of one session: ``await start()``, ``await close()``. ``blocked``: the distinct
    hosts refused (the first :data:`MAX_BLOCKED`), ``refusals``: how many requests were refused."""

    open_all = 0  # tunnels open through every proxy of this process

    def __init__(self, allow: tuple[str, ...], socket_path: str):
        self.allow = tuple(allow)
        self.socket_path = socket_path
        self.blocked: list[str] = []
        self.refusals = 0
        self._open = 0
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=self.socket_path)
        os.chmod(self.socket_path, 0o600)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= MAX_TUNNELS or AllowlistProxy.open_all >= MAX_TUNNELS_ALL:  # no more held open
            writer.write(b"HTTP/1.1 503 Service Unavailable (cockpit sandbox: too many open connections)\r\n"
                         b"Connection: close\r\n\r\n")
            with contextlib.suppress(Exception):
                await writer.drain()
            writer.close()
            return
        self._open += 1
        AllowlistProxy.open_all += 1
        try:
            await self._relay(reader, writer)
        finally:
            self._open -= 1
            AllowlistProxy.open_all -= 1

    def _refused(self, host: str, port: int) -> None:
        self.refusals += 1
        entry = f"{host[:MAX_HOST]}:{port}"
        if len(self.blocked) < MAX_BLOCKED and entry not in self.blocked:
            self.blocked.append(entry)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        if len(head) > MAX_HEAD:
            writer.close()
            return
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split()
        if len(parts) != 3:
            writer.write(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
            writer.close()
            return
        method, target, version = parts
        if method.upper() == "CONNECT":
            host, _, port_s = target.rpartition(":")
            rest = b""
        else:
            if not target.lower().startswith("http://"):
                writer.write(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                writer.close()
                return
            hostport, _, path = target[7:].partition("/")
            host, _, port_s = hostport.partition(":")
            port_s = port_s or "80"
            rest = f"{method} /{path} {version}".encode() + head[len(line):]
        host = host.strip("[]")
        try:
            port = int(port_s)
        except ValueError:
            port = -1
        if len(host) > MAX_HOST or not host_allowed(host, port, self.allow):
            self._refused(host, port)
            writer.write(_forbidden(host[:MAX_HOST]))
            with contextlib.suppress(Exception):
                await writer.drain()
            writer.close()
            return
        try:
            up_r, up_w = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            writer.write(f"HTTP/1.1 502 Bad Gateway ({type(exc).__name__})\r\nConnection: close\r\n\r\n".encode())
            writer.close()
            return
        if method.upper() == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            up_w.write(rest)
        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))


# run inside the sandbox (python -c): 127.0.0.1:PORT -> the proxy's Unix socket
FORWARDER = r"""
import asyncio, ctypes, sys
# not dumpable: nothing in the sandbox may ptrace the one process that can open a Unix socket
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
port, sock = int(sys.argv[1]), sys.argv[2]
async def pipe(r, w):
    try:
        while (b := await r.read(65536)):
            w.write(b); await w.drain()
    except Exception:
        pass
    finally:
        w.close()
async def serve(r, w):
    try:
        ur, uw = await asyncio.open_unix_connection(sock)
    except OSError:
        w.close(); return
    await asyncio.gather(pipe(r, uw), pipe(ur, w))
async def main():
    srv = await asyncio.start_server(serve, "127.0.0.1", port)
    async with srv:
        await srv.serve_forever()
asyncio.run(main())
"""
