"""``cockpit web``'s HTTP side: textual-serve's ``Server`` behind a token.

Every route textual-serve has (the page, its websocket, its static files, downloads) lives under
``/TOKEN/``; a request whose first path segment is not the token (compared in constant time) is
answered 403 before any handler runs, so no app process starts without it (textual-serve starts
one per websocket). The page's URLs are built from the request's own ``Host`` (what the browser
typed, e.g. the local end of an ``ssh -L`` tunnel), not from the address bound; a websocket whose
``Origin`` names another host is refused. Every answer says ``Referrer-Policy: no-referrer`` (the
token is in the URL) and carries a content security policy that keeps the page to its own origin
(textual-serve's page asks for a web font from Google: not fetched) and out of other sites' frames.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import signal
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.server import Server, to_int

TITLE = "Cockpit"
CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
       "base-uri 'none'; form-action 'none'")
HEAD = f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{TITLE}</title>'
REFUSED = "403: this address needs the token in the URL that `cockpit web` printed\n"


def new_token() -> str:
    return secrets.token_urlsafe(24)


class TokenServer(Server):
    """textual-serve's server with every route under ``/TOKEN/`` (see the module's docstring).
    ``command``: the shell command of the app (one process per browser tab)."""

    def __init__(self, command: str, token: str) -> None:
        super().__init__(command, host="127.0.0.1", port=0, title=TITLE)
        self.token = token
        self.prefix = f"/{token}/"

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        p = self.prefix
        app.add_routes([
            web.get(p, self.handle_index, name="index"),
            web.get(p + "ws", self.handle_websocket, name="websocket"),
            web.get(p + "download/{key}", self.handle_download, name="download"),
            web.static(p + "static", self.statics_path, name="static"),
        ])
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                     ) -> web.StreamResponse:
        first = request.path.split("/")[1] if request.path.count("/") >= 2 else ""
        if not hmac.compare_digest(first.encode(), self.token.encode()):
            return web.Response(status=403, text=REFUSED, headers={"Referrer-Policy": "no-referrer"})
        origin = request.headers.get("Origin")
        if request.path == self.prefix + "ws" and origin and urlsplit(origin).netloc != request.host:
            return web.Response(status=403, text="403: a page of another site may not open this websocket\n")
        if request.path == self.prefix + "ws" and request.headers.get("Upgrade", "").lower() != "websocket":
            return web.Response(status=400, text="400: this address is the app's websocket (open the page)\n")
        response = await handler(request)
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Cache-Control"] = "no-store"
        return response

    async def handle_index(self, request: web.Request) -> web.Response:
        """textual-serve's page, its URLs on the host the browser asked for, with a title and
        a viewport (without one a phone lays the page out 980 pixels wide: tiny text, no narrow
        layout)."""
        secure = request.scheme == "https"
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{'wss' if secure else 'ws'}://{request.host}{self.prefix}ws",
            "config": {"static": {"url": f"{request.scheme}://{request.host}{self.prefix}static/"}},
            "application": {"name": self.title},
        }
        page = aiohttp_jinja2.render_string("app_index.html", request, context)
        page = page.replace("<head>", f"<head>\n    {HEAD}", 1)
        return web.Response(text=page, content_type="text/html")


class _BadRequestsInOneLine(logging.Filter):
    """aiohttp logs a request it cannot parse with a traceback that repeats the request line (the
    token, when it carried one): whoever reaches the port could fill the terminal or a log of it.
    Such a record becomes one line without the request; the client got its 400 already."""

    def filter(self, record: logging.LogRecord) -> bool:
        from aiohttp.http_exceptions import HttpProcessingError

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            record.msg, record.args = f"refused a malformed request ({exc.code}: {type(exc).__name__})", ()
            record.exc_info = record.exc_text = None
        return True


BAD_REQUESTS = _BadRequestsInOneLine()


async def serve(server: TokenServer, host: str, port: int, ready: Callable[[int], None],
                stop: asyncio.Event | None = None) -> None:
    """Serve until SIGINT / SIGTERM (or ``stop`` is set); ``ready(port)`` once listening (the port
    bound: ``port`` 0 takes a free one). Open browser tabs' apps are told to quit on the way out."""
    logging.basicConfig(level=logging.WARNING, format="cockpit web: %(message)s")
    logging.getLogger("aiohttp.server").addFilter(BAD_REQUESTS)  # (added once: the same filter object)
    app = await server._make_app()
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0][1]
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        ready(int(bound))
        await stop.wait()
    finally:
        await runner.cleanup()
