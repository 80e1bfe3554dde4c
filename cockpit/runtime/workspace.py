"""A session's working tree and the confinement rule every file tool obeys.

A path the model gives is accepted when it resolves inside the root: relative paths are taken
from the root; absolute paths are allowed only when they already point inside it (Anthropic's
text editor tool is trained on absolute paths). Refused, with a :class:`PathRefused` whose message
the model can read: ``..`` components, ``~``, drive letters, absolute paths outside, and any path
whose symlinks resolve outside the root. Writes are also refused inside ``.git`` (the worktree's
link to the repository). Only regular files are read or written (no FIFOs, devices, sockets):
:func:`regular_file` checks with ``os.stat`` before anything is opened.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".mypy_cache", ".pytest_cache"}


class PathRefused(ValueError):
    """A path outside the working tree (or otherwise not allowed). The message is for the model."""


class Workspace:
    """The folder a session may touch. ``root`` is resolved once (symlinks followed)."""

    def __init__(self, root: Path | str):
        self.root = Path(root).resolve()

    def resolve(self, given: str | None, *, for_write: bool = False) -> Path:
        """The real path for ``given`` (relative to the root, or absolute inside it).

        Raises :class:`PathRefused` for anything leaving the root (see module doc).
        """
        rel = (given or ".").strip() or "."
        if rel.startswith("~") or re.match(r"^[A-Za-z]:[\\/]", rel):
            raise PathRefused(f"refused: '{rel}' is outside the working tree {self.root}")
        if "\x00" in rel:
            raise PathRefused("refused: the path contains a NUL byte")
        if ".." in Path(rel).parts:
            raise PathRefused(f"refused: '{rel}' leaves the working tree ('..' is not allowed)")
        if os.path.isabs(rel):
            candidate = Path(os.path.normpath(rel))
            if not (candidate == self.root or candidate.is_relative_to(self.root)):
                raise PathRefused(
                    f"refused: '{rel}' is outside the working tree; use a path inside {self.root}"
                )
        else:
            candidate = self.root / rel
        long = next((part for part in Path(rel).parts if len(os.fsencode(part)) > 255), None)
        if long is not None:
            raise PathRefused(f"refused: a name in '{rel[:80]}…' is longer than 255 bytes, the file system's limit")
        try:
            target = candidate.resolve()
        except (RuntimeError, OSError) as exc:  # a symlink loop (RuntimeError before 3.13, ELOOP after)
            raise PathRefused(f"refused: '{rel}' cannot be resolved ({exc.__class__.__name__}: "
                              f"{getattr(exc, 'strerror', None) or exc})") from None
        if not (target == self.root or target.is_relative_to(self.root)):
            raise PathRefused(f"refused: '{rel}' resolves outside the working tree (symlink)")
        if for_write and ".git" in target.relative_to(self.root).parts:
            raise PathRefused(f"refused: '{rel}' is inside .git; edit the project's files, not git's")
        return target

    def rel(self, p: Path) -> str:
        """``p`` relative to the root, POSIX style ("." for the root)."""
        return p.relative_to(self.root).as_posix() or "."

    def walk(self, start: Path, depth: int | None = None):
        """Files and folders under ``start`` that resolve inside the root, sorted, hidden items
        and :data:`SKIP_DIRS` left out; ``depth`` levels (None = all). Yields ``(path, is_dir)``."""
        base_depth = len(start.parts)
        for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
            here = Path(dirpath)
            level = len(here.parts) - base_depth
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            for d in dirnames:
                yield here / d, True
            for fn in sorted(f for f in filenames if not f.startswith(".")):
                p = here / fn
                try:
                    if not p.resolve().is_relative_to(self.root):
                        continue
                except (OSError, RuntimeError):  # a symlink loop: left out of the listing
                    continue
                yield p, False
            if depth is not None and level + 1 >= depth:
                dirnames[:] = []


def regular_file(path: Path, max_bytes: int) -> os.stat_result:
    """``os.stat`` of ``path`` when it is a regular file of at most ``max_bytes`` bytes.

    Raises :class:`PathRefused` for a FIFO, device, socket or a file over the cap, and
    ``FileNotFoundError`` when it does not exist.
    """
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(str(path))
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"refused: {path.name} is not a regular file (FIFO, device or socket)")
    if st.st_size > max_bytes:
        raise PathRefused(
            f"refused: {path.name} is {st.st_size:,} bytes, over the {max_bytes:,}-byte cap for this tool"
        )
    return st
