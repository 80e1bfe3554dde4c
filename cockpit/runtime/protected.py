"""Protected paths: files that steer tools, editors, agents or git rather than being the project's code.

A change to one of them can run code later, outside any session's sandbox — a git hook runs at the
user's next commit, ``.envrc`` at the next ``cd``, ``.vscode/tasks.json`` in the editor, a
``CLAUDE.md`` or ``.mcp.json`` in the next agent — so an edit to one asks the user in every
permission mode (Claude Code protects the same kind of paths), the sandbox keeps the existing ones
read-only for the session's commands, and the diff screen flags them.

:func:`protected_reason` takes a path relative to the working tree (``/`` separators) and says why
it is protected, or ``""``. ``hooks_path`` is what ``core.hooksPath`` names (relative to the
tree), ``extra`` the globs from config (``[sandbox] protected``).
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

# folders whose every file is protected, at any depth
PROTECTED_DIRS = (".git", ".githooks", ".husky", ".vscode", ".idea", ".claude", ".codex", ".gemini", ".cursor",
                  ".github", ".gitlab", ".circleci", ".devcontainer")
# files protected by name, at any depth
PROTECTED_FILES = (".envrc", ".pre-commit-config.yaml", ".gitattributes", ".gitmodules", "CLAUDE.md",
                   "CLAUDE.local.md", "AGENTS.md", ".mcp.json")


def protected_reason(rel: str, hooks_path: str | None = None, extra: Iterable[str] = ()) -> str:
    """Why ``rel`` (relative to the working tree) is protected, or ``""`` when it is not."""
    rel = rel.replace("\\", "/").strip("/")
    while rel.startswith("./"):
        rel = rel[2:]
    if not rel:
        return ""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    lowered = [p.lower() for p in parts]
    for d in PROTECTED_DIRS:
        if d.lower() in lowered[:-1] or (d.lower() == lowered[-1]):
            return f"{d} is a protected folder (it steers git, an editor or an agent)"
    name = parts[-1]
    for f in PROTECTED_FILES:
        if name.lower() == f.lower():
            return f"{f} is a protected file (it steers git, a shell or an agent)"
    if hooks_path:
        hp = hooks_path.replace("\\", "/").strip("/")
        while hp.startswith("./"):
            hp = hp[2:]
        if hp and not hp.startswith("/") and (rel == hp or rel.startswith(hp + "/")):
            return f"{hp} is the repository's git hooks folder (core.hooksPath)"
    for pattern in extra:
        p = pattern.strip().strip("/")
        if not p:
            continue
        if fnmatch.fnmatchcase(rel, p) or (p.endswith("/**") and (rel == p[:-3] or rel.startswith(p[:-2]))):
            return f"{pattern} is protected in config.toml ([sandbox] protected)"
    return ""


def hooks_path_of(tree: Path | str) -> str | None:
    """``core.hooksPath`` of the repository at ``tree`` when it names a folder inside the tree
    (relative), else None. Never runs a hook; a missing git or repository is None."""
    try:
        out = subprocess.run(["git", "-C", str(tree), "config", "--get", "core.hooksPath"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    value = out.stdout.strip()
    if out.returncode != 0 or not value:
        return None
    if value.startswith("/"):
        try:
            return Path(value).resolve().relative_to(Path(tree).resolve()).as_posix()
        except (ValueError, OSError):
            return None
    return value


def existing_protected(tree: Path | str, hooks_path: str | None = None, extra: Iterable[str] = (),
                       limit: int = 200) -> list[Path]:
    """The protected files and folders that exist at the top of ``tree`` and one level down (what the
    sandbox binds read-only), at most ``limit``. Never follows a symlink out of the tree."""
    root = Path(tree)
    found: list[Path] = []
    names = set(PROTECTED_DIRS) | set(PROTECTED_FILES)
    if hooks_path:
        names.add(hooks_path.split("/")[0])
    try:
        top = list(root.iterdir())
    except OSError:
        return found
    for entry in top:
        if entry.name in names or protected_reason(entry.name, hooks_path, extra):
            found.append(entry)
        elif entry.is_dir() and not entry.is_symlink() and not entry.name.startswith("."):
            try:
                for sub in entry.iterdir():
                    if sub.name in PROTECTED_FILES or sub.name in PROTECTED_DIRS:
                        found.append(sub)
            except OSError:
                pass
        if len(found) >= limit:
            break
    return found[:limit]


def protected_snapshot(tree: Path | str, hooks_path: str | None = None, extra: Iterable[str] = ()) -> dict[str, str]:
    """The protected paths that differ from the tree's HEAD (changed, added, deleted), each with a
    fingerprint of its current state (size and mtime, or ``deleted``): two snapshots that differ
    say a command changed a protected path. Never runs a hook; ``{}`` outside a git tree."""
    try:
        out = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-C", str(tree),
                              "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"],
                             capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return {}
    if out.returncode != 0:
        return {}
    snap: dict[str, str] = {}
    for entry in out.stdout.split(b"\0"):
        if len(entry) < 4:
            continue
        rel = entry[3:].decode("utf-8", "surrogateescape")
        if not protected_reason(rel, hooks_path, extra):
            continue
        try:
            st = os.lstat(os.path.join(str(tree), rel))
            snap[rel] = f"{st.st_size}:{st.st_mtime_ns}:{st.st_mode}"
        except OSError:
            snap[rel] = "deleted"
    return snap


def revert(tree: Path | str, paths: Iterable[str]) -> None:
    """Put protected ``paths`` back as the tree's HEAD has them: tracked ones restored, new ones
    removed. Never runs a hook."""
    import shutil

    base = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-C", str(tree)]
    for rel in paths:
        tracked = subprocess.run([*base, "cat-file", "-e", f"HEAD:{rel}"], capture_output=True, timeout=30)
        if tracked.returncode == 0:
            subprocess.run([*base, "checkout", "HEAD", "--", rel], capture_output=True, timeout=60)
            continue
        full = os.path.join(str(tree), rel)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)
        elif os.path.lexists(full):
            os.unlink(full)
