"""The ``cockpit`` console command.

``cockpit``                 open the TUI (notes ``./notes``, workspace ``.``)
``cockpit memory …``        index, search, preseed, lint, save, eval
``cockpit run "task" …``    headless sessions, one report
``cockpit worktrees …``     the sessions' git worktrees: list, diff, merge, keep, discard, prune, check, pr
``cockpit shell ID``        $SHELL in a session's worktree
``cockpit server …``        the background server that owns the sessions (run/start/status/stop)
``cockpit ls|send|kill|attach|approve|deny|budget``   act on the server's sessions
``cockpit agents [install NAME]``   the ACP agents sessions can run (--backend acp:NAME)
``cockpit doctor``          check this machine (one line a check, with the fix)
``cockpit config path|check``   where the config file is, whether it parses
``cockpit completion SHELL``    shell completion code (bash, zsh, fish)
``cockpit web``             the app in a browser (loopback, a token in the URL; a phone layout)
``cockpit --version``

Each sub-command lives in its own module, which adds its parser through ``add_parser(subparsers)``
and runs through the ``func`` default it sets. Errors a user can fix print one line to stderr and
exit non-zero (``CockpitError``); nothing prints a traceback for them.
"""

from __future__ import annotations

import sys

from cockpit.errors import CockpitError

TYPE_CHECKING = False  # not typing's: the hook's hot path starts here, and typing costs it ≈ 4 ms
if TYPE_CHECKING:  # pragma: no cover - argparse is imported where it is used: the hook must start fast
    import argparse
    from typing import NoReturn

__all__ = ["CockpitError", "build_parser", "main"]


# a sub-command → the module that adds its parser (with its siblings): ``cockpit ls`` builds the
# root and server_cli's parsers only, not doctor's or the agents' (≈ 60 ms of imports it never uses)
COMMAND_MODULES = {  # (in the order of the full parser's --help)
    "memory": "memory_cli", "run": "headless",
    **dict.fromkeys(("server", "ls", "send", "resume", "kill", "attach", "approve", "deny", "budget"), "server_cli"),
    "worktrees": "worktrees_cli", "shell": "worktrees_cli", "agents": "agents_cli", "doctor": "doctor",
    "config": "config_cli", "completion": "completion_cli", "web": "web_cli",
}


# with --host these run whole on that host (they work on its notes and repository, or its server's
# process: `server status|start|stop`), not through the bridge
REMOTE_WHOLE = ("memory", "worktrees", "shell", "server")


def _suggesting(base: type[argparse.ArgumentParser]) -> type[argparse.ArgumentParser]:
    """``base`` whose "invalid choice" error names the closest choice (``cockpit lss`` → did you
    mean ls?) instead of listing them all; its sub-command parsers are of the same class."""
    import re

    class Parser(base):  # type: ignore[valid-type, misc]
        def error(self, message: str) -> NoReturn:
            import difflib

            m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
            if m:
                choices = re.findall(r"'([^']*)'", m.group(2))
                close = difflib.get_close_matches(m.group(1), choices, n=1)
                hint = f"did you mean {close[0]}?" if close else f"one of: {', '.join(choices)}"
                what = message[:m.start()]  # "argument --permission-mode: " (a sub-command's: its metavar)
                what = "unknown command " if what.startswith("argument {") else f"{what}no choice "
                message = f"{what}{m.group(1)!r} — {hint}"
            super().error(message)  # (it exits)
            raise SystemExit(2)

    return Parser


def build_parser(command: str | None = None, epilogs: bool = True) -> argparse.ArgumentParser:
    """The CLI's parser; ``command``: only that sub-command's module is imported (its parsers
    then are the only ones; the root's flags and ``--help`` of that command are whole).
    ``epilogs``: each ``--help`` names the config keys it reads (reading them imports the
    config's module: left out when no help is asked for)."""
    import argparse
    import importlib

    from cockpit import __version__, config_cli, tui_cli

    parser = _suggesting(argparse.ArgumentParser)(
        prog="cockpit",
        description="Run AI agent sessions side by side, each preseeded from the project's notes.",
        epilog=config_cli.epilog(None) if epilogs else None, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"cockpit {__version__}")
    tui_cli.add_arguments(parser, root=True)
    sub = parser.add_subparsers(
        dest="command",
        metavar="{memory,run,ls,send,resume,kill,attach,approve,deny,budget,worktrees,shell,server,agents,doctor,config,"
                "completion,web}")
    wanted = COMMAND_MODULES.get(command or "")
    for name in [wanted] if wanted else list(dict.fromkeys(COMMAND_MODULES.values())):
        module = importlib.import_module(f"cockpit.{name}")
        module.add_parser(sub)
    for name, child in sub.choices.items() if epilogs else ():  # each --help names the config keys it reads
        _add_epilog(child, config_cli.epilog(name))
    parser.set_defaults(func=tui_cli.run)
    return parser


