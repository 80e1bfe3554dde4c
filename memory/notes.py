"""Reading note files: folder walk and forgiving Markdown + YAML-frontmatter parsing.

A note is a ``*.md`` file: YAML frontmatter (``name``, ``description``, optional ``priority``,
optional ``type``) and a Markdown body. Claude Code memory folders read as they are; their
``MEMORY.md`` is an index, not a note, and is ignored. Hidden files and folders are ignored.

Nothing here ever writes to a note file.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
import stat as _stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler

MAX_NOTE_BYTES = 1_000_000        # larger files are not notes
MAX_FRONTMATTER_CHARS = 64_000    # a longer header is not a note header
INDEX_FILE_NAMES = {"MEMORY.md"}  # Claude Code's index file


class NoteError(Exception):
    """The file cannot be read as a note; ``str(exc)`` is the reason shown to the user."""


class FileEntry(NamedTuple):
    """A candidate note file found by :func:`scan`. ``rel`` is POSIX, relative to the root."""

    rel: str
    path: str  # absolute or root-relative file system path (str: cheaper than Path ×10k)
    mtime_ns: int
    size: int


@dataclass
class Note:
    """A parsed note. ``has_description`` is False when the description fell back to the body's
    first line; ``warnings`` are non-fatal parse warnings (e.g. a typed YAML value coerced)."""

    rel: str
    name: str
    description: str
    body: str
    priority: bool
    type: str | None
    has_description: bool
    hash: str
    mtime_ns: int
    size: int
    warnings: list[str] = field(default_factory=list)
    status: str = ""          # lifecycle: accepted | proposed | superseded | deprecated | rejected | ""
    superseded_by: str = ""   # the successor's note name (frontmatter), or the body's reference to it


# what a file gives (a note, its warnings and lifecycle, or a skip): an index made by another
# version of these rules is read again whole once (memory.sync.plan_sync's ``reread``). Raise it
# with any change to what parse_bytes makes of a file. 2: empty files and unclosed frontmatter
# skipped, cased keys named, a mistyped status with a successor said as superseded.
PARSER_VERSION = "2"

STATUSES = ("accepted", "proposed", "superseded", "deprecated", "rejected")
# an ADR body's status section: "## Status" then its first line ("Superseded by ADR-0012", "Accepted")
_STATUS_SECTION = re.compile(r"^#{1,6}\s*status\s*:?\s*\n+\s*(?:[-*]\s*)?(.+)$", re.IGNORECASE | re.MULTILINE)
_STATUS_LINE = re.compile(r"^\s*\**status\**\s*:\s*\**(.+)$", re.IGNORECASE | re.MULTILINE)
_SUPERSEDED_BY = re.compile(r"superseded\s+by\s*:?\s*(.+)", re.IGNORECASE)


def _status_word(text: str) -> str:
    """A status text's first word, lower case ("Superseded by ADR-0012" → "superseded")."""
    return re.split(r"[\s,.;:(]", text.strip().lower(), maxsplit=1)[0]


def lifecycle(meta: dict, body: str) -> tuple[str, str]:
    """``(status, superseded_by)`` from frontmatter (``status``, ``superseded_by`` — MADR's
    fields) or, failing that, an ADR body's ``Status`` section or ``Status:`` line ("Superseded
    by ADR-0012" → ``("superseded", "ADR-0012")``). Status words other than :data:`STATUSES`
    read as "". The successor is a name or a reference (a link's target); resolving it to a note
    is the engine's (:func:`memory.engine.MemoryEngine.successor`)."""
    status = meta.get("status")
    status = status.strip().lower() if isinstance(status, str) else ""
    successor = meta.get("superseded_by") or meta.get("superseded-by") or ""
    if isinstance(successor, list):  # several successors: the first is the one given in its place
        successor = next((str(x) for x in successor if x), "")
    successor = successor.strip() if isinstance(successor, str) else ""
    if status and status not in STATUSES:  # MADR's "superseded by ADR-0005", "Accepted (2024-03-01)"
        word = _status_word(status)
        if word in STATUSES:
            by = _SUPERSEDED_BY.search(str(meta.get("status")))  # (the name as written)
            if by and not successor:
                successor = by.group(1).strip()
            status = word
    if not status or status not in STATUSES:
        found = _STATUS_SECTION.search(body[:4000]) or _STATUS_LINE.search(body[:4000])
        if found:
            text = re.sub(r"[*_`]", "", found.group(1)).strip()  # "**Superseded** by …": emphasis is not a word
            word = _status_word(text)
            status = word if word in STATUSES else ""
            by = _SUPERSEDED_BY.search(text)
            if by and not successor:
                successor = by.group(1).strip()
        else:
            status = status if status in STATUSES else ""
    if successor and not status:
        status = "superseded"
    link = re.search(r"\]\(([^)]+)\)", successor)  # "[ADR-0012](0012-x.md)" → its target
    if link:
        successor = link.group(1)
    return status, successor.strip().strip("[]`*_ .")


