"""One session's events as the server logs them for a client that attaches late (and as such a
client keeps what it was shown, to pick up after a dropped connection: :mod:`cockpit.server.replay`).

Partial ``UsageUpdate``\\s are left out (a streaming response's running figures; the manager keeps
only the latest apart), and consecutive ``TextDelta``\\s are one event — joined when read, so a
long answer streamed delta by delta costs its length, not its length squared."""

from __future__ import annotations

from collections.abc import Iterable

from cockpit.events import Event, TextDelta, UsageUpdate


class SessionLog:
    """See the module doc. :attr:`events` is the log (a list that may be trimmed in place)."""

    __slots__ = ("_events", "_streamed")

    def __init__(self, events: Iterable[Event] = ()):
        self._events: list[Event] = []
        self._streamed: list[str] = []  # text after the last TextDelta, not joined into it yet
        for event in events:
            self.add(event)

    def add(self, event: Event) -> None:
        if isinstance(event, UsageUpdate) and event.partial:
            return
        if isinstance(event, TextDelta) and self._events and isinstance(self._events[-1], TextDelta):
            self._streamed.append(event.text)
            return
        self._join()
        self._events.append(event)

    @property
    def events(self) -> list[Event]:
        self._join()
        return self._events

    def __len__(self) -> int:
        return len(self._events)

    def _join(self) -> None:
        if not self._streamed:  # (every event of every session comes through here)
            return
        last = self._events[-1]  # a TextDelta: text is streamed only after one
        if isinstance(last, TextDelta):
            self._events[-1] = TextDelta(last.session_id, "".join((last.text, *self._streamed)))
        self._streamed = []


__all__ = ["SessionLog"]
