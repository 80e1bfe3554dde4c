"""The ``cockpit`` console command.

``cockpit``                 open the TUI (notes ``./notes``, workspace ``.``)
``cockpit memory …``        index, search, preseed, lint, save, eval
``cockpit run "task" …``    headless sessions, one report

Each sub-command lives in its own module, which adds its parser through ``add_parser(subparsers)``
and runs through the ``func`` default it sets. Errors a user can fix print one line to stderr and
exit non-zero (``CockpitError``); nothing prints a traceback for them.
"""

from __future__ import annotations

import argparse
import sys


class CockpitError(Exception):
    """A user-facing error: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def build_parser() -> argparse.ArgumentParser:
    from cockpit import headless, memory_cli, tui_cli

    parser = argparse.ArgumentParser(
        prog="cockpit",
        description="Run AI agent sessions side by side, each preseeded from the project's notes.",
    )
    tui_cli.add_arguments(parser)
    sub = parser.add_subparsers(dest="command", metavar="{memory,run}")
    memory_cli.add_parser(sub)
    headless.add_parser(sub)
    parser.set_defaults(func=tui_cli.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CockpitError as exc:
        print(f"cockpit: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("cockpit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `cockpit memory search … --json | head`: the reader left
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

