"""Bare ``cockpit``: the top-level flags, and launching the Textual app.

By default the app is a client of the Cockpit server (started in the background when none runs,
as tmux does): the sessions and the warm memory engine live there, so quitting the app (``q``)
detaches and the sessions go on; ``Q`` stops them first. ``--no-server`` (or
``COCKPIT_NO_SERVER=1``) runs everything in this process instead, as one-off: the runtime's
``SessionManager`` is then built inside the app's event loop and quitting stops the sessions.

Textual is imported lazily inside :func:`run`, so ``cockpit memory …`` and ``cockpit run …``
stay fast; the app is interactive at once. In-process, the memory engine is built on first use
(the app's boot worker, once the app is up) and warms in the background (``bench/first_frame.py``:
the engine's imports — numpy, SQLite with sqlite-vec, YAML — no longer come before the first
frame); attached to a server, the app uses the server's warm engine.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser, root: bool = False) -> None:
    """The app's flags on ``parser`` (``root``: the ``cockpit`` parser itself, whose help says
    what they do before a sub-command: :mod:`cockpit.app_flags`)."""
    g = parser.add_argument_group("the app (bare `cockpit`)",
                                  "Before a sub-command that has the same option they apply to it (cockpit --model M\n"
                                  "run …); before one that has not, they are refused."
                                  if root else None)
    g.add_argument("--notes", metavar="DIR", default="notes",
                   help="notes folder, or 'auto' (Claude Code's memory folder for this project); default ./notes, "
                        "else notes/ at the root of the git work tree")
    g.add_argument("--workspace", metavar="DIR", default=".", help="sessions' workspace folder (default .)")
    g.add_argument("--model", metavar="ID", default=None, help="model id (free text; default from config)")
    g.add_argument("--base-url", metavar="URL", default=None, help="Messages API base URL (e.g. a local server)")
    g.add_argument("--top-k", metavar="N", type=int, default=None,
                   help="at most N notes in each session's first message (default: as many as the "
                        "600-token budget holds: lines, then names)")
    g.add_argument("--selector", choices=("embedded", "model"), default=None,
                   help="who picks the notes: the engine's ranking and gate (default) or a small "
                        "model over its shortlist (config: [preseed] selector)")
    g.add_argument("--no-preseed", action="store_true", help="start sessions without the notes block")
    g.add_argument("--backend", metavar="NAME", default=None,
                   help="default agent of new sessions: cockpit (Cockpit's own loop), claude-code (the claude-code "
                        "extra) or acp:AGENT, any ACP agent (acp:claude, acp:codex, acp:gemini, acp:opencode, "
                        "acp:goose, [agents.NAME] in config.toml; `cockpit agents` lists them)")
    g.add_argument("--claude-setting-sources", metavar="LIST", default=None,
                   help="claude-code sessions read these of the user's Claude Code settings: comma-separated "
                        "user,project,local, or none (default: all)")
    g.add_argument("--permission-mode", default=None,
                   choices=["default", "acceptEdits", "plan", "bypassPermissions", "auto"],
                   help="what sessions may do without asking (the spawn dialog's default; default: config / default)")
    g.add_argument("--no-worktree", action="store_true",
                   help="sessions run in the workspace itself (the spawn dialog's default: a worktree each)")
    g.add_argument("--no-sandbox", action="store_true",
                   help="new sessions' commands run unconfined, as you (default: in the OS sandbox)")
    g.add_argument("--network", default=None, choices=["off", "on", "allow"],
                   help="network inside the sandbox for new sessions: off (default), on, or allow "
                        "([sandbox] allow_hosts only)")
    g.add_argument("--host", metavar="NAME", action="append", default=None,
                   help="show this host's sessions in the grid (repeatable: several hosts side by side; "
                        "'local' is this machine; a [hosts.NAME] of config.toml or an ssh destination; "
                        "default: [grid] hosts, else this machine alone)")
    g.add_argument("--no-server", action="store_true",
                   help="run the sessions in this process (they end with the app) instead of the background server")


class _DeferredEngine:
    """Stands for the app's ``MemoryEngine`` and builds it on first use (thread-safe), so its
    imports happen after the first frame, in the thread that first needs it. An error building
    it (e.g. an unusable index) is raised to that caller — the app's boot worker shows it."""

    def __init__(self, notes_dir: Path) -> None:
        import threading

        self._notes_dir = notes_dir
        self._engine: Any = None
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