# --------------------------------------------------------------------------- YAML

def _text_resolvers(resolvers: dict) -> dict:
    """``resolvers`` (a loader's implicit resolvers) without YAML 1.1's bool, int, float and
    timestamp: a plain scalar stays the text it is (``description: 22:30`` is "22:30", not the
    sexagesimal 1350; ``yes`` is "yes", not True). Only ``null`` (``~``, empty) is kept; a field
    that means a type (``priority``) is read by its own rule (:func:`_priority`)."""
    keep = {"tag:yaml.org,2002:null"}
    out = {}
    for first, pairs in resolvers.items():
        kept = [(tag, rx) for tag, rx in pairs if tag in keep]
        if kept:
            out[first] = kept
    return out


class _SafeNoAliasLoader(yaml.SafeLoader):
    """SafeLoader (no tag ever constructs an object) that also refuses anchors/aliases, so a
    "billion laughs" YAML bomb cannot expand. Frontmatter has no use for aliases."""

    def compose_node(self, parent, index):  # PyYAML hook
        if self.check_event(yaml.AliasEvent):
            raise NoteError("YAML aliases are not allowed in frontmatter (possible YAML bomb)")
        return super().compose_node(parent, index)


_SafeNoAliasLoader.yaml_implicit_resolvers = _text_resolvers(yaml.SafeLoader.yaml_implicit_resolvers)

_CSafeLoader = getattr(yaml, "CSafeLoader", None)  # PyYAML built with libyaml (its wheels are)
if _CSafeLoader is not None:
    _CSafeLoader = type("_CTextLoader", (_CSafeLoader,), {
        "yaml_implicit_resolvers": _text_resolvers(_CSafeLoader.yaml_implicit_resolvers)})


class _Handler(YAMLHandler):
    def load(self, fm: str, **kwargs):
        if len(fm) > MAX_FRONTMATTER_CHARS:
            raise NoteError(f"frontmatter longer than {MAX_FRONTMATTER_CHARS} characters")
        if _CSafeLoader is not None and "*" not in fm:
            # no `*` → no alias can be in it: libyaml's loader (the same safe constructors), about
            # 10× faster than the pure-Python one — 6 % of a cold index of 10k notes
            data = yaml.load(fm, Loader=_CSafeLoader)
        else:
            data = yaml.load(fm, Loader=_SafeNoAliasLoader)
        self.loaded = data
        return data


_TRUE = {"high", "true", "yes", "y", "on", "1"}
_FALSE = {"low", "normal", "medium", "none", "false", "no", "n", "off", "0"}  # priority words that mean "not high"


def _as_text(key: str, value, warnings: list[str]) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)):
        text = ", ".join(_as_text(key, v, []) for v in value)
    elif isinstance(value, (_dt.date, _dt.datetime)):
        text = value.isoformat()
    elif isinstance(value, dict):
        text = ", ".join(f"{k}: {_as_text(key, v, [])}" for k, v in value.items())
    else:
        text = str(value)
    warnings.append(f"'{key}' is a YAML {type(value).__name__}; read as text {text!r}")
    return text.strip()


def lifecycle_warnings(meta: dict, status: str, successor: str) -> list[str]:
    """What a person likely mistyped in ``priority``/``status`` (the value is then read as the
    default — a typo in ``status: superseded`` leaves a retired decision current), and a
    superseded note that names no successor."""
    out = []
    given = meta.get("status")
    if isinstance(given, str) and given.strip() and _status_word(given) not in STATUSES:
        counts = (f"its superseded_by ({successor}) still retires it: it is superseded" if successor
                  else "the note counts as current")
        out.append(f"unknown status {given.strip()!r} (known: {', '.join(STATUSES)}): read as none, {counts}")
    prio = meta.get("priority")
    if isinstance(prio, str) and prio.strip() and _priority_value(prio) is None:
        out.append(f"unknown priority {prio.strip()!r} (high/true/yes, or low/false/no): read as "
                   "not a priority note")
    if status == "superseded" and not successor:
        out.append("superseded without a successor (superseded_by): it is never given, and nothing is given "
                   "in its place")
    return out


