"""A session's record keeping: every fact goes to the transcript and, as a typed event, to the bus.

One home for "what happened": the session calls :meth:`Recorder.emit` for events and
:meth:`Recorder.record` for transcript-only records; nothing else writes either.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cockpit.events import Event
from cockpit.runtime.transcript import TranscriptWriter


class Recorder:
    """``publish``: the manager's event bus. ``redact``: applied to every string a record holds
    (error text, tool results, messages) before it is written."""

    def __init__(self, path: Path, publish: Callable[[Event], None], redact: Callable[[str], str] = lambda s: s):
        self.path = Path(path)
        self._publish = publish
        self.redact = redact
        self._tw: TranscriptWriter | None = None

    @property
    def open(self) -> bool:
        return self._tw is not None

    def start(self, header: dict[str, Any]) -> None:
        """Create the transcript with its header (first record). Raises OSError when the folder
        cannot be written (the session reports it as an error)."""
        if self._tw is None:
            self._tw = TranscriptWriter(self.path)
            self._tw.write("header", **header)

    def record(self, type_: str, **fields: Any) -> None:
        """Append one record; every string in it passes through ``redact`` first (a tool's
        output that printed the API key is kept with ``***`` in its place)."""
        if self._tw is not None:
            self._tw.write(type_, **{k: self._scrub(v) for k, v in fields.items()})

    def _scrub(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {k: self._scrub(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._scrub(v) for v in value]
        return value

    def emit(self, event: Event) -> None:
        self._publish(event)

    def close(self) -> None:
        if self._tw is not None:
            self._tw.close()