def _add_epilog(parser: argparse.ArgumentParser, text: str) -> None:
    """Append ``text`` to the ``--help`` of ``parser`` and of its sub-commands."""
    import argparse

    parser.epilog = "\n\n".join(filter(None, [parser.epilog, text]))
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _add_epilog(child, text)


def _tolerant_output() -> None:
    """Under an ASCII locale (``LC_ALL=POSIX`` with ``PYTHONUTF8=0``) a note's ``café`` is
    printed as ``caf\\xe9`` instead of ending the command with a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding and encoding not in ("utf8", "utf8sig") and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``, but an argument no parser knows is refused by the sub-command
    it was given to (its usage, not the whole CLI's)."""
    import argparse

    args, extras = parser.parse_known_args(argv)
    if extras:
        chosen = parser
        while True:
            subs = [a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)]
            name = getattr(args, subs[0].dest, None) if subs else None
            if not subs or name not in subs[0].choices:
                break
            chosen = subs[0].choices[name]
        # an optional positional after an option (`worktrees diff --host box ID`: argparse takes
        # `diff`, then the option, and leaves the id over): it fills the next one still empty
        empty = [a for a in chosen._actions if not a.option_strings and a.nargs == "?"
                 and getattr(args, a.dest, None) is None
                 and not isinstance(a, argparse._SubParsersAction)]
        while extras and empty and not extras[0].startswith("-"):
            action = empty.pop(0)
            value = extras.pop(0)
            if action.type is not None:  # as argparse converts it
                value = chosen._get_value(action, value)
            if action.choices is not None and value not in action.choices:
                chosen.error(f"argument {action.dest}: invalid choice: {value!r}")
            setattr(args, action.dest, value)
        if extras:
            chosen.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def _for_the_host(args: argparse.Namespace, said: str) -> str:
    """An error of a command given ``--host``: a host's server words the commands it suggests for
    its own machine (``cockpit resume ID``, "see cockpit ls"): they name the host here."""
    from cockpit.host_cli import for_host, host_name

    try:
        host = host_name(args)
    except CockpitError:  # (a --host that names nothing: said elsewhere)
        return said
    if host is None:  # a grid id names its host: `cockpit approve box:ID`
        from cockpit import hostids

        ids = [v for k in ("id", "session", "session_id") if isinstance(v := getattr(args, k, None), str)]
        host = next((h for h in (hostids.host_of(i) for i in ids) if h != hostids.LOCAL), None)
    return for_host(said, host)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["memory", "hook"]:  # the Claude Code hook: no time for the whole CLI
        from cockpit.hook_fast import main as hook_main

        return hook_main(argv[2:])
    _tolerant_output()
    import os

    completing = "_ARGCOMPLETE" in os.environ  # shell completion: every command
    helping = completing or any(a in ("-h", "--help") for a in argv)
    parser = build_parser(None if completing or not argv else argv[0], epilogs=helping)
    if completing:
        from cockpit.completion_cli import autocomplete

        autocomplete(parser)
    args = _parse(parser, argv)
    from cockpit.app_flags import moved

    try:  # the app's flags before a sub-command apply to it (or are refused): never silently dropped
        again = moved(parser, args, argv)
    except CockpitError as exc:
        print(f"cockpit: error: {exc}", file=sys.stderr)
        return exc.code
    if again is not None:
        argv = again
        args = _parse(parser, argv)
    from cockpit.host_cli import qualified_ids

    try:  # a session id as the grid shows it, box:ID, means --host box ID
        argv = qualified_ids(args, argv)
    except CockpitError as exc:
        print(f"cockpit: error: {exc}", file=sys.stderr)
        return exc.code
    if getattr(args, "no_server", False):
        # `cockpit --no-server memory search …` and `cockpit memory search … --no-server` mean the
        # same as COCKPIT_NO_SERVER=1, which every sub-command (and the hook, the MCP server) reads
        os.environ["COCKPIT_NO_SERVER"] = "1"
    from cockpit.server.client import RemoteError, RemoteRefused, ServerError
    from cockpit.textsafe import clean, one_line

    try:
        from cockpit.host_cli import host_name

        if getattr(args, "command", None) in REMOTE_WHOLE and host_name(args):  # that host's files
            from cockpit.host_cli import run_there

            return run_there(args, argv)
        return int(args.func(args) or 0)
    except CockpitError as exc:  # (text from a server or a host in it never drives the terminal)
        print(f"cockpit: error: {_for_the_host(args, clean(exc))}", file=sys.stderr)
        return exc.code
    except (RemoteError, ServerError) as exc:  # the server refused, or cannot be reached: one line
        said = one_line(getattr(exc, "message", None) or exc)
        if isinstance(exc, RemoteError):
            said = _for_the_host(args, said)
        print(f"cockpit: error: {said}", file=sys.stderr)
        return 2 if isinstance(exc, RemoteRefused) else 1
    except KeyboardInterrupt:
        print("cockpit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `cockpit memory search … --json | head`: the reader left
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

