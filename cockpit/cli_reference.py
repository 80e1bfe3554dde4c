"""docs/CLI.md, made from the parsers themselves: every command's ``--help``, so the reference
cannot drift from the code (``tests/test_docs.py`` checks it is current).

    python -m cockpit.cli_reference > docs/CLI.md
"""

from __future__ import annotations

import argparse
import os
from unittest import mock

CONFIG_SHOWN = "~/.config/cockpit/config.toml"
WIDTH = "100"


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


def render() -> str:
    from pathlib import Path

    from cockpit.cli import build_parser

    with mock.patch.dict(os.environ, {"COLUMNS": WIDTH}), \
            mock.patch("cockpit.runtime.config.config_path", lambda: Path(CONFIG_SHOWN)):
        parser = build_parser()
        parser.prog = "cockpit"
        out = ["# Command-line reference", "",
               "Every command's `--help`, generated from the code (`python -m cockpit.cli_reference > docs/CLI.md`).",
               "Options are in [CONFIG.md](CONFIG.md) as well, with their environment variables and config keys.", ""]

        def walk(prog: str, p: argparse.ArgumentParser, level: int) -> None:
            out.extend([f"{'#' * level} `{prog}`", "", "```text", p.format_help().rstrip(), "```", ""])
            for name, child in _subcommands(p):
                walk(f"{prog} {name}", child, min(level + 1, 4))

        walk("cockpit", parser, 2)
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
