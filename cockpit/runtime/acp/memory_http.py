"""The memory MCP server of an ACP session, over streamable HTTP on a Unix socket.

The same tools as ``cockpit memory mcp`` (:func:`cockpit.memory_mcp.build_server`:
``memory_search``, ``memory_get``, ``memory_save`` and the ``notes://index`` resource) on the
session's engine — the server's warm one, no second model load — served by uvicorn in a thread
of its own (the tools block). The agent reaches it through the session's relay
(:mod:`.relay`, ``/TOKEN/mcp``), also from inside the sandbox, where no Unix socket can be opened.
"""

from __future__ import annotations

import threading
import time
from typing import Any


class MemoryHttp:
    """``start()`` (blocks until it listens, at most ``timeout`` s), ``close()``."""

    def __init__(self, engine: Any, socket_path: str):
        self.engine = engine
        self.socket_path = socket_path
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 30.0) -> None:
        import uvicorn

        from cockpit.memory_mcp import build_server

        app = build_server(self.engine, "server").streamable_http_app(stateless_http=True, json_response=True)
        config = uvicorn.Config(app, uds=self.socket_path, log_level="warning", lifespan="on", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="cockpit-memory-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:  # a condition, not a guess: uvicorn sets it once bound
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the memory MCP server did not start")
            time.sleep(0.01)

    def close(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(5)
        self._server = self._thread = None


__all__ = ["MemoryHttp"]
