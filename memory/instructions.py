"""Instruction files agents already keep: CLAUDE.md, AGENTS.md, Claude Code rules, Cursor rules.

:func:`discover` finds, for a project folder, the files the agents' own tools read, and sorts
each by how it applies (``Instruction.scope``):

- ``always``: the user's ``<claude config>/CLAUDE.md``; ``CLAUDE.md``, ``.claude/CLAUDE.md`` and
  ``CLAUDE.local.md`` in the project folder and every parent; ``AGENTS.md`` in the project root
  and its parents; ``.claude/rules/**/*.md`` without ``paths``; ``.cursor/rules/**/*.mdc`` with
  ``alwaysApply: true``.
- ``paths``: ``.claude/rules`` files with ``paths:``, Cursor rules with ``globs:`` (not always
  applied), and ``AGENTS.md`` files in sub-folders (they apply to files under that folder). Globs
  are relative to the project root (``**`` spans folders); :meth:`Instruction.matches` tests a
  path relative to that root.
- ``description``: Cursor's "agent requested" rules (a ``description``, no globs, not always
  applied) — relevant by meaning, not by path: :func:`described_for_task` matches them to a
  task the way the preseed matches notes (embedding + the calibrated gate).

Cursor rules with none of these ("manual") are not loaded. The parser is forgiving like the notes
parser: ``paths``/``globs`` as a YAML list or a comma-separated string, a raw-line fallback when
YAML chokes (``globs: *.ts`` is an alias error in YAML, ``{a,b}`` a mapping), a BOM or CRLF
accepted; a file that cannot be read or parsed is skipped with a warning naming it and the
reason. Files over :data:`MAX_BYTES` are skipped. Nothing is ever written.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import yaml

MAX_BYTES = 256 * 1024
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build", ".mypy_cache", ".tox"}
MAX_NESTED = 200  # nested AGENTS.md files looked at


@dataclass(frozen=True)
class Instruction:
    """One instruction file. ``path``: absolute; ``rel``: relative to the project root when inside
    it (else absolute); ``kind``: claude-md | claude-local | agents-md | claude-rule | cursor-rule;
    ``scope``: always | paths | description; ``globs``: patterns relative to the project root;
    ``text``: the body without frontmatter."""

    path: Path
    rel: str
    kind: str
    scope: str
    text: str
    globs: tuple[str, ...] = ()
    description: str = ""

    def matches(self, rel_path: str) -> bool:
        """Does this (path-scoped) instruction apply to ``rel_path`` (relative to the root)?"""
        rel_path = rel_path.lstrip("./") if rel_path.startswith("./") else rel_path
        return any(_glob_match(g, rel_path) for g in self.globs)


def _glob_match(pattern: str, path: str) -> bool:
    pattern = pattern.strip().lstrip("/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern:
        return False
    if "/" not in pattern:  # like gitignore: a bare pattern matches at any depth
        return fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)
    rx = _glob_regex(pattern)
    return rx.fullmatch(path) is not None


def _glob_regex(pattern: str) -> re.Pattern:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "{":
            end = pattern.find("}", i)
            if end == -1:
                out.append(re.escape("{"))
                i += 1
            else:
                out.append("(?:" + "|".join(re.escape(x) for x in pattern[i + 1:end].split(",")) + ")")
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def _split_patterns(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(s for s in (str(x).strip().strip("'\"") for x in items) if s)


def _raw_fields(front: str) -> dict:
    """Frontmatter read line by line (``key: value``) when YAML cannot parse it."""
    out: dict = {}
    key = None
    for line in front.splitlines():
        m = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$", line)
        if m:
            key, value = m.group(1), m.group(2).strip()
            out[key] = value if value else []
        elif key and re.match(r"^\s*-\s+", line) and isinstance(out.get(key), list):
            out[key].append(re.sub(r"^\s*-\s+", "", line).strip())
    return out


def parse(raw: bytes) -> tuple[dict, str]:
    """(frontmatter fields, body) of a file. Raises ValueError with the reason."""
    if b"\x00" in raw[:4096]:
        raise ValueError("binary file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason})") from None
    text = text.replace("\r\n", "\n")
    m = _FRONT.match(text)
    if not m:
        return {}, text.strip()
    front, body = m.group(1), text[m.end():]
    try:
        fields = yaml.safe_load(front)
        if not isinstance(fields, dict):
            fields = _raw_fields(front)
    except (yaml.YAMLError, RecursionError, ValueError, OverflowError, TypeError):
        fields = _raw_fields(front)  # e.g. a leading `*` or `{`, or a date like 2025-02-30
    return fields, body.strip()


def _truthy(value: object) -> bool:
    return value is True or str(value).strip().lower() in ("true", "yes", "1")


def _read(path: Path, warnings: list[str]) -> tuple[dict, str] | None:
    try:
        if path.is_symlink() and not path.resolve().is_file():
            raise ValueError("broken symlink")
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read forever
            raise ValueError("not a regular file")
        size = st.st_size
        if size > MAX_BYTES:
            raise ValueError(f"{size:,} bytes, over the {MAX_BYTES:,}-byte cap")
        return parse(path.read_bytes())
    except (OSError, ValueError) as exc:
        warnings.append(f"{path}: skipped: {getattr(exc, 'strerror', None) or exc}")
        return None


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def project_root(folder: Path) -> Path:
    """The git repository root containing ``folder`` (found by walking up to a ``.git``), else
    ``folder`` itself."""
    folder = folder.resolve()
    for d in (folder, *folder.parents):
        if (d / ".git").exists():
            return d
    return folder


def discover(folder: Path | str, user_config: Path | None = None) -> tuple[list[Instruction], list[str]]:
    """The instruction files for a project folder (see module doc) and warnings for skipped
    files. ``user_config``: Claude Code's config folder (None: ``$CLAUDE_CONFIG_DIR`` or
    ``~/.claude``)."""
    folder = Path(folder).expanduser().resolve()
    root = project_root(folder)
    if user_config is None:
        env = os.environ.get("CLAUDE_CONFIG_DIR")
        user_config = Path(env).expanduser() if env else Path.home() / ".claude"
    found: list[Instruction] = []
    warnings: list[str] = []
    seen: set[Path] = set()

    def add(path: Path, kind: str, scope: str, body: str, globs=(), description: str = "") -> None:
        real = path.resolve()
        if real in seen or not body.strip():
            return
        seen.add(real)
        found.append(Instruction(path, _rel(path, root), kind, scope, body, tuple(globs), description))

    user_md = user_config / "CLAUDE.md"
    if user_md.is_file() and (got := _read(user_md, warnings)):
        add(user_md, "claude-md", "always", got[1])
    # the project folder and its parents, outermost first (as Claude Code reads them)
    for d in reversed((folder, *folder.parents)):
        for name, kind in (("CLAUDE.md", "claude-md"), (".claude/CLAUDE.md", "claude-md"),
                           ("CLAUDE.local.md", "claude-local")):
            p = d / name
            if p.is_file() and (got := _read(p, warnings)):
                add(p, kind, "always", got[1])
        if d == root or root in d.parents or d in root.parents:
            p = d / "AGENTS.md"
            if p.is_file() and (got := _read(p, warnings)):
                add(p, "agents-md", "always", got[1])
    rules = root / ".claude" / "rules"
    if rules.is_dir():
        for p in sorted(rules.rglob("*.md")):
            got = _read(p, warnings)
            if not got:
                continue
            fields, body = got
            globs = _split_patterns(fields.get("paths"))
            add(p, "claude-rule", "paths" if globs else "always", body, globs, str(fields.get("description") or ""))
    cursor = root / ".cursor" / "rules"
    if cursor.is_dir():
        for p in sorted(cursor.rglob("*.mdc")):
            got = _read(p, warnings)
            if not got:
                continue
            fields, body = got
            globs = _split_patterns(fields.get("globs"))
            desc = str(fields.get("description") or "").strip()
            if _truthy(fields.get("alwaysApply")):
                add(p, "cursor-rule", "always", body)
            elif globs:
                add(p, "cursor-rule", "paths", body, globs, desc)
            elif desc:
                add(p, "cursor-rule", "description", body, (), desc)
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")]
        here = Path(dirpath)
        if here != root and "AGENTS.md" in filenames:
            count += 1
            if count > MAX_NESTED:
                break
            p = here / "AGENTS.md"
            if (got := _read(p, warnings)):
                sub = _rel(here, root)
                add(p, "agents-md", "paths", got[1], (f"{sub}/**",))
    return found, warnings


_PATHISH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]{1,8}|(?:[\w.-]+/)+[\w.-]*)")


def paths_named(text: str) -> list[str]:
    """Path-like words of a task text (``src/app.py``, ``docs/``, ``main.go``), as written."""
    return [m.group(1).rstrip(".,:;)") for m in _PATHISH.finditer(text)]


def described_for_task(instructions: list[Instruction], task: str, similarity) -> list[Instruction]:
    """The "agent requested" rules (scope ``description``) that are about ``task``, judged like a
    note by the preseed's calibrated gate (``memory/gate.json``): the cosine of the task to the
    rule's description plus the gate's weight × the task's term coverage of the rule must reach
    the gate's threshold. ``similarity(query, texts) -> [cosine]`` is the engine's
    (:meth:`memory.MemoryEngine.similarity`)."""
    from .gate import load_gate
    from .text import coverage, query_terms

    rules = [i for i in instructions if i.scope == "description" and i.description]
    if not rules:
        return []
    gate = load_gate()
    cosines = similarity(task, [i.description for i in rules])
    terms = query_terms(task)
    out = []
    for ins, cos in zip(rules, cosines, strict=True):
        score = max(0.0, cos) + gate.coverage_weight * coverage(terms, ins.path.stem, ins.description, ins.text)
        if score >= gate.threshold:
            out.append(ins)
    return out


def for_task(instructions: list[Instruction], task: str) -> list[Instruction]:
    """The path-scoped instructions whose globs match a path the task names."""
    named = paths_named(task)
    out = []
    for ins in instructions:
        if ins.scope == "paths" and any(ins.matches(p) or ins.matches(p.rstrip("/") + "/x") for p in named):
            out.append(ins)
    return out