def _priority(value) -> bool:
    """``priority`` as YAML 1.1 meant it: true/yes/on/high or a number above 0 (scalars arrive as
    text: see :func:`_text_resolvers`); anything else is not a priority note."""
    return bool(_priority_value(value))


def _priority_value(value) -> bool | None:
    """``priority`` read as :func:`_priority` says, or None for a word it does not know."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value > 0
    if value is None:
        return False
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    try:
        return float(text.replace("_", "")) > 0
    except ValueError:
        return None


_HEADING = re.compile(r"^\s*#+\s*")


def _first_line(body: str) -> str:
    for line in body.splitlines():
        line = _HEADING.sub("", line).strip()
        if line:
            return line[:300]
    return ""


def parse_bytes(raw: bytes, rel: str, mtime_ns: int = 0, size: int | None = None) -> Note:
    """Parse the bytes of one note file.

    Accepts a UTF-8 BOM, CRLF/CR line ends, missing frontmatter (name = file stem,
    description = first body line, ``has_description`` False), typed YAML values (coerced to
    text with a warning). Raises :class:`NoteError` (reason as message) for binary or undecodable
    content, invalid YAML, unsafe tags (never executed: SafeLoader), aliases, oversized files.
    """
    if size is None:
        size = len(raw)
    if len(raw) > MAX_NOTE_BYTES:
        raise NoteError(f"larger than {MAX_NOTE_BYTES} bytes")
    if b"\x00" in raw[:8192]:
        raise NoteError("binary file (NUL bytes)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NoteError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    warnings: list[str] = []
    handler = _Handler()
    meta: dict = {}
    body = text.strip()
    if not body.lstrip("\ufeff"):
        raise NoteError("empty file")
    opened = text.lstrip("\ufeff \t\n")
    if handler.detect(opened):
        try:
            meta, body = frontmatter.parse(text, handler=handler)
        except NoteError:
            raise
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            began = getattr(exc, "context_mark", None)
            found = getattr(exc, "problem_mark", None)
            mark = began or found  # where the bad value began  (0-based, from the file's ---)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            problem = getattr(exc, "problem", None)
            if began is not None and found is not None and found.line != began.line and problem:
                first += f"; {problem} on line {found.line + 1}"  # and where the parser stopped
            raise NoteError(f"invalid YAML frontmatter{where}: {first}") from None
        except RecursionError:
            raise NoteError("YAML frontmatter nested too deeply") from None
        except (ValueError, OverflowError, TypeError) as exc:  # a value SafeLoader cannot build:
            # `created: 2025-02-30` (day out of range), an integer of over 4300 digits …
            raise NoteError(f"invalid YAML value in the frontmatter: {exc}") from None
        if not hasattr(handler, "loaded") and opened.split("\n", 1)[0].rstrip() == "---":
            # begun with --- and never closed: no YAML was read (it was indexed as a note named
            # after its file, described "---")
            raise NoteError("frontmatter not closed: the first line is --- and no later line is")
        loaded = getattr(handler, "loaded", None)
        if loaded is not None and not isinstance(loaded, dict):
            warnings.append("frontmatter is not a mapping; ignored")
            meta = {}
    stem = Path(rel).stem

    def cased(key: str) -> str:  # `Name:` is not `name:`: say so, not only that there is none
        other = next((k for k in meta if isinstance(k, str) and k != key and k.lower() == key), None)
        return f" ({other!r} is not read: frontmatter keys are lower-case)" if other else ""

    name = _as_text("name", meta.get("name"), warnings) or stem
    if meta and not meta.get("name"):  # (no frontmatter at all is said below, once)
        warnings.append(f"no name{cased('name')}; using the file name {stem!r}")
    description = _as_text("description", meta.get("description"), warnings)
    has_description = bool(description)
    if not description:
        description = _first_line(body)
        if not meta:
            warnings.append("no frontmatter; name from file name, description from first line")
        else:
            warnings.append(f"no description{cased('description')}; using the first line of the body")
    ntype = _as_text("type", meta.get("type"), warnings) or None
    status, successor = lifecycle(meta, body)
    warnings += lifecycle_warnings(meta, status, successor)
    return Note(
        rel=rel,
        name=name,
        description=description,
        body=body,
        priority=_priority(meta.get("priority")),
        type=ntype,
        has_description=has_description,
        hash=hashlib.sha256(raw).hexdigest(),
        mtime_ns=mtime_ns,
        size=size,
        warnings=warnings,
        status=status,
        superseded_by=successor,
    )


def read_note(entry: FileEntry) -> Note:
    """Read and parse one scanned file; raises :class:`NoteError` with the reason."""
    try:
        with open(entry.path, "rb") as fh:
            raw = fh.read(MAX_NOTE_BYTES + 1)
    except OSError as exc:
        raise NoteError(f"unreadable ({exc.strerror or type(exc).__name__})") from None
    return parse_bytes(raw, entry.rel, entry.mtime_ns, entry.size)


# --------------------------------------------------------------------------- folder walk

_MD = (".md", ".MD", ".Md", ".mD")
BAD_NAME = "file name is not valid UTF-8 (rename it to index it)"
BAD_FOLDER = "folder name is not valid UTF-8: its notes are not indexed (rename it)"


def _utf8(name: str) -> bool:
    """False for a name the OS gave with undecodable bytes (surrogate escapes): such a name
    cannot be stored, shown or matched as text."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(path: str) -> str:
    """A path safe to store and print: undecodable bytes as ``\\xNN`` escapes."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _is_md(name: str) -> bool:
    return name.endswith(_MD)


def walk(root: str, prefix: str = "", real_root: str | None = None,
         entries: list | None = None, skipped: list | None = None):
    """The folder walk behind :func:`scan`, cheap enough to run on every sync: ``os.scandir``
    recursion, one ``stat`` per note file, plain tuples ``(rel, mtime_ns, size)`` (the file
    system path is ``os.path.join(root, rel)``, built only for files that must be read).
    ``prefix`` (``"sub/dir/"``) walks only that sub-folder of ``root``. Unsorted."""
    root = os.fspath(root)
    real_root = real_root or os.path.realpath(root)
    entries = [] if entries is None else entries
    skipped = [] if skipped is None else skipped
    add = entries.append
    stack = [(os.path.join(root, prefix) if prefix else root, prefix)]
    while stack:
        folder, prefix = stack.pop()
        try:
            it = list(os.scandir(folder))
        except OSError as exc:
            skipped.append((prefix or ".", f"folder unreadable ({exc.strerror})"))
            continue
        for de in it:
            name = de.name
            if name[0] == ".":
                continue
            if not _utf8(name):
                try:
                    folder_entry = de.is_dir(follow_symlinks=False)
                except OSError:
                    folder_entry = False
                if folder_entry or name.endswith(_MD):
                    skipped.append((shown(prefix + name), BAD_FOLDER if folder_entry else BAD_NAME))
                continue
            try:
                if not name.endswith(_MD):
                    if de.is_dir(follow_symlinks=False):  # d_type: no extra syscall
                        stack.append((de.path, prefix + name + "/"))
                    continue  # symlinked folders are never followed (loops)
                if de.is_file(follow_symlinks=False):  # the common case: a plain file
                    if name in INDEX_FILE_NAMES:
                        continue
                    st = de.stat(follow_symlinks=False)
                    add((prefix + name, st.st_mtime_ns, st.st_size))
                    continue
                if name in INDEX_FILE_NAMES:
                    continue
                why, st = _classify_odd(de.path, de.is_symlink(), real_root)
            except OSError as exc:
                skipped.append((prefix + name, f"cannot stat ({exc.strerror})"))
                continue
            if why:
                skipped.append((prefix + name, why))
            else:
                add((prefix + name, st.st_mtime_ns, st.st_size))
    return entries, skipped


def _classify_odd(path: str, is_link: bool, real_root: str):
    """A ``*.md`` entry that is not a plain file → ``(reason, None)`` when it cannot be a note,
    else ``("", stat)`` (a symlink to a file inside the notes folder). Raises OSError."""
    if is_link:
        target = os.path.realpath(path)
        if os.path.commonpath([real_root, target]) != real_root:
            return "symlink points outside the notes folder", None
        if not os.path.exists(target):
            return "broken symlink", None
    st = os.stat(path)
    if _stat.S_ISREG(st.st_mode):
        return "", st
    return ("a directory, not a note file" if _stat.S_ISDIR(st.st_mode) else "not a regular file"), None


def scan(root: Path) -> tuple[list[FileEntry], list[tuple[str, str]]]:
    """Walk ``root`` recursively (``os.scandir``; one ``stat`` per file, no reads).

    Returns ``(entries, skipped)``: candidate ``*.md`` files with mtime (ns) and size, and
    ``(rel, reason)`` for files that cannot be notes (not a regular file, a symlink that points
    outside ``root`` or nowhere, stat failure). Hidden entries and ``MEMORY.md`` are ignored;
    symlinked directories are not followed. Entries come in no particular order.
    """
    root_s = os.fspath(root)
    raw, skipped = walk(root_s)
    entries = [FileEntry(rel, os.path.join(root_s, rel), m, sz) for rel, m, sz in raw]
    skipped.sort()
    return entries, skipped


def scan_paths(root: Path, rels) -> tuple[list, list[tuple[str, str]], set[str], tuple[str, ...]]:
    """Examine only ``rels`` (POSIX paths relative to ``root``, as a file watcher reports them:
    changed, added or deleted files or folders) with the rules of :func:`scan`.

    Returns ``(entries, skipped, exact, prefixes)``: entries ``(rel, mtime_ns, size)`` and
    skipped ``(rel, reason)`` found at or under those paths, and the scope they cover — an
    index row is in scope when its path is in ``exact`` or starts with one of ``prefixes``
    (``"folder/"``, for paths that are or were folders). Hidden paths are out of scope."""
    root_s = os.fspath(root)
    real_root = os.path.realpath(root_s)
    entries: list = []
    skipped: list[tuple[str, str]] = []
    exact: set[str] = set()
    prefixes: set[str] = set()
    walked: set[str] = set()
    for rel in dict.fromkeys(rels):
        parts = rel.split("/")
        if not rel or any(not p or p[0] == "." for p in parts):
            continue
        if not _utf8(rel):  # reported by the watcher under an undecodable name
            if rel.endswith(_MD) and os.path.lexists(os.path.join(root_s, *parts)):
                skipped.append((shown(rel), BAD_NAME))
            continue
        exact.add(rel)
        name = parts[-1]
        md = name.endswith(_MD)
        if not md:
            prefixes.add(rel + "/")  # a folder, or what used to be one
        # a note must be reachable through real folders (scan never follows folder symlinks)
        folder_ok = True
        for i in range(1, len(parts)):
            try:
                st = os.lstat(os.path.join(root_s, *parts[:i]))
            except OSError:
                folder_ok = False
                break
            if not _stat.S_ISDIR(st.st_mode):
                folder_ok = False
                break
        if not folder_ok:
            continue
        path = os.path.join(root_s, *parts)
        try:
            lst = os.lstat(path)
        except FileNotFoundError:
            continue  # deleted: rows in scope with no entry go
        except OSError as exc:
            if md and name not in INDEX_FILE_NAMES:
                skipped.append((rel, f"cannot stat ({exc.strerror})"))
            continue
        if not md:
            if _stat.S_ISDIR(lst.st_mode) and not any(rel.startswith(w) for w in walked):
                walked.add(rel + "/")
                walk(root_s, rel + "/", real_root, entries, skipped)
            continue
        if name in INDEX_FILE_NAMES:
            continue
        if _stat.S_ISREG(lst.st_mode):
            entries.append((rel, lst.st_mtime_ns, lst.st_size))
            continue
        try:
            why, st = _classify_odd(path, _stat.S_ISLNK(lst.st_mode), real_root)
        except OSError as exc:
            skipped.append((rel, f"cannot stat ({exc.strerror})"))
            continue
        if why:
            skipped.append((rel, why))
        else:
            entries.append((rel, st.st_mtime_ns, st.st_size))
    # a folder walked as a whole covers the single paths reported inside it: one row per path
    return _first_per_path(entries), _first_per_path(skipped), exact, tuple(sorted(prefixes))


def _first_per_path(items: list) -> list:
    """The first item of each path (``item[0]``), in their order."""
    seen: set[str] = set()
    out = []
    for item in items:
        if item[0] not in seen:
            seen.add(item[0])
            out.append(item)
    return out
