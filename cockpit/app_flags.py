"""The app's flags given before a sub-command: ``cockpit --permission-mode plan run "x"``.

Argparse lets the app's flags (:func:`cockpit.tui_cli.add_arguments`) stand before any
sub-command, and then silently drops them: the sub-command's own default of the same option
wins. Here such a flag is applied to the sub-command when it has the same option (as if it had
been given after it), and refused with one line naming where it belongs when it has not.
``--no-server`` is every command's (it becomes ``COCKPIT_NO_SERVER=1``), and an option the
sub-command inherits as given (its default is ``SUPPRESS``: ``--host`` of the session
commands, ``web``'s app flags) needs nothing.
"""

from __future__ import annotations

import argparse

from cockpit.errors import CockpitError

GLOBAL = {"no_server"}  # applies to every command as it is (cockpit.cli.main sets the variable)


def _probe() -> argparse.ArgumentParser:
    """The root's app flags, none with a default (so only those given show), then the rest."""
    from cockpit import tui_cli

    probe = argparse.ArgumentParser(add_help=False, prog="cockpit")
    tui_cli.add_arguments(probe)
    for action in probe._actions:
        action.default = argparse.SUPPRESS
    probe.add_argument("rest", nargs=argparse.REMAINDER)
    return probe


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[argparse.ArgumentParser, str]:
    """The deepest parser ``args`` went through (``memory search``'s), and its words."""
    words: list[str] = []
    while (action := _subparsers(parser)) is not None:
        name = getattr(args, action.dest, None) if action.dest != argparse.SUPPRESS else None
        if not name or name not in action.choices:
            break
        words.append(name)
        parser = action.choices[name]
    return parser, " ".join(words)


def _long(action: argparse.Action) -> str:
    return next((o for o in action.option_strings if o.startswith("--")), action.option_strings[0])


def _tokens(flag: str, action: argparse.Action, value) -> list[str]:
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return [flag]
    return [f"{flag}={v}" for v in (value if isinstance(value, list) else [value])]


def moved(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]) -> list[str] | None:
    """``argv`` with the app flags given before the sub-command moved after it (None: nothing
    to move). Raises CockpitError (one line) for a flag the sub-command has not, or one given
    both before and after it."""
    if not getattr(args, "command", None):
        return None
    given, _ = _probe().parse_known_args(argv)
    rest: list[str] = given.rest
    top = {a.dest: a for a in parser._actions if a.option_strings}
    sub, words = _chosen(parser, args)
    mine = {a.dest: a for a in sub._actions if a.option_strings}
    add: list[str] = []
    kept: list[str] = []  # (before the sub-command, as given)
    for dest, value in vars(given).items():
        if dest == "rest":
            continue
        flag = _long(top[dest])
        target = mine.get(dest)
        if dest in GLOBAL or (target is not None and target.default == argparse.SUPPRESS):
            kept += _tokens(flag, top[dest], value)  # every command's, or taken from the root as it is
            continue
        if target is None or _long(target) != flag:
            raise CockpitError(f"{flag} before `{words}` is a flag of the app (`cockpit {flag} …`); "
                               f"`cockpit {words}` has no {flag}: drop it")
        if any(w == flag or w.startswith(flag + "=") for w in rest[: _end(rest)]):
            raise CockpitError(f"{flag} was given both before and after `{words}`: give it once, after `{words}`")
        add += _tokens(flag, target, value)
    if not add:
        return None
    cut = _after(rest, words.split())
    return [*kept, *rest[:cut], *add, *rest[cut:]]


def _after(rest: list[str], words: list[str]) -> int:
    """Where the sub-command's words end in ``rest`` (its options go right after them: a
    positional that takes several values, ``run``'s tasks, is then still whole)."""
    at = 0
    for word in words:
        if word not in rest[at:]:  # (not spelled out: the options go last)
            return _end(rest)
        at = rest.index(word, at) + 1
    return at


def _end(rest: list[str]) -> int:
    """Where the options end (a ``--`` makes what follows positional)."""
    return rest.index("--") if "--" in rest else len(rest)


__all__ = ["moved"]
