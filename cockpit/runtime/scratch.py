"""Private scratch folders named for the process that made them:
``<prefix><pid>-<where>-<random>``, ``where`` naming this machine's boot and PID namespace.

A session's sandbox temp folder (and the ``.gitconfig`` beside it) and its allowlist proxy's
socket folder are removed when the session ends; a process killed outright (SIGKILL, a power cut)
leaves them behind. Each new folder is therefore made after removing those beside it whose
process is gone: the next session a server (or a ``--no-server`` run) starts sweeps what a killed
one left. Only a folder made under this very boot and PID namespace is judged: a process in a
container, or on another machine sharing the folder, has pids this one cannot see, so its
folders are never taken for dead. A folder whose process lives, or whose name says nothing of
its maker (an older version's), is left alone.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

# files a folder's user writes beside it (sandbox.confinement_for: the git configs' sanitized copies)
COMPANIONS = (".gitconfig", ".home.gitconfig", ".xdg.gitconfig", ".global.gitconfig", ".system.gitconfig",
              ".sysenv.gitconfig")


@functools.lru_cache(maxsize=1)
def where() -> str:
    """8 hex digits naming this boot of this machine and this process's PID namespace."""
    parts = []
    for path in ("/proc/sys/kernel/random/boot_id", "/proc/self/ns/pid"):
        try:
            parts.append(Path(path).read_text().strip() if path.endswith("boot_id") else os.readlink(path))
        except OSError:
            parts.append("?")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]


def make(parent: Path | str, prefix: str) -> str:
    """A new private folder (mode 0700) in ``parent``, named ``<prefix><this pid>-<where>-…``,
    after :func:`sweep` of ``parent``."""
    root = Path(parent)
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    sweep(root, prefix)
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-{where()}-", dir=root)


def sweep(parent: Path | str, prefix: str) -> list[str]:
    """Remove the folders ``<prefix><pid>-<where>-…`` in ``parent`` made under this boot and PID
    namespace whose process no longer exists, with their companion files; returns the folders'
    paths. Never follows a link; errors leave a folder for the next sweep."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)-" + where() + r"-[^/]+")
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
        for suffix in COMPANIONS:
            companion = entry.path + suffix
            if os.path.isfile(companion) and not os.path.islink(companion):
                os.unlink(companion)
        removed.append(entry.path)
    return removed


def remove(folder: str) -> None:
    """Remove ``folder`` (a folder :func:`make` made) and its companion files."""
    shutil.rmtree(folder, ignore_errors=True)
    for suffix in COMPANIONS:
        try:
            os.unlink(folder.rstrip("/") + suffix)
        except OSError:
            pass


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
