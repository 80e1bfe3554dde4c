"""A session's record keeping: one door, :meth:`Recorder.emit`, for every fact.

An event is redacted (the API key, plain or encoded, as ``***`` in every string it holds), then
written to the transcript (:mod:`cockpit.runtime.transcript`: one line per event, with its time)
and published on the manager's bus. Events emitted before the transcript is opened (the spawn,
the queue, the preseed: :meth:`start` comes once the first message is known) are written, in
order and with their own times, when it opens. Consecutive ``TextDelta``s become one line;
a partial ``UsageUpdate`` (live figures while a response streams: the input side at its start,
the output so far) is written too, so a server killed mid-response leaves what it had cost (the
response's own, final figures replace it when it ends).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cockpit.events import Event, TextDelta
from cockpit.runtime.transcript import TranscriptWriter, append_event, now_iso


class Recorder:
    """``publish``: the manager's event bus. ``redact``: applied to every string an event holds
    before it is written or published."""

    def __init__(self, path: Path, publish: Callable[[Event], None], redact: Callable[[str], str] = lambda s: s):
        self.path = Path(path)
        self._publish = publish
        self.redact = redact
        self._tw: TranscriptWriter | None = None
        self._closed = False
        self._early: list[tuple[Event, str]] = []  # emitted before start(), written by it
        self._held: list[str] = []  # streamed text not yet written (more may follow)
        self._held_at: tuple[str, str] = ("", "")  # its session id and time

    @property
    def open(self) -> bool:
        return self._tw is not None

    def start(self) -> None:
        """Create the transcript and write what was emitted so far. Raises OSError when the
        folder cannot be written (the session reports it as an error). Once only."""
        if self._tw is None and not self._closed:
            self._tw = TranscriptWriter(self.path)
            early, self._early = self._early, []
            for event, ts in early:
                self._write(event, ts)

    def emit(self, event: Event) -> None:
        """Redact, write (or keep until :meth:`start`), publish. After :meth:`close` the event is
        appended to the finished transcript (a review)."""
        event = self._scrub(event)
        ts = now_iso()
        if self._tw is not None:
            self._write(event, ts)
        elif self._closed:
            if self.path.exists():
                try:
                    append_event(self.path, event)
                except OSError:
                    pass
        else:
            self._early.append((event, ts))
        self._publish(event)

    def _write(self, event: Event, ts: str) -> None:
        assert self._tw is not None
        if isinstance(event, TextDelta):
            if not self._held:
                self._held_at = (event.session_id, ts)
            self._held.append(event.text)
            return
        self._flush()
        self._tw.write(event, ts)

    def _flush(self) -> None:
        if self._held and self._tw is not None:
            text, self._held = "".join(self._held), []
            self._tw.write(TextDelta(self._held_at[0], text), self._held_at[1])

    def _scrub(self, value: Any) -> Any:
        """``value`` with ``redact`` applied to every string in it: the same object when nothing
        changed (the session's own ``pending`` ask stays the event clients got)."""
        if isinstance(value, enum.Enum):
            return value
        if isinstance(value, str):
            done = self.redact(value)
            return value if done == value else done
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {}
            for f in dataclasses.fields(value):
                old = getattr(value, f.name)
                new = self._scrub(old)
                if new is not old:
                    changes[f.name] = new
            return dataclasses.replace(value, **changes) if changes else value
        if isinstance(value, dict):
            items = {k: self._scrub(v) for k, v in value.items()}
            return value if all(items[k] is v for k, v in value.items()) else items
        if isinstance(value, (list, tuple)):
            seq = [self._scrub(v) for v in value]
            if all(a is b for a, b in zip(seq, value, strict=True)):
                return value
            return tuple(seq) if isinstance(value, tuple) else seq
        return value

    def close(self) -> None:
        if self._tw is not None:
            self._flush()
            self._tw.close()
            self._tw = None
        self._closed = True
