"""Private scratch folders named for the process that made them (``<prefix><pid>-<random>``).

A session's sandbox temp folder and its allowlist proxy's socket folder are removed when the
session ends; a process killed outright (SIGKILL, a power cut) leaves them behind. Each new
folder is therefore made after removing the folders beside it whose process is gone: the next
session a server (or a ``--no-server`` run) starts sweeps what a killed one left. A folder whose
process lives, or whose name carries no process id (made by an older version), is left alone.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path


def make(parent: Path | str, prefix: str) -> str:
    """A new private folder (mode 0700) in ``parent``, named ``<prefix><this pid>-…``, after
    :func:`sweep` of ``parent``."""
    root = Path(parent)
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    sweep(root, prefix)
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=root)


def sweep(parent: Path | str, prefix: str) -> list[str]:
    """Remove the folders ``<prefix><pid>-…`` in ``parent`` whose process no longer exists;
    returns their paths. Never follows a link; errors leave a folder for the next sweep."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)-[^/]+")
    removed: list[str] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        found = pattern.fullmatch(entry.name)
        if found is None or not entry.is_dir(follow_symlinks=False) or alive(int(found.group(1))):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts as existing)."""
    if pid <= 0:
        return True  # not a process id we made: keep
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
