"""Errors shared by the command-line modules (kept apart from ``cli.py`` so sub-commands do not
import the CLI root and the CLI root does not import them at module level)."""

from __future__ import annotations


class CockpitError(Exception):
    """A user-facing error: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code
