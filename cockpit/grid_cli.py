"""The app over servers: this machine's (bare ``cockpit``: a grid of one host, ``local``), or
several hosts' (``cockpit --host A --host B``, or ``[grid] hosts``). A host whose connection drops
— this machine's server stopped or crashed too — is reconnected (``local``: its server started
again) and its sessions replayed.

The hosts come from ``cockpit.server.host_config``; the app runs over a
``cockpit.server.hosts.MultiHostRuntime`` made inside its loop. The memory engine the app shows
(header, memory screen, the spawn preview) is the local server's when ``local`` is one of the
hosts; every host's sessions get that host's notes.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cockpit import hostids
from cockpit.server.host_config import GridHost, hosts_for_app


def run_grid(args: argparse.Namespace, config, workspace: Path, grid: list[GridHost]) -> int:
    from functools import partial

    from cockpit.tui_cli import run_detachable

    app, engine = grid_app(args, config, workspace, grid)
    return run_detachable(app, engine, partial(detached_message, [h.name for h in grid]))


def detached_message(hosts: list[str], live: int, waiting: int = 0) -> str:
    """What the shell shows when the grid of ``hosts`` detaches from ``live`` sessions: with one
    host, its commands name it (``cockpit ls --host box``)."""
    from cockpit.tui_cli import detached_message as message

    if len(hosts) == 1:
        return message(live, waiting, None if hosts[0] == hostids.LOCAL else hosts[0])
    return message(live, waiting).replace("in the server", "in their servers")


def grid_app(args: argparse.Namespace, config, workspace: Path, grid: list[GridHost]) -> tuple[Any, Any]:
    """The app over the hosts of ``grid`` (not yet running), and the local memory engine it shows
    (None without ``local``, or without a notes folder): the caller closes it after the app."""
    from cockpit.errors import CockpitError
    from cockpit.notes_location import resolve_notes
    from cockpit.server.client import ServerError, ensure_server
    from cockpit.server.hosts import MultiHostRuntime
    from cockpit.server.remote import LocalCaller, RemoteEngine

    notes = resolve_notes(args.notes, Path.cwd())
    local = any(h.name == hostids.LOCAL for h in grid)
    engine = None
    if local:
        try:
            ensure_server()
            engine = RemoteEngine(LocalCaller(), notes) if notes.is_dir() else None
        except ServerError as exc:
            if len(grid) == 1:
                raise CockpitError(f"{exc} (or run without it: cockpit --no-server)") from None
            raise CockpitError(f"{exc} (the host 'local' is this machine's server)") from None
    hosts = hosts_for_app(grid, config, str(notes) if local and notes.is_dir() else None)

    from textual.binding import Binding

    from cockpit.tui.app import CockpitApp

    class _App(CockpitApp):
        BINDINGS = [Binding("q", "quit", "Detach", id="quit")]  # the sessions go on in their servers

    async def attach() -> MultiHostRuntime:  # inside the app's loop; a host not reached is retried there
        return await MultiHostRuntime.attach(hosts, config)

    app = _App(
        attach, engine, workspace=workspace, model=config.model, top_k=config.top_k,
        preseed=config.preseed, sessions_dir=config.resolved_sessions_dir(),
        permission_mode=config.permission_mode, worktree=config.worktrees, backend=config.backend,
        notify_os=config.notify_os,
        # (local: its keys are this machine's; a host with api_keys = "host" uses its own)
        api_key_missing=not (config.api_key or config.api_key_helper) and any(h.sends_keys for h in grid),
        notes_missing="" if not local or notes.is_dir() else str(notes),
    )
    return app, engine
