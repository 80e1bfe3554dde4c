"""Append-only JSONL transcripts, one file per session: the session's event log.

File: ``<sessions_dir>/<YYYYmmdd-HHMMSS>-<session_id>.jsonl``. One line per event, in the order
the session published them: ``{"ts": ISO-8601 UTC, "type": event class, "data": {…}}`` — the
server protocol's event form (:mod:`cockpit.wire`) with the time it happened. The first line is
the session's ``SessionSpawned``; ``SessionStarted`` (system prompt, settings) follows once the
first message is known; ``SessionDone`` ends it (a ``Reviewed`` may follow). Consecutive
``TextDelta``s are written as one line, so a crash loses at most the text in flight; every other
line is flushed as it is written. :func:`cockpit.runtime.history.fold` turns the events into
what every reader needs (the conversation, the pane's blocks, usage, the end).

Transcripts written before this format (one untyped record per line, a ``header`` first) are
read through :mod:`cockpit.runtime.migrate`, which turns each record into events.
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

from cockpit.events import Event, SessionSpawned
from cockpit.wire import WireError, event_from_json, event_to_json

VERSION = 3
log = logging.getLogger("cockpit.transcript")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def event_line(event: Event, ts: str) -> str:
    """One transcript line (with its newline) for ``event`` at time ``ts``."""
    rec = {"ts": ts, **event_to_json(event)}
    line = json.dumps(rec, ensure_ascii=False, default=str)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (e.g. an undecodable file name): \u escapes
        line = json.dumps(rec, default=str)
    return line + "\n"


class TranscriptWriter:
    """Appends event lines to one JSONL file, flushing each.

    ``exclusive`` (a new transcript): the file must not exist yet (``FileExistsError``), so two
    sessions can never share one. Raises OSError when the folder cannot be written."""

    def __init__(self, path: Path, exclusive: bool = True):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "x" if exclusive else "a", encoding="utf-8")
        self.closed = False

    def write(self, event: Event, ts: str | None = None) -> None:
        if self.closed:
            return
        self._fh.write(event_line(event, ts or now_iso()))
        self._fh.flush()

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
            self.closed = True


def append_event(path: Path, event: Event) -> None:
    """Append one event to an existing transcript (a review after the session ended, the end a
    dead server's session never wrote)."""
    w = TranscriptWriter(path, exclusive=False)
    try:
        w.write(event)
    finally:
        w.close()


def new_transcript_path(sessions_dir: Path, session_id: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return Path(sessions_dir) / f"{stamp}-{session_id}.jsonl"


MAX_TRANSCRIPT_BYTES = 1 << 30  # 1 GiB: far beyond any session's; /dev/zero's twin is refused


def _first_kind(line: bytes) -> str | None:
    """``"old"`` (a ``header`` record), ``"event"`` (a ``SessionSpawned`` line) or None."""
    try:
        rec = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(rec, dict):
        return None
    if rec.get("type") == "header":
        return "old"
    if rec.get("type") == SessionSpawned.__name__ and isinstance(rec.get("data"), dict):
        return "event"
    return None


def read_events(path: Path, warnings: list[str] | None = None) -> list[Event]:
    """Every event of a transcript, in order (:func:`read_timed` without the times)."""
    return [e for _, e in read_timed(path, warnings)]


def read_timed(path: Path, warnings: list[str] | None = None) -> list[tuple[str, Event]]:
    """``(ts, event)`` for every event of a transcript, in order (an old-format transcript's records migrated). A
    torn last line (a crash mid-write) is ignored; any other line that is not an event (garbage,
    undecodable bytes, an unknown type) is skipped with a warning naming the file and line —
    appended to ``warnings`` when given, else logged.

    Raises ``FileNotFoundError``; ``ValueError`` when the first line is not a session's start, or
    the path is not a regular file (a FIFO, a device, a folder: refused before anything is read,
    so a resume request can never block the server) or is over ``MAX_TRANSCRIPT_BYTES``.
    """
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
            kind = _first_kind(head)
            if kind is None:
                raise ValueError(f"{path} is not a Cockpit transcript (no header)")
            lines = (head + fh.read()).split(b"\n")
    finally:
        if fd >= 0:
            os.close(fd)
    skipped: list[str] = []
    records: list[dict] = []  # an old transcript's, migrated once all are read
    events: list[tuple[str, Event]] = []
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
        if kind == "old":
            rec["_line"] = number
            records.append(rec)
            continue
        try:
            events.append((str(rec.get("ts", "")), event_from_json(rec)))
        except WireError as exc:
            skipped.append(f"{path}: line {number} skipped: {exc}")
    if kind == "old":
        from cockpit.runtime.migrate import events_from_records

        events = events_from_records(records, str(path), skipped)
    if warnings is not None:
        warnings.extend(skipped)
    else:
        for w in skipped:
            log.warning("%s", w)
    if not events or not isinstance(events[0][1], SessionSpawned):
        raise ValueError(f"{path} is not a Cockpit transcript (no header)")
    return events


@dataclass(frozen=True)
class TranscriptInfo:
    """A past session for a list view. ``status`` None = no ``SessionDone`` (still running or crashed)."""

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
    from cockpit.runtime.history import fold

    out: list[TranscriptInfo] = []
    d = Path(sessions_dir)
    if not d.is_dir():
        return out
    for p in sorted(d.glob("*.jsonl"), reverse=True):
        try:
            h = fold(read_events(p, []))  # damaged lines are reported when the transcript is read
        except (OSError, ValueError):
            continue
        out.append(TranscriptInfo(path=p, session_id=h.session_id, task=h.task, model=h.model,
                                  started_at=h.started_at, status=h.ended.status.value if h.ended else None,
                                  cost_usd=h.cost_usd if h.ended else None,
                                  final_text=h.final_text if h.ended else ""))
    return out


def transcript_row(info: TranscriptInfo) -> dict:
    """``info`` as a row of the server's ``transcripts`` (the file's ``mtime``: when it last grew)."""
    try:
        mtime = os.stat(info.path).st_mtime
    except OSError:
        mtime = 0.0
    return {"path": str(info.path), "session_id": info.session_id, "task": info.task, "model": info.model,
            "started_at": info.started_at, "status": info.status, "cost_usd": info.cost_usd, "mtime": mtime}


def transcript_info(row: dict) -> TranscriptInfo:
    """A row of the server's ``transcripts`` as a :class:`TranscriptInfo` (its path the server's)."""
    cost = row.get("cost_usd")
    return TranscriptInfo(path=Path(str(row["path"])), session_id=str(row.get("session_id") or ""),
                          task=str(row.get("task") or ""), model=str(row.get("model") or ""),
                          started_at=str(row.get("started_at") or ""),
                          status=None if row.get("status") is None else str(row["status"]),
                          cost_usd=float(cost) if isinstance(cost, (int, float)) else None, final_text="")


class FileTranscripts:
    """The past sessions of this machine: the transcript files of ``sessions_dir`` (a
    :class:`~cockpit.runtime.protocols.TranscriptSource`; blocking, for worker threads)."""

    host = ""

    def __init__(self, sessions_dir: Path):
        self.sessions_dir = Path(sessions_dir)

    def listing(self) -> list[TranscriptInfo]:
        return list_transcripts(self.sessions_dir)

    def read(self, path: Path, warnings: list[str]) -> list[Event]:
        return read_events(path, warnings)

    def stamp(self, path: Path) -> float:
        """Changes when the transcript grows (a search's cache key); raises OSError when it is gone."""
        return os.stat(path).st_mtime
