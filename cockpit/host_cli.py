"""``--host NAME``: which server a command talks to (see :mod:`cockpit.server.ssh`).

``cockpit --host NAME …`` and ``cockpit ls|attach|send|approve|deny|kill|run|worktrees|memory …
--host NAME`` act on the server of that host (``[hosts.NAME]`` in config.toml, or an ssh
destination). The session commands, ``run`` and the app speak the protocol through
``cockpit server bridge`` there; ``memory`` and ``worktrees`` work on that host's notes and
repository, and ``server status|start|stop`` on its server's process, so the whole command runs
there (in the host's ``workspace``). A session id as the grid shows it, ``box:ID``, is ``ID`` with
``--host box`` (:func:`qualified_ids`), and every hint printed about a session there names the
host (:func:`hint`).
"""

from __future__ import annotations

import argparse
import re
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


_COMMAND = re.compile(r"(?<![\w/-])(cockpit (?:ls|attach|approve|deny|kill|send|resume|budget|shell|"
                      r"worktrees(?: (?:list|diff|merge|keep|discard|prune|check|pr|send-back))?|"
                      r"server (?:status|stop|start)))(?! --host)(?=[\s`'\".,;:)]|$)")


def for_host(message: str, host: str | None) -> str:
    """``message`` — a server's, about its own sessions — with each ``cockpit …`` command it
    suggests naming ``host`` (a server on a host words its hints for its own machine), so they
    work as copied here."""
    tail = hint(host)
    return _COMMAND.sub(lambda m: m.group(1) + tail, message) if tail else message


def hint(host: str | None) -> str:
    """`` --host NAME`` for a command the CLI suggests about a session of ``host`` ('' for this
    machine's), so the suggestion works as copied. A command run whole on a host by
    :func:`run_there` learns the name from ``$COCKPIT_HINT_HOST``."""
    import shlex

    host = host or hinted_host()
    return f" --host {shlex.quote(host)}" if host and host != "local" else ""


def hinted_host() -> str | None:
    """The host this command runs whole on for another machine's command line (``$COCKPIT_HINT_HOST``,
    set by :func:`run_there`), else None: what it says of its own machine is said of that host."""
    import os

    host = os.environ.get(HINT_ENV) or None
    return None if host == "local" else host


HINT_ENV = "COCKPIT_HINT_HOST"


SESSION_COMMANDS = ("send", "resume", "approve", "deny", "kill", "attach", "budget", "worktrees", "shell")


def qualified_ids(args: argparse.Namespace, argv: list[str]) -> list[str]:
    """A session id as the grid shows it, ``HOST:ID`` (:mod:`cockpit.hostids`), is ``ID`` with
    ``--host HOST``: ``args`` say so, and the returned ``argv`` too (what :func:`run_there`
    runs). A ``--host`` that names another host is refused (one line)."""
    from cockpit import hostids

    if getattr(args, "command", None) not in SESSION_COMMANDS:
        return argv
    for dest in ("id", "session"):
        value = getattr(args, dest, None)
        if not isinstance(value, str) or hostids.SEP not in value:
            continue
        host, local = hostids.split(value)
        try:
            hostids.check_name(host)
        except ValueError:
            raise CockpitError(f"{value!r} is not HOST:ID (a host name, ':', a session id)") from None
        if not local:
            raise CockpitError(f"{value!r} names host {host} but no session: HOST:ID")
        given = list(getattr(args, "host", None) or [])
        if any(h != host for h in given):
            raise CockpitError(f"--host {given[0]} and {value} name two hosts: give {value} alone, "
                               f"or --host {given[0]} with a plain id")
        setattr(args, dest, local)
        argv = [local if a == value else a for a in argv]
        if host != hostids.LOCAL and not given:
            args.host = [host]
            argv = [*argv, "--host", host]
    return argv


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

    if getattr(args, "command", None) == "server" and args.action in ("run", "bridge"):
        raise CockpitError(f"`cockpit server {args.action}` runs in this terminal: --host takes status, start or "
                           f"stop (ssh to the host to run `cockpit server {args.action}` there)")
    host = entry(host_name(args) or "")
    if host.socket:
        raise CockpitError(f"host {host.name} is a server socket of this machine: run the command with that "
                           "server's COCKPIT_DATA_DIR instead of --host")
    words = without_host(argv)
    if words[:1] == ["memory"] and host.notes and not any(w == "--notes" or w.startswith("--notes=") for w in words):
        words += ["--notes", host.notes]
    try:
        return run_remote(host, words, cwd=host.workspace, env={HINT_ENV: host.name})
    except HostError as exc:
        raise CockpitError(str(exc), code=1) from None


__all__ = ["add_host_argument", "hint", "qualified_ids", "host_name", "transport", "transport_named", "run_there",
           "without_host", "entry"]
