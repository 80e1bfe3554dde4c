"""The model relay of an ACP session: the agent's only way to its model, and to our memory.

An ACP agent calls its model itself. Given the API key, it would hand it to every command it
runs; so it never gets it. The agent's base URL points here instead (``http://127.0.0.1:PORT/
TOKEN``) with a placeholder key, and this relay, outside any sandbox, forwards each request to
the real endpoint (the config's base URL, default ``https://api.anthropic.com``) with the real
``x-api-key`` / ``Authorization`` put in. Requests under ``/TOKEN/mcp`` go instead to the
session's memory MCP server (streamable HTTP on a Unix socket, :mod:`.memory_http`). Anything
without the session's token gets ``403``.

In the sandbox (the agent process inside bubblewrap, network namespace of its own), a forwarder
on ``127.0.0.1:PORT`` inside relays to this relay's Unix socket: the model endpoint and the
memory server are the only places the agent reaches. Outside it (``--no-sandbox``), the relay
also listens on ``127.0.0.1``, and the token keeps other local programs off it.

One request per connection (``Connection: close`` is sent both ways), so each request's head is
rewritten; bodies and streamed (SSE) responses pass through as bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import ssl
from urllib.parse import urlsplit

from cockpit.runtime.netproxy import pipe

MAX_HEAD = 64 * 1024
MAX_CONNECTIONS = 32  # at once, per session: an agent holding more gets 503 (file descriptors are shared)
CONNECT_TIMEOUT = 15.0
_DROP = {"host", "x-api-key", "authorization", "connection", "proxy-connection", "keep-alive",
         "proxy-authorization", "x-goog-api-key"}
PLACEHOLDER_KEY = "cockpit-relay-holds-the-key"


def _reply(status: str, text: str) -> bytes:
    body = text.encode() + b"\n"
    return (f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


class ModelRelay:
    """One session's relay. ``await start(socket_path, tcp=...)``, ``await close()``.
    ``requests``: model requests forwarded; ``refused``: requests turned away (no token)."""

    def __init__(self, upstream: str | None, api_key: str | None = None, auth_token: str | None = None,
                 mcp_socket: str | None = None, auth: str = "x-api-key"):
        """``api_key`` goes on each request as ``auth`` says (``x-api-key``, ``bearer``:
        ``Authorization: Bearer``, ``x-goog-api-key``); ``auth_token`` as a bearer token."""
        url = urlsplit(upstream or "https://api.anthropic.com")
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"the model base URL must be http(s)://host[:port][/path], got {upstream!r}")
        self._tls = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._tls else 80)
        self._base = url.path.rstrip("/")
        self._host_header = url.netloc.rpartition("@")[2]
        self._key = api_key
        self._token_auth = auth_token
        self._auth = auth
        self.mcp_socket = mcp_socket
        self.token = secrets.token_urlsafe(18)
        self.requests = 0
        self.refused = 0
        self.port: int | None = None
        self.socket_path: str | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._open = 0

    @property
    def prefix(self) -> str:
        return f"/{self.token}"

    def base_url(self, port: int | None = None) -> str:
        """The agent's base URL (``port``: the port it reaches the relay at; default the TCP one)."""
        return f"http://127.0.0.1:{port or self.port}{self.prefix}"

    async def start(self, socket_path: str | None = None, tcp: bool = False) -> None:
        if socket_path:
            self._servers.append(await asyncio.start_unix_server(self._serve, path=socket_path))
            os.chmod(socket_path, 0o600)
            self.socket_path = socket_path
        if tcp:
            srv = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self._servers.append(srv)
            self.port = srv.sockets[0].getsockname()[1]

    async def close(self) -> None:
        servers, self._servers = self._servers, []
        for srv in servers:
            srv.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(srv.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= MAX_CONNECTIONS:
            self.refused += 1
            writer.write(_reply("503 Service Unavailable", "cockpit relay: too many connections at once"))
            writer.close()
            return
        self._open += 1
        try:
            await self._relay(reader, writer)
        finally:
            self._open -= 1

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        if len(head) > MAX_HEAD:
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split()
        if len(parts) != 3 or any(c in line for line in lines for c in "\n\r\0"):  # (a bare LF: smuggling)
            writer.write(_reply("400 Bad Request", "cockpit relay: not an HTTP request"))
            writer.close()
            return
        method, target, version = parts
        if target.lower().startswith(("http://", "https://")):  # a proxy-style absolute URI
            target = "/" + target.split("/", 3)[3] if target.count("/") >= 3 else "/"
        if not (target == self.prefix or target.startswith(self.prefix + "/")):
            self.refused += 1
            writer.write(_reply("403 Forbidden", "cockpit relay: this address serves one session's agent only"))
            with contextlib.suppress(Exception):
                await writer.drain()
            writer.close()
            return
        path = target[len(self.prefix):] or "/"
        bare = path.split("?", 1)[0]
        from urllib.parse import unquote

        if any(seg in (".", "..") for seg in unquote(unquote(bare)).split("/")) or "\\" in unquote(bare):
            self.refused += 1  # out of the upstream's base path, with the key: never
            writer.write(_reply("400 Bad Request", "cockpit relay: no '.' or '..' in the path"))
            writer.close()
            return
        headers = [ln for ln in lines[1:] if ln and ln.split(":", 1)[0].strip().lower() not in _DROP]
        asked_host = next((ln.split(":", 1)[1].strip() for ln in lines[1:] if ln.lower().startswith("host:")), "")
        to_mcp = path == "/mcp" or path.startswith(("/mcp/", "/mcp?"))
        try:
            if to_mcp:
                if not self.mcp_socket:
                    raise OSError("no memory server for this session")
                up_r, up_w = await asyncio.wait_for(asyncio.open_unix_connection(self.mcp_socket), CONNECT_TIMEOUT)
                headers.append(f"Host: {asked_host or '127.0.0.1:80'}")  # (the MCP server checks it: loopback)
            else:
                up_r, up_w = await asyncio.wait_for(asyncio.open_connection(
                    self._host, self._port, ssl=ssl.create_default_context() if self._tls else None,
                    server_hostname=self._host if self._tls else None), CONNECT_TIMEOUT)
                path = self._base + path
                headers.append(f"Host: {self._host_header}")
                if self._key:
                    headers.append({"bearer": f"Authorization: Bearer {self._key}",
                                    "x-goog-api-key": f"x-goog-api-key: {self._key}"}.get(
                                        self._auth, f"x-api-key: {self._key}"))
                if self._token_auth and not (self._key and self._auth == "bearer"):
                    headers.append(f"Authorization: Bearer {self._token_auth}")
                self.requests += 1
        except (OSError, TimeoutError) as exc:
            what = "memory server" if to_mcp else "model endpoint"
            writer.write(_reply("502 Bad Gateway", f"cockpit relay: cannot reach the {what}: {exc}"))
            writer.close()
            return
        headers.append("Connection: close")
        out = f"{method} {path} {version}\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n"
        up_w.write(out.encode("latin-1"))
        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))


__all__ = ["ModelRelay", "PLACEHOLDER_KEY"]
