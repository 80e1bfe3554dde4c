"""Bare ``cockpit``: the top-level flags, and launching the Textual app.

Textual is imported lazily inside :func:`run`, so ``cockpit memory …`` and ``cockpit run …``
stay fast. The runtime's ``SessionManager`` is built inside the app's event loop (it must be
created and used in one running loop); the memory engine is built on first use — the app's
boot worker, once the app is up — and warms in the background: the app is interactive at once
(``bench/first_frame.py``: the engine's imports — numpy, SQLite with sqlite-vec, YAML — are
≈ 0.2 s that no longer come before the first frame).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("the app (bare `cockpit`)")
    g.add_argument("--notes", metavar="DIR", default="notes", help="notes folder (default ./notes)")
    g.add_argument("--workspace", metavar="DIR", default=".", help="sessions' workspace folder (default .)")
    g.add_argument("--model", metavar="ID", default=None, help="model id (free text; default from config)")
    g.add_argument("--base-url", metavar="URL", default=None, help="Messages API base URL (e.g. a local server)")
    g.add_argument("--top-k", metavar="N", type=int, default=None, help="notes put in each session's first message")
    g.add_argument("--no-preseed", action="store_true", help="start sessions without the notes block")


class _DeferredEngine:
    """Stands for the app's ``MemoryEngine`` and builds it on first use (thread-safe), so its
    imports happen after the first frame, in the thread that first needs it. An error building
    it (e.g. an unusable index) is raised to that caller — the app's boot worker shows it."""

    def __init__(self, notes_dir: Path) -> None:
        import threading

        self._notes_dir = notes_dir
        self._engine = None
        self._lock = threading.Lock()

    def _get(self):
        with self._lock:
            if self._engine is None:
                from memory import MemoryEngine

                self._engine = MemoryEngine(self._notes_dir)
            return self._engine

    def __getattr__(self, name: str):
        return getattr(self._get(), name)

    def close(self) -> None:
        if self._engine is not None:  # never built: nothing to close (and nothing to import)
            self._engine.close()


def run(args: argparse.Namespace) -> int:
    from cockpit.cli import CockpitError
    from cockpit.runtime import ConfigError, load_config

    workspace = Path(args.workspace).expanduser().resolve()
    if not workspace.is_dir():
        raise CockpitError(f"workspace is not a folder: {workspace}")
    try:
        config = load_config({
            "model": args.model, "base_url": args.base_url, "top_k": args.top_k,
            "preseed": False if args.no_preseed else None, "interactive": True,
        })
    except ConfigError as exc:
        raise CockpitError(str(exc)) from None

    engine = _DeferredEngine(Path(args.notes).expanduser())

    from cockpit.tui.app import CockpitApp
    from cockpit.runtime import SessionManager

    class _App(CockpitApp):
        async def on_load(self) -> None:  # inside the running loop: build the manager here
            self.manager = SessionManager(engine, config)

    app = _App(
        None, engine, workspace=workspace, model=config.model, top_k=config.top_k,
        preseed=config.preseed, sessions_dir=config.resolved_sessions_dir(),
    )
    try:
        app.run()
    finally:
        engine.close()
    return int(app.return_code or 0)
