"""Client side of Anthropic's text editor tool (``text_editor_20250728``, name
``str_replace_based_edit_tool``): ``view``, ``create``, ``str_replace``, ``insert``.

Every path goes through :class:`~cockpit.runtime.workspace.Workspace` (confined to the working
tree). Files are read only when they are regular files under :data:`MAX_FILE_BYTES`; text must
be UTF-8 (a file that is not is a tool error, never a crash). A file's line endings (LF or CRLF)
are kept. An edit is computed first as an :class:`EditPlan` (old and new text, a unified diff for
the approval prompt) and written only by :func:`apply_plan`, atomically (temp file + rename).
Files are read and written through folder descriptors opened from the root down without
following symlinks (:func:`~cockpit.runtime.workspace.open_dir`): a folder swapped for a symlink
between the plan and the write is refused, nothing lands outside the tree.

Errors are :class:`EditorError` (or ``PathRefused``) with a message for the model; the caller
turns them into ``is_error`` tool results.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.runtime.workspace import PathRefused, Workspace, open_dir, read_at, read_regular, replace_at

TOOL_NAME = "str_replace_based_edit_tool"
TOOL_TYPE = "text_editor_20250728"
MAX_FILE_BYTES = 10 * 1024 * 1024  # view / edit
MAX_CREATE_CHARS = 5 * 1024 * 1024
MAX_VIEW_CHARS = 60_000  # also sent as the tool's ``max_characters``
MAX_DIR_ENTRIES = 400
EDIT_COMMANDS = ("create", "str_replace", "insert")
COMMANDS = ("view",) + EDIT_COMMANDS


class EditorError(ValueError):
    """A refused or failed editor command (message for the model)."""


@dataclass(frozen=True)
class EditPlan:
    """A change to one file, not yet written. ``old`` is None for a new file. ``diff`` is a
    unified diff (relative path, 3 lines of context); ``added``/``removed`` count lines;
    ``root``: the working tree ``path`` is in (the write goes down from it)."""

    path: Path
    rel: str
    old: str | None
    new: str
    newline: str
    diff: str
    added: int
    removed: int
    message: str  # what the model is told once it is written
    root: Path


def _read_text(root: Path, path: Path) -> tuple[str, str]:
    """(text with LF line ends, the file's newline) of a regular UTF-8 file inside ``root`` (read
    without following a symlink on the way)."""
    return _decode(read_regular(root, path, MAX_FILE_BYTES), path)


def _decode(raw: bytes, path: Path) -> tuple[str, str]:
    """(text with LF line ends, the newline) of a file's bytes; EditorError unless UTF-8 text."""
    if b"\x00" in raw[:8192]:
        raise EditorError(f"{path.name} is a binary file; the editor handles text files only")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EditorError(f"{path.name} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    newline = "\r\n" if "\r\n" in text and text.count("\r\n") == text.count("\n") else "\n"
    if newline == "\r\n":
        text = text.replace("\r\n", "\n")
    return text, newline


def _numbered(text: str, start: int = 1) -> str:
    return "\n".join(f"{i:6}\t{line}" for i, line in enumerate(text.split("\n"), start))


def _diff(rel: str, old: str | None, new: str) -> tuple[str, int, int]:
    """(unified diff of ``rel`` from ``old`` (None: a new file) to ``new``, lines added, removed)."""
    a = (old or "").splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, f"a/{rel}" if old is not None else "/dev/null", f"b/{rel}", n=3))
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    text = "".join(ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines)
    return text, added, removed


edit_diff = _diff


def _need(data: dict, *keys: str) -> None:
    missing = [k for k in keys if not isinstance(data.get(k), str)]
    if missing:
        raise EditorError(f"{data.get('command')}: missing or non-string field(s): {', '.join(missing)}")


