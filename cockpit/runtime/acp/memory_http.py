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
from collections.abc import Callable
from typing import Any


class _Gated:
    """The engine, with ``save`` asking ``gate`` first (``gate(name, description, body, priority)``
    → None to go on, or the reason it is refused): a note saved here reaches every later session's
    first message, so it is an edit, asked for as the session's permission mode says."""

    def __init__(self, engine: Any, gate: Callable[[str, str, str, bool], str | None]):
        self._engine = engine
        self._gate = gate

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def save(self, name: str, description: str, body: str, priority: bool = False) -> Any:
        why = self._gate(name, description, body, priority)
        if why:
            raise ValueError(f"memory_save refused: {why}")
        return self._engine.save(name, description, body, priority)


class MemoryHttp:
    """``start()`` (blocks until it listens, at most ``timeout`` s), ``close()``. ``save_gate``:
    see :class:`_Gated` (None: saves are not asked about)."""

    def __init__(self, engine: Any, socket_path: str,
                 save_gate: Callable[[str, str, str, bool], str | None] | None = None):
        self.engine = engine if save_gate is None else _Gated(engine, save_gate)
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