def prepare(args: argparse.Namespace) -> tuple[Any, Path]:
    """The app's flags checked as the app starts (``cockpit web`` checks them once, before
    serving): its ``RuntimeConfig`` and workspace, or a ``CockpitError`` with the one line."""
    from cockpit.errors import CockpitError
    from cockpit.runtime import ConfigError, load_config
    from cockpit.runtime.config import parse_setting_sources

    asked = list(getattr(args, "host", None) or [])
    # only other hosts in the grid: this machine's folders and backends are not theirs to check
    host = asked[0] if asked and "local" not in asked else None
    if host and getattr(args, "no_server", False):
        raise CockpitError("--host shows the sessions of that host's server: drop --no-server")
    workspace = Path(args.workspace).expanduser().resolve()
    if not host and not workspace.is_dir():
        raise CockpitError(f"workspace is not a folder: {workspace}")
    try:
        config = load_config({
            "model": args.model, "base_url": args.base_url, "top_k": args.top_k,
            "selector": args.selector,
            "preseed": False if args.no_preseed else None, "interactive": True, "backend": args.backend,
            "claude_setting_sources": None if args.claude_setting_sources is None
            else parse_setting_sources(args.claude_setting_sources),
            "permission_mode": getattr(args, "permission_mode", None),
            "worktrees": False if getattr(args, "no_worktree", False) else None,
            "sandbox": False if getattr(args, "no_sandbox", False) else None,
            "network": getattr(args, "network", None),
        })
    except ConfigError as exc:
        raise CockpitError(str(exc)) from None
    from cockpit.runtime import backends

    why = None if host else backends.resolve(config.backend, config).unavailable(config)
    if why:
        raise CockpitError(why)
    if config.permission_mode == "auto" and config.backend == "cockpit" and not host:
        # refused here, as `cockpit run` does, not after the user typed a task into the dialog
        if not config.sandbox:
            raise CockpitError("auto mode runs commands without asking only inside the sandbox: drop --no-sandbox "
                               "([sandbox] enabled = false) or pick another --permission-mode")
        from cockpit.runtime.sandbox import detect

        found = detect()
        if found.backend is None:
            raise CockpitError(f"auto mode needs the sandbox, and there is none here: {found.reason}")
    from cockpit.tui import state as ui_state
    from cockpit.tui.keymap import keymap_problem

    bad_keys = keymap_problem()
    if bad_keys:
        raise CockpitError(f"{ui_state.config_path()}: {bad_keys}")
    return config, workspace


def run(args: argparse.Namespace) -> int:
    config, workspace = prepare(args)
    import os

    no_server = bool(getattr(args, "no_server", False) or os.environ.get("COCKPIT_NO_SERVER"))
    from cockpit.runtime.config import config_path
    from cockpit.server.host_config import grid_hosts

    asked = getattr(args, "host", None)
    grid = grid_hosts(asked, config_path()) if asked or not no_server else []
    if asked and no_server:
        from cockpit.errors import CockpitError

        raise CockpitError("--host shows the sessions of hosts' servers: drop --no-server (COCKPIT_NO_SERVER)")
    if not no_server:  # this machine's server (the grid of one host, `local`), or a grid of hosts
        from cockpit.grid_cli import run_grid
        from cockpit.server.host_config import GridHost

        return run_grid(args, config, workspace, grid or [GridHost("local")])

    if config.api_key or config.auth_token:  # this process runs the shells: the key out of their reach
        from cockpit.runtime import keyguard

        keyguard.guard_process()
    from cockpit.notes_location import resolve_notes

    engine = _DeferredEngine(resolve_notes(args.notes, Path.cwd()))

    from cockpit.runtime import SessionManager
    from cockpit.tui.app import CockpitApp

    async def manager() -> SessionManager:  # inside the running loop: the manager is made there
        return SessionManager(engine, config)

    app = CockpitApp(
        manager, engine, workspace=workspace, model=config.model, top_k=config.top_k,
        preseed=config.preseed, sessions_dir=config.resolved_sessions_dir(),
        permission_mode=config.permission_mode, worktree=config.worktrees, backend=config.backend,
        notify_os=config.notify_os, api_key_missing=not (config.api_key or config.api_key_helper),
    )
    try:
        app.run()
    finally:
        engine.close()
    return int(app.return_code or 0)


def detached_message(live: int, waiting: int = 0, host: str | None = None) -> str:
    """What the shell shows after the app detaches from ``live`` (> 0) sessions that are not
    over, ``waiting`` of them needing you — a follow-up or an approval (not working meanwhile);
    ``host``: they are in that host's server."""
    working = live - waiting
    parts = [f"{working} working"] if working else []
    parts += [f"{waiting} need{'s' if waiting == 1 else ''} you (a follow-up or an approval)"] if waiting else []
    there, flag = (f"host {host}'s server", f" --host {host}") if host else ("the server", "")
    return (f"cockpit: {live} session{'s stay' if live != 1 else ' stays'} in {there} ({', '.join(parts)}; "
            f"cockpit ls{flag} · cockpit attach{flag} ID · cockpit{flag} to come back)")


WEB_TAB = "COCKPIT_WEB_TAB"  # set for the apps `cockpit web` runs, one per browser tab


def run_detachable(app: Any, engine: Any, message: Callable[[int, int], str]) -> int:
    """Run an app attached to a server (or several), close its memory engine after it, and say
    what goes on there when it detaches: ``message(live, waiting)``."""
    import sys

    try:
        app.run()
    finally:
        if engine is not None:
            engine.close()
    live = [v for v in app.views.values() if not v.status.is_final]
    if live and not os.environ.get(WEB_TAB):  # a browser tab's app: its closing is no news to `cockpit web`'s terminal
        print(message(len(live), sum(v.status.needs_user for v in live)), file=sys.stderr)
    return int(app.return_code or 0)
