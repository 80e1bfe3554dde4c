"""A session's working tree and the confinement rule every file tool obeys.

A path the model gives is accepted when it resolves inside the root: relative paths are taken
from the root; absolute paths are allowed only when they already point inside it (Anthropic's
text editor tool is trained on absolute paths). Refused, with a :class:`PathRefused` whose message
the model can read: ``..`` components, ``~``, drive letters, absolute paths outside, and any path
whose symlinks resolve outside the root. Writes are also refused inside ``.git`` (the worktree's
link to the repository). Only regular files are read or written (no FIFOs, devices, sockets):
:func:`regular_file` checks with ``os.stat`` before anything is opened.

The check is on the path as it is when the tool call is judged; by the time the file is read or
written, a folder on the way may have been swapped for a symlink (by the session's own shell,
say). So the editor reads and writes through :func:`open_dir`, :func:`read_at` and
:func:`replace_at`: every folder from the root down is opened relative to its parent with
``O_NOFOLLOW``, the file too, and the new content goes to a temporary file in that same folder,
renamed over the name — a symlink met on the way is refused, never followed out of the tree.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from pathlib import Path, PurePath

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
    return _checked_regular(os.stat(path), path, max_bytes)


def _checked_regular(st: os.stat_result, path: Path, max_bytes: int) -> os.stat_result:
    """``st`` when it is a regular file's of at most ``max_bytes`` bytes (see :func:`regular_file`)."""
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(str(path))
    if stat.S_ISLNK(st.st_mode):
        raise PathRefused(f"refused: {path.name} became a symlink after its path was checked; nothing was "
                          "read or written through it")
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"refused: {path.name} is not a regular file (FIFO, device or socket)")
    if st.st_size > max_bytes:
        raise PathRefused(
            f"refused: {path.name} is {st.st_size:,} bytes, over the {max_bytes:,}-byte cap for this tool"
        )
    return st


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOT_FOLLOWED = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)  # O_NOFOLLOW met a symlink (EMLINK: BSDs)


def open_dir(root: Path, rel: PurePath | str, *, create: bool = False) -> int:
    """A descriptor of the folder ``rel`` (relative) under ``root``, opened one name at a time
    relative to its parent without following a symlink; ``create`` makes missing folders
    (``mkdir`` in the parent). The caller closes it. Raises :class:`PathRefused` when a name on
    the way is a symlink or a file, ``FileNotFoundError`` when one is missing (``create`` off)."""
    names = [name for name in PurePath(rel).parts if name != "."]
    if PurePath(rel).is_absolute() or ".." in names:
        raise PathRefused(f"refused: '{rel}' is not a path inside the working tree")
    fd = os.open(root, _DIR_FLAGS)
    done: list[str] = []
    try:
        for name in names:
            done.append(name)
            child = _open_child_dir(fd, name, "/".join(done), create)
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_child_dir(parent: int, name: str, shown: str, create: bool) -> int:
    """The folder ``name`` in the folder ``parent``, never through a symlink (see :func:`open_dir`)."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        if exc.errno in _NOT_FOLLOWED:
            raise _not_a_folder(parent, name, shown) from None
        raise
    with contextlib.suppress(FileExistsError):  # made meanwhile: opened (and checked) below
        os.mkdir(name, dir_fd=parent)
    return _open_child_dir(parent, name, shown, create=False)


def _not_a_folder(parent: int, name: str, shown: str) -> PathRefused:
    """The refusal for a name on the way that did not open as a folder (a symlink, or a file)."""
    try:
        is_link = stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        is_link = False
    if is_link:
        return PathRefused(f"refused: {shown} is a symlink now (it changed after the path was checked); "
                           "nothing was read or written through it")
    return PathRefused(f"refused: {shown} is not a folder")


def read_at(dir_fd: int, path: Path, max_bytes: int) -> tuple[bytes, os.stat_result]:
    """(content, stat) of the regular file named ``path.name`` in the folder ``dir_fd``, at most
    ``max_bytes`` bytes, never through a symlink. Checked with ``stat`` before it is opened (a
    FIFO or a device is refused unopened), and again once open. Raises as :func:`regular_file`."""
    _checked_regular(os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False), path, max_bytes)
    try:
        fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _NOT_FOLLOWED:
            raise PathRefused(f"refused: {path.name} became a symlink after its path was checked; nothing "
                              "was read or written through it") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        st = _checked_regular(os.fstat(fd), path, max_bytes)
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PathRefused(f"refused: {path.name} is over the {max_bytes:,}-byte cap for this tool")
    return data, st


def read_regular(root: Path, path: Path, max_bytes: int) -> bytes:
    """The content of the regular file ``path`` (inside ``root``), every folder on the way and
    the file opened without following a symlink (see :func:`read_at`)."""
    rel = path.relative_to(root)
    if not rel.parts:
        raise IsADirectoryError(str(path))
    dir_fd = open_dir(root, rel.parent)
    try:
        return read_at(dir_fd, path, max_bytes)[0]
    finally:
        os.close(dir_fd)


def replace_at(dir_fd: int, name: str, data: bytes, mode: int | None = None) -> None:
    """Make ``name`` in the folder ``dir_fd`` hold ``data``, atomically: a new temporary file in the
    same folder (``O_CREAT | O_EXCL``), written, synced, then renamed over ``name`` (a symlink there
    is replaced, not followed). ``mode``: the file's permissions (None: a new file's default)."""
    tmp, fd = _temp_at(dir_fd, name, 0o600 if mode is not None else 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fd, mode)
            fh.write(data)
            fh.flush()
            os.fsync(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):  # the rename itself on disk (not every file system can)
        os.fsync(dir_fd)


def _temp_at(dir_fd: int, name: str, mode: int) -> tuple[str, int]:
    """(name, descriptor) of a new empty file beside ``name`` in ``dir_fd`` (hidden, unique)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    stem = os.fsdecode(os.fsencode(name)[:200])  # room for the suffix within the 255-byte name limit
    while True:
        tmp = f".{stem}.{secrets.token_hex(4)}.cockpit-tmp"
        try:
            return tmp, os.open(tmp, flags, mode, dir_fd=dir_fd)
        except FileExistsError:
            continue
