"""``--host NAME``: which server a command talks to (see :mod:`cockpit.server.ssh`).

``cockpit --host NAME …`` and ``cockpit ls|attach|send|approve|deny|kill|run|worktrees|memory …
--host NAME`` act on the server of that host (``[hosts.NAME]`` in config.toml, or an ssh
destination). The session commands, ``run`` and the app speak the protocol through
``cockpit server bridge`` there; ``memory`` and ``worktrees`` work on that host's notes and
repository, so the whole command runs there (in the host's ``workspace``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from cockpit.errors import CockpitError

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.config import HostEntry
    from cockpit.server.transport import Transport

HOST_HELP = "act on the sessions of another host, through ssh: a [hosts.NAME] of config.toml, or an ssh destination"


def add_host_argument(parser: argparse.ArgumentParser, top: bool = False) -> None:
    """``--host NAME`` on ``parser``; on a sub-command it leaves a top-level ``--host`` as given."""
    parser.add_argument("--host", metavar="NAME", action="append", default=None if top else argparse.SUPPRESS,
                        help=HOST_HELP)


def host_name(args: argparse.Namespace) -> str | None:
    """The one ``--host`` of a command (the app's grid takes several; a command acts on one)."""
    value = getattr(args, "host", None) or None
    if isinstance(value, list):
        if len(value) > 1:
            raise CockpitError(f"this command acts on one host; --host was given {len(value)} times")
        value = value[0] if value else None
    return None if value == "local" else value  # (the grid's name for this machine)


def entry(name: str) -> HostEntry:
    from cockpit.runtime.config import ConfigError, host_entry

    try:
        return host_entry(name)
    except ConfigError as exc:
        raise CockpitError(str(exc)) from None


def transport(args: argparse.Namespace, start: bool = False) -> Transport:
    """The transport to ``--host`` (this machine's server when none is given)."""
    return transport_named(host_name(args), start)


def transport_named(name: str | None, start: bool = False) -> Transport:
    """The transport to the host ``name`` (None: this machine's server)."""
    from cockpit.server.transport import transport_for

    return transport_for(entry(name) if name else None, start)


def without_host(argv: list[str]) -> list[str]:
    """``argv`` without its ``--host NAME`` / ``--host=NAME``."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--host":
            skip = True
        elif not a.startswith("--host="):
            out.append(a)
    return out


def run_there(args: argparse.Namespace, argv: list[str]) -> int:
    """Run this ``cockpit`` command (``argv``, without ``--host``) on the host, in its
    ``workspace``; with its ``notes`` when the command names none (memory commands)."""
    from cockpit.server.ssh import HostError, run_remote

    host = entry(host_name(args) or "")
    if host.socket:
        raise CockpitError(f"host {host.name} is a server socket of this machine: run the command with that "
                           "server's COCKPIT_DATA_DIR instead of --host")
    words = without_host(argv)
    if words[:1] == ["memory"] and host.notes and not any(w == "--notes" or w.startswith("--notes=") for w in words):
        words += ["--notes", host.notes]
    try:
        return run_remote(host, words, cwd=host.workspace)
    except HostError as exc:
        raise CockpitError(str(exc), code=1) from None


__all__ = ["add_host_argument", "host_name", "transport", "transport_named", "run_there", "without_host", "entry"]
