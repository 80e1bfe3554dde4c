"""The server's memory engines: one per (notes folder, index file), created on first use, warmed
and kept in step with their folder by a watcher thread; all share one embedding model (see
``memory.embedder.get_embedder``)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger("cockpit.server")


class EngineRegistry:
    """``get(notes, index)`` → a warm, watched ``memory.MemoryEngine``. Thread-safe."""

    def __init__(self) -> None:
        self._engines: dict[tuple[str, str | None], Any] = {}
        self._stops: dict[tuple[str, str | None], threading.Event] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(notes: str, index: str | None) -> tuple[str, str | None]:
        return (str(Path(notes).expanduser().resolve()), str(Path(index).expanduser()) if index else None)

    def existing(self, notes: str, index: str | None = None) -> Any:
        """The engine already made for ``notes`` and ``index``, or None (never makes one): e.g. to
        report its watcher's state while the folder is missing."""
        with self._lock:
            return self._engines.get(self._key(notes, index))

    def get(self, notes: str, index: str | None = None) -> Any:
        """The engine for ``notes`` (made absolute). Raises ``memory.MemoryEngineError`` when the
        index cannot be opened (as a ValueError subclass for the protocol's error reply)."""
        key = self._key(notes, index)
        with self._lock:
            engine = self._engines.get(key)
            if engine is not None:
                return engine
            from memory import MemoryEngine, MemoryEngineError

            try:
                engine = MemoryEngine(key[0], index_path=key[1])
            except MemoryEngineError as exc:
                raise ValueError(f"memory index for {key[0]}: {exc}") from None
            engine.start_warmup()
            stop = threading.Event()
            self._engines[key] = engine
            self._stops[key] = stop
        threading.Thread(target=self._watch, args=(engine, stop), name=f"watch {key[0]}", daemon=True).start()
        log.info("memory engine for %s", key[0])
        return engine

    RETRY_S = 5.0  # a failed watcher is started again after this, doubling to a minute

    @staticmethod
    def _watch(engine: Any, stop: threading.Event) -> None:
        """The engine's watcher, started again when it fails (after 5 s, doubling to a minute):
        the server's searches skip their own sync while a watcher keeps the index in step, so a
        dead one would leave every later edit out of them."""
        wait = EngineRegistry.RETRY_S
        while not stop.is_set():
            try:
                engine.watch(stop)
                return
            except FileNotFoundError:
                log.warning("notes folder %s does not exist: not watched", engine.notes_dir)
                return
            except Exception:  # the engine stays usable meanwhile; searches use the last index
                log.exception("watching %s failed: watching it again in %.0f s", engine.notes_dir, wait)
            if stop.wait(wait):
                return
            wait = min(60.0, wait * 2)

    def describe(self) -> list[dict]:
        with self._lock:
            items = list(self._engines.items())
        out = []
        for (notes, _index), engine in items:
            out.append({"notes": notes, "index": str(engine.index_path), "ready": bool(engine.ready)})
        return out

    def close(self) -> None:
        with self._lock:
            items = list(self._engines.values())
            for stop in self._stops.values():
                stop.set()
            self._engines.clear()
            self._stops.clear()
        for engine in items:
            try:
                engine.close()
            except Exception:
                pass
