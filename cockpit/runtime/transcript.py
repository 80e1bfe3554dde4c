"""Append-only JSONL transcripts, one file per session.

File: ``<sessions_dir>/<YYYYmmdd-HHMMSS>-<session_id>.jsonl``. One JSON object per line, each
with ``"type"`` and ``"ts"`` (ISO-8601 UTC), flushed after every record (a crash loses at most
the record in flight). Record types, in order of appearance:

- ``header``: ``version``, ``session_id``, ``task``, ``model``, ``workspace``, ``preseed_enabled``,
  ``top_k``, ``injected`` (list of ``{name, score, priority, description, path}``),
  ``preseed_text`` (exact block sent), ``preseed_tokens``, ``system_prompt``, ``started_at``,
  ``resumed_from`` (path or null). Always the first line.
- ``message``: ``role`` (user|assistant), ``content`` (API content blocks) — every message the
  conversation holds, in order; :func:`load_messages` rebuilds the conversation from these.
- ``usage``: one per model response: ``usage`` ``{input, output, cache_write, cache_read}``
  (tokens), ``cost_usd`` (USD or null), ``stop_reason``, ``model``. The preseed's model
  selector call, when one was made, is a ``usage`` record with ``source: "selector"`` (and its
  own ``model``) right after the header.
- ``tool_call`` (``id``, ``name``, ``input``), ``tool_result`` (``id``, ``name``, ``content``, ``is_error``).
- ``status`` (``status``, ``detail``), ``error`` (``kind``, ``message``).
- ``approval`` (``request_id``, ``tool``, ``kind``, ``summary``, ``detail``), ``approval_result``
  (``request_id``, ``allowed``, ``scope``, ``reason``), ``context`` (``level`` warn|managed|full),
  ``worktree`` (``removed``: an unchanged worktree was dropped).
- ``end``: ``status`` (done|error|killed|interrupted), ``final_text``, ``stop_reason``, ``usage``
  totals, ``cost_usd``. A session that waits for follow-ups writes ``end`` only when it finishes.
- ``review`` (after ``end``): ``action`` merge|keep|discard, ``ok``, ``message``.

The header (version 2) also holds ``backend``, ``cwd``, ``worktree`` (``path``, ``branch``,
``base_commit``, ``base_branch``, ``repo``) or null, ``placement``, ``permission_mode``,
``tools`` and ``preseed_error``.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

VERSION = 1
log = logging.getLogger("cockpit.transcript")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class TranscriptWriter:
    """Appends records to one JSONL file. ``write`` flushes each record.

    ``exclusive`` (a new transcript): the file must not exist yet (``FileExistsError``), so two
    sessions can never share one. Raises OSError when the folder cannot be written."""

    def __init__(self, path: Path, exclusive: bool = True):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "x" if exclusive else "a", encoding="utf-8")
        self.closed = False

    def write(self, type_: str, **fields: Any) -> None:
        if self.closed:
            return
        rec = {"type": type_, "ts": now_iso(), **fields}
        line = json.dumps(rec, ensure_ascii=False, default=str)
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (e.g. an undecodable file name): \u escapes
            line = json.dumps(rec, default=str)
        self._fh.write(line + "\n")
        self._fh.flush()

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
            self.closed = True


def append_record(path: Path, type_: str, **fields: Any) -> None:
    """Append one record to an existing transcript (e.g. a review after the session ended)."""
    w = TranscriptWriter(path, exclusive=False)
    try:
        w.write(type_, **fields)
    finally:
        w.close()


def new_transcript_path(sessions_dir: Path, session_id: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return Path(sessions_dir) / f"{stamp}-{session_id}.jsonl"


MAX_TRANSCRIPT_BYTES = 1 << 30  # 1 GiB: far beyond any session's; /dev/zero's twin is refused


def _is_header(line: bytes) -> bool:
    try:
        rec = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(rec, dict) and rec.get("type") == "header"


def read_transcript(path: Path, warnings: list[str] | None = None) -> list[dict]:
    """All complete records of a transcript. A torn last line (a crash mid-write) is ignored; any
    other line that is not a JSON object (garbage, undecodable bytes, a bare value) is skipped with
    a warning naming the file and line — appended to ``warnings`` when given, else logged.

    Raises ``FileNotFoundError``; ``ValueError`` when the first record is not a header, or the
    path is not a regular file (a FIFO, a device, a folder: refused before anything is read, so
    a resume request can never block the server) or is over ``MAX_TRANSCRIPT_BYTES``.
    """
    records: list[dict] = []
    skipped: list[str] = []
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens at once instead of blocking
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a Cockpit transcript (not a regular file)")
        if st.st_size > MAX_TRANSCRIPT_BYTES:
            raise ValueError(f"{path} is not a Cockpit transcript (over {MAX_TRANSCRIPT_BYTES >> 20} MiB)")
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            head = fh.readline()
            if not _is_header(head):
                raise ValueError(f"{path} is not a Cockpit transcript (no header)")
            lines = (head + fh.read()).split(b"\n")
    finally:
        if fd >= 0:
            os.close(fd)
    last = len(lines) - 1
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            skipped.append(f"{path}: line {number} skipped: not UTF-8")
            continue
        except json.JSONDecodeError as exc:
            if number - 1 < last:  # the torn last line of a crash is expected, not worth a warning
                skipped.append(f"{path}: line {number} skipped: not JSON ({exc.msg})")
            continue
        if not isinstance(rec, dict):
            skipped.append(f"{path}: line {number} skipped: not a JSON object")
            continue
        records.append(rec)
    if warnings is not None:
        warnings.extend(skipped)
    else:
        for w in skipped:
            log.warning("%s", w)
    if not records or records[0].get("type") != "header":
        raise ValueError(f"{path} is not a Cockpit transcript (no header)")
    return records


def load_messages(records: list[dict]) -> list[dict]:
    """The conversation (``[{role, content}]``) a transcript holds, made valid for a new request:
    a trailing assistant message whose tool calls have no results (killed mid-tool) is dropped,
    and so is a ``message`` record without a role or content (a damaged line)."""
    msgs = [{"role": r["role"], "content": r["content"]} for r in records
            if r.get("type") == "message" and r.get("role") in ("user", "assistant")
            and isinstance(r.get("content"), (str, list))]
    if msgs and msgs[-1]["role"] == "assistant" and isinstance(msgs[-1]["content"], list):
        if any(isinstance(b, dict) and b.get("type") == "tool_use" for b in msgs[-1]["content"]):
            msgs.pop()
    return msgs


@dataclass(frozen=True)
class TranscriptInfo:
    """A past session for a list view. ``status`` None = no ``end`` record (still running or crashed)."""

    path: Path
    session_id: str
    task: str
    model: str
    started_at: str
    status: str | None
    cost_usd: float | None
    final_text: str


def list_transcripts(sessions_dir: Path) -> list[TranscriptInfo]:
    """Transcripts in ``sessions_dir``, newest first; unreadable files are skipped."""
    out: list[TranscriptInfo] = []
    d = Path(sessions_dir)
    if not d.is_dir():
        return out
    for p in sorted(d.glob("*.jsonl"), reverse=True):
        try:
            recs = read_transcript(p, [])  # damaged lines are reported when the transcript is read
        except (OSError, ValueError):
            continue
        h = recs[0]
        end = next((r for r in reversed(recs) if r.get("type") == "end"), None)
        out.append(
            TranscriptInfo(
                path=p,
                session_id=h.get("session_id", ""),
                task=h.get("task", ""),
                model=h.get("model", ""),
                started_at=h.get("started_at", ""),
                status=end.get("status") if end else None,
                cost_usd=end.get("cost_usd") if end else None,
                final_text=end.get("final_text", "") if end else "",
            )
        )
    return out
