"""The model's tools: memory_search, memory_save and read-only workspace tools.

Tool definitions (:data:`TOOL_DEFINITIONS`) are identical for every session (cacheable).
Workspace tools are confined to the session's workspace folder: absolute paths, ``..``
components and symlinks resolving outside it are refused. Every failure (bad input, unknown
tool, refused path, engine error) comes back as ``ToolOutcome(is_error=True)`` with a message the
model can read; :meth:`ToolRunner.run` never raises except on cancellation.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_READ_CHARS = 60_000
MAX_LIST_ENTRIES = 500
MAX_MATCHES = 200
MAX_SEARCH_FILE_BYTES = 2_000_000
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".mypy_cache", ".pytest_cache"}

TOOL_DEFINITIONS: list[dict] = [
    {
        "name": "memory_search",
        "description": "Search the project's notes (hybrid keyword + semantic). Returns ranked notes with name, description, snippet, priority (★) and score.",
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "top_k": {"type": "integer", "description": "How many notes (1-20, default 5).", "minimum": 1, "maximum": 20},
            },
            "required": ["query"],
        },
    },
    {
        "name": "memory_save",
        "description": "Save ONE durable fact as a new project note. Refused if a note of that name exists.",
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Short kebab-case name, e.g. staging-port."},
                "description": {"type": "string", "description": "One line that names the fact (used for search)."},
                "body": {"type": "string", "description": "The fact, with any detail."},
                "priority": {"type": "boolean", "description": "True for facts every session must know."},
            },
            "required": ["name", "description", "body"],
        },
    },
    {
        "name": "read_file",
        "description": "Read a text file of the workspace. Path relative to the workspace root.",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "description": "First line (1-based, default 1).", "minimum": 1},
                "limit": {"type": "integer", "description": "Max lines (default all).", "minimum": 1},
            },
            "required": ["path"],
        },
    },
    {
        "name": "list_files",
        "description": "List files under a workspace folder (relative path, default the root).",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "pattern": {"type": "string", "description": "Glob on the file name, e.g. *.py"},
                "recursive": {"type": "boolean", "description": "Default true."},
            },
            "required": [],
        },
    },
    {
        "name": "search_files",
        "description": "Search workspace text files for a string (or a regex) and return matching lines as path:line: text.",
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "path": {"type": "string", "description": "Folder to search (default the root)."},
                "regex": {"type": "boolean", "description": "Treat query as a Python regex (default false)."},
            },
            "required": ["query"],
        },
    },
]

TOOL_NAMES = tuple(t["name"] for t in TOOL_DEFINITIONS)


@dataclass(frozen=True)
class ToolOutcome:
    content: str
    is_error: bool = False


class ToolInputError(ValueError):
    pass


class PathRefused(ValueError):
    pass


def _check_input(name: str, data: Any) -> dict:
    schema = next(t["input_schema"] for t in TOOL_DEFINITIONS if t["name"] == name)
    if not isinstance(data, dict):
        raise ToolInputError(f"{name}: input must be a JSON object, got {type(data).__name__}")
    missing = [k for k in schema["required"] if k not in data]
    if missing:
        raise ToolInputError(f"{name}: missing required field(s): {', '.join(missing)}")
    types = {"string": str, "integer": int, "boolean": bool}
    for key, spec in schema["properties"].items():
        if key in data and data[key] is not None:
            want = types[spec["type"]]
            val = data[key]
            ok = isinstance(val, want) and not (want is int and isinstance(val, bool))
            if not ok:
                raise ToolInputError(f"{name}: field '{key}' must be {spec['type']}")
    return data


class Workspace:
    """A folder the workspace tools may read. ``resolve`` refuses escapes (see module doc)."""

    def __init__(self, root: Path | str):
        self.root = Path(root).resolve()

    def resolve(self, rel: str | None) -> Path:
        rel = (rel or ".").strip() or "."
        if os.path.isabs(rel) or rel.startswith("~") or re.match(r"^[A-Za-z]:", rel):
            raise PathRefused(f"refused: '{rel}' is absolute; use a path relative to the workspace root")
        parts = Path(rel).parts
        if ".." in parts:
            raise PathRefused(f"refused: '{rel}' leaves the workspace ('..' is not allowed)")
        target = (self.root / rel).resolve()
        if not target.is_relative_to(self.root):
            raise PathRefused(f"refused: '{rel}' resolves outside the workspace (symlink)")
        return target

    def rel(self, p: Path) -> str:
        return p.relative_to(self.root).as_posix() or "."

    def walk(self, start: Path, recursive: bool = True):
        """Files under ``start`` that resolve inside the root (symlinked escapes skipped)."""
        if start.is_file():
            yield start
            return
        for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for fn in sorted(filenames):
                p = Path(dirpath) / fn
                try:
                    if not p.resolve().is_relative_to(self.root):
                        continue
                except OSError:
                    continue
                yield p
            if not recursive:
                break


def format_hits(hits) -> str:
    if not hits:
        return "No matching notes."
    lines = []
    for i, h in enumerate(hits, 1):
        star = "★ " if h.priority else ""
        desc = f": {h.description}" if h.description else ""
        snip = f"\n   {h.snippet}" if getattr(h, "snippet", "") else ""
        lines.append(f"{i}. {star}{h.name} (score {h.score:.3f}){desc}{snip}")
    return "\n".join(lines)


class ToolRunner:
    """Runs one session's tool calls. ``engine`` may be None (memory tools then return an error)."""

    def __init__(self, workspace: Path | str, engine=None, default_top_k: int | None = 5):
        self.workspace = Workspace(workspace)
        self.engine = engine
        self.default_top_k = default_top_k or 5  # None: the preseed's own default; search shows 5

    async def run(self, name: str, data: Any) -> ToolOutcome:
        if name not in TOOL_NAMES:
            return ToolOutcome(f"unknown tool '{name}'. Available: {', '.join(TOOL_NAMES)}", True)
        try:
            data = _check_input(name, data)
            return await getattr(self, f"_t_{name}")(data)
        except (ToolInputError, PathRefused) as exc:
            return ToolOutcome(str(exc), True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a tool must never crash the session
            return ToolOutcome(f"{name} failed: {type(exc).__name__}: {exc}", True)

    # memory tools ------------------------------------------------------------------------
    async def _t_memory_search(self, d: dict) -> ToolOutcome:
        if self.engine is None:
            return ToolOutcome("memory_search unavailable: no notes folder configured", True)
        top_k = max(1, min(20, d.get("top_k") or self.default_top_k))
        hits = await asyncio.to_thread(self.engine.search, d["query"], top_k)
        return ToolOutcome(format_hits(hits))

    async def _t_memory_save(self, d: dict) -> ToolOutcome:
        if self.engine is None:
            return ToolOutcome("memory_save unavailable: no notes folder configured", True)
        try:
            path = await asyncio.to_thread(
                self.engine.save, d["name"], d["description"], d["body"], bool(d.get("priority", False))
            )
        except (FileExistsError, ValueError) as exc:
            return ToolOutcome(f"memory_save refused: {exc}", True)
        return ToolOutcome(f"saved note '{d['name']}' ({Path(path).name})")

    # workspace tools ---------------------------------------------------------------------
    async def _t_read_file(self, d: dict) -> ToolOutcome:
        return await asyncio.to_thread(self._read_file, d)

    def _read_file(self, d: dict) -> ToolOutcome:
        p = self.workspace.resolve(d["path"])
        if not p.exists():
            return ToolOutcome(f"no such file: {d['path']}", True)
        if p.is_dir():
            return ToolOutcome(f"{d['path']} is a folder; use list_files", True)
        raw = p.read_bytes()
        if b"\x00" in raw[:8192]:
            return ToolOutcome(f"{d['path']} is a binary file", True)
        text = raw.decode("utf-8", errors="replace")
        lines = text.splitlines(keepends=True)
        start = max(1, d.get("offset") or 1)
        end = start - 1 + d["limit"] if d.get("limit") else len(lines)
        out = "".join(lines[start - 1 : end])
        if len(out) > MAX_READ_CHARS:
            out = out[:MAX_READ_CHARS] + f"\n[truncated at {MAX_READ_CHARS} characters; use offset/limit]"
        return ToolOutcome(out)

    async def _t_list_files(self, d: dict) -> ToolOutcome:
        return await asyncio.to_thread(self._list_files, d)

    def _list_files(self, d: dict) -> ToolOutcome:
        start = self.workspace.resolve(d.get("path"))
        if not start.exists():
            return ToolOutcome(f"no such folder: {d.get('path')}", True)
        pattern = d.get("pattern")
        recursive = d.get("recursive", True) is not False
        out = []
        for p in self.workspace.walk(start, recursive):
            if pattern and not fnmatch.fnmatch(p.name, pattern):
                continue
            out.append(self.workspace.rel(p))
            if len(out) >= MAX_LIST_ENTRIES:
                out.append(f"[stopped at {MAX_LIST_ENTRIES} entries]")
                break
        return ToolOutcome("\n".join(out) if out else "(no files)")

    async def _t_search_files(self, d: dict) -> ToolOutcome:
        return await asyncio.to_thread(self._search_files, d)

    def _search_files(self, d: dict) -> ToolOutcome:
        start = self.workspace.resolve(d.get("path"))
        if d.get("regex"):
            try:
                rx = re.compile(d["query"])
            except re.error as exc:
                raise ToolInputError(f"search_files: bad regex: {exc}") from None
            match = rx.search
        else:
            q = d["query"].lower()
            match = lambda line: q in line.lower()  # noqa: E731
        out = []
        for p in self.workspace.walk(start):
            try:
                if p.stat().st_size > MAX_SEARCH_FILE_BYTES:
                    continue
                raw = p.read_bytes()
            except OSError:
                continue
            if b"\x00" in raw[:8192]:
                continue
            for i, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
                if match(line):
                    out.append(f"{self.workspace.rel(p)}:{i}: {line.strip()[:300]}")
                    if len(out) >= MAX_MATCHES:
                        out.append(f"[stopped at {MAX_MATCHES} matches]")
                        return ToolOutcome("\n".join(out))
        return ToolOutcome("\n".join(out) if out else "no matches")
