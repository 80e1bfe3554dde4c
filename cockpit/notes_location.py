"""Where a project's notes are: a folder given, or ``auto`` = Claude Code's auto-memory folder.

Claude Code keeps a project's memory in ``<config>/projects/<key>/memory/``, where ``<config>`` is
``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` and ``<key>`` is the project's absolute path with every
character that is not a letter or a digit replaced by ``-`` (``/home/ana/my_app`` →
``-home-ana-my-app``). ``auto`` tries the working directory, then the root of the git repository
that contains it. ``MEMORY.md`` there is an index, not a note (the engine skips it).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path


def claude_config_dir() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def project_key(path: Path | str) -> str:
    """Claude Code's folder name for a project path."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(Path(path).expanduser().resolve()))


def auto_memory_dir(cwd: Path | str) -> Path:
    """Claude Code's auto-memory folder for ``cwd`` (the first that exists of cwd's and its git
    root's; cwd's when neither exists)."""
    cwd = Path(cwd).expanduser().resolve()
    candidates = [cwd]
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        if top and Path(top).resolve() != cwd:
            candidates.append(Path(top).resolve())
    except (OSError, subprocess.SubprocessError):
        pass
    dirs = [claude_config_dir() / "projects" / project_key(c) / "memory" for c in candidates]
    return next((d for d in dirs if d.is_dir()), dirs[0])


def resolve_notes(value: str | os.PathLike | None, cwd: Path | str) -> Path:
    """The notes folder for a ``--notes`` value (``auto`` → :func:`auto_memory_dir`)."""
    from cockpit.hook_fast import notes_folder  # the rule itself (the hook's hot path reads it too)

    found = notes_folder(None if value is None else str(value), str(cwd))
    return auto_memory_dir(cwd) if found is None else Path(found)