class Editor:
    """The editor for one working tree."""

    def __init__(self, workspace: Workspace):
        self.ws = workspace

    # -- view ------------------------------------------------------------------------------
    def view(self, data: dict) -> str:
        _need(data, "path")
        path = self.ws.resolve(data["path"])
        if not path.exists():
            raise EditorError(f"the path {data['path']} does not exist")
        if path.is_dir():
            return self._view_dir(path)
        text, _ = _read_text(self.ws.root, path)
        rng = data.get("view_range")
        start = 1
        if rng is not None:
            ints = isinstance(rng, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in rng)
            if not ints or len(rng) != 2:
                raise EditorError("view_range must be a list of two integers [start, end] (end -1 = to the end)")
            lines = text.split("\n")
            start, end = rng
            if start < 1 or start > len(lines):
                raise EditorError(f"view_range start {start} is outside the file's lines 1-{len(lines)}")
            if end != -1 and (end < start or end > len(lines)):
                raise EditorError(f"view_range end {end} must be -1 or between {start} and {len(lines)}")
            text = "\n".join(lines[start - 1 : None if end == -1 else end])
        out = _numbered(text, start)
        if len(out) > MAX_VIEW_CHARS:
            out = out[:MAX_VIEW_CHARS] + f"\n[truncated at {MAX_VIEW_CHARS} characters; use view_range]"
        return out

    def _view_dir(self, path: Path) -> str:
        entries = []
        for p, is_dir in self.ws.walk(path, depth=2):
            # a name that is not UTF-8 is shown with \xNN escapes (a lone surrogate cannot be sent)
            name = self.ws.rel(p).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            entries.append(name + ("/" if is_dir else ""))
            if len(entries) >= MAX_DIR_ENTRIES:
                entries.append(f"[stopped at {MAX_DIR_ENTRIES} entries]")
                break
        head = f"Here's the files and directories up to 2 levels deep in {self.ws.rel(path)}, excluding hidden items:\n"
        return head + ("\n".join(entries) if entries else "(empty)")

    # -- edits: plan, then apply -----------------------------------------------------------
    def plan(self, data: dict) -> EditPlan:
        """The change an edit command would make (nothing written). Raises EditorError/PathRefused."""
        command = data.get("command")
        if command == "create":
            _need(data, "path", "file_text")
            if data["path"].rstrip().endswith("/"):
                raise EditorError(f"create: {data['path']} names a folder; give a file path")
            path = self.ws.resolve(data["path"], for_write=True)
            for parent in path.relative_to(self.ws.root).parents:
                if (self.ws.root / parent).exists() and not (self.ws.root / parent).is_dir():
                    raise EditorError(f"create: {parent.as_posix()} is a file, not a folder")
            if len(data["file_text"]) > MAX_CREATE_CHARS:
                raise EditorError(f"create: file_text is over the {MAX_CREATE_CHARS:,}-character cap")
            old, newline = None, "\n"
            if path.exists():
                if path.is_dir():
                    raise EditorError(f"create: {data['path']} is a folder")
                old, newline = _read_text(self.ws.root, path)
            new = data["file_text"].replace("\r\n", "\n")
            verb = "overwrote" if old is not None else "created"
            return self._plan(path, old, new, newline, f"File {verb} successfully at: {data['path']}")
        if command in ("str_replace", "insert"):
            _need(data, "path")
            path = self.ws.resolve(data["path"], for_write=True)
            if not path.exists():
                raise EditorError(f"the path {data['path']} does not exist")
            if path.is_dir():
                raise EditorError(f"{data['path']} is a folder")
            old, newline = _read_text(self.ws.root, path)
            if command == "str_replace":
                return self._str_replace(path, old, newline, data)
            return self._insert(path, old, newline, data)
        raise EditorError(f"unknown command {command!r}; use one of: {', '.join(COMMANDS)}")

    def _str_replace(self, path: Path, old: str, newline: str, data: dict) -> EditPlan:
        _need(data, "old_str")
        old_str = data["old_str"].replace("\r\n", "\n")
        new_str = data.get("new_str") or ""
        if not isinstance(new_str, str):
            raise EditorError("str_replace: new_str must be a string")
        if not old_str:
            raise EditorError("str_replace: old_str is empty; give the exact text to replace")
        if old_str == new_str.replace("\r\n", "\n"):
            raise EditorError("str_replace: old_str and new_str are the same; nothing would change")
        count = old.count(old_str)
        if count == 0:
            raise EditorError(
                f"No replacement was performed, old_str did not appear verbatim in {data['path']}."
            )
        if count > 1:
            lines, pos = [], old.find(old_str)
            while pos != -1:
                lines.append(old.count("\n", 0, pos) + 1)
                pos = old.find(old_str, pos + 1)
            raise EditorError(
                f"No replacement was performed. Multiple occurrences of old_str in lines {lines}. "
                "Please ensure it is unique (include more surrounding context)."
            )
        new = old.replace(old_str, new_str.replace("\r\n", "\n"), 1)
        return self._plan(path, old, new, newline, f"The file {data['path']} has been edited (1 replacement).")

    def _insert(self, path: Path, old: str, newline: str, data: dict) -> EditPlan:
        text = data.get("insert_text", data.get("new_str"))
        line = data.get("insert_line")
        if not isinstance(text, str):
            raise EditorError("insert: missing or non-string field: insert_text")
        lines = old.split("\n")
        if not isinstance(line, int) or isinstance(line, bool) or not 0 <= line <= len(lines):
            raise EditorError(f"insert: insert_line must be an integer between 0 and {len(lines)}")
        add = text.replace("\r\n", "\n").split("\n")
        if add and add[-1] == "" and len(add) > 1:
            add = add[:-1]
        new = "\n".join(lines[:line] + add + lines[line:])
        message = f"The file {data['path']} has been edited (inserted after line {line})."
        return self._plan(path, old, new, newline, message)

    def _plan(self, path: Path, old: str | None, new: str, newline: str, message: str) -> EditPlan:
        if len(new) > MAX_FILE_BYTES:
            raise EditorError(f"the edited file would be over the {MAX_FILE_BYTES:,}-character cap")
        try:
            new.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EditorError(f"the new text is not valid Unicode ({exc.reason} at character {exc.start})") from None
        rel = self.ws.rel(path)
        diff, added, removed = _diff(rel, old, new)
        return EditPlan(path, rel, old, new, newline, diff, added, removed, message, self.ws.root)


