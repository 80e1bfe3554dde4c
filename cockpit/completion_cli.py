"""``cockpit completion bash|zsh|fish``: the shell code that completes cockpit's commands and
options, from ``argcomplete`` (the shell asks ``cockpit`` itself at each TAB, so completions
always match the installed version)."""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "fish")
INSTALL = {
    "bash": "cockpit completion bash >> ~/.bashrc",
    "zsh": "cockpit completion zsh >> ~/.zshrc",
    "fish": "cockpit completion fish > ~/.config/fish/completions/cockpit.fish",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help="print shell completion code (bash, zsh, fish)",
                       description="Print the code that makes your shell complete cockpit's commands.",
                       epilog="install: " + "; ".join(INSTALL.values()),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shell", choices=SHELLS)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import argcomplete

    print(argcomplete.shellcode(["cockpit"], shell=args.shell), end="")
    return 0


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request and exit, when this process is one."""
    import os

    if "_ARGCOMPLETE" in os.environ:
        import argcomplete

        argcomplete.autocomplete(parser)