def apply_plan(plan: EditPlan) -> None:
    """Write ``plan.new`` (with the file's own line ends) atomically; keeps an existing file's mode.
    Every folder from the root down is opened without following a symlink (missing ones made for a
    new file), and the file is checked and replaced inside the last one.

    Raises EditorError when the file changed on disk since the plan was made, PathRefused when a
    folder on the way became a symlink."""
    rel = plan.path.relative_to(plan.root)
    dir_fd = open_dir(plan.root, rel.parent, create=plan.old is None)
    try:
        mode = _unchanged_mode(plan, dir_fd)
        replace_at(dir_fd, plan.path.name, plan.new.replace("\n", plan.newline).encode("utf-8"), mode)
    finally:
        os.close(dir_fd)


def _unchanged_mode(plan: EditPlan, dir_fd: int) -> int | None:
    """The permissions of the file the plan replaces (None: a new file), once it is checked to be
    as the plan found it in the folder ``dir_fd``. Raises EditorError when it is not."""
    if plan.old is None:
        try:
            os.stat(plan.path.name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        raise EditorError(f"{plan.rel} was created by something else while waiting; view it first")
    raw, st = read_at(dir_fd, plan.path, MAX_FILE_BYTES)
    if _decode(raw, plan.path)[0] != plan.old:
        raise EditorError(f"{plan.rel} changed on disk while waiting; view it again and redo the edit")
    return st.st_mode & 0o7777


def summarize(data: Any) -> str:
    """One line for a pane: ``view src/app.py``, ``str_replace src/app.py``."""
    if not isinstance(data, dict):
        return "(bad input)"
    return f"{data.get('command', '?')} {data.get('path', '')}".strip()


__all__ = ["Editor", "EditPlan", "EditorError", "PathRefused", "apply_plan", "TOOL_NAME", "TOOL_TYPE",
           "EDIT_COMMANDS", "COMMANDS", "MAX_VIEW_CHARS", "edit_diff"]
