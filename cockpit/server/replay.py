"""Picking up a session's events after a dropped connection, without loss or repeats.

A ``subscribe`` reply holds every session's events so far the way the manager logs them
(:meth:`cockpit.runtime.manager.SessionManager.snapshot`): consecutive ``TextDelta``\\s merged,
partial ``UsageUpdate``\\s left out. A client that keeps what it has seen by the same rule
(:class:`~cockpit.runtime.sessionlog.SessionLog`) finds, in the snapshot of a new connection,
exactly what happened since the drop (:func:`since`): the events past its own, and the rest of a
text that was still streaming.
"""

from __future__ import annotations

from cockpit.events import Event, StatusChanged, TextDelta
from cockpit.runtime.sessionlog import SessionLog


def since(shown: SessionLog, snapshot: list[Event]) -> list[Event]:
    """The events of ``snapshot`` (one session's, as a new ``subscribe`` gives them) that are
    not in ``shown`` (the same session's events as seen), in order. When the server trimmed its
    log below what was seen, only the session's latest state is returned."""
    seen = shown.events
    n = len(seen)
    if len(snapshot) < n:
        return [e for e in snapshot if isinstance(e, StatusChanged)][-1:]  # type: ignore[return-value]
    out: list[Event] = []
    mine, theirs = (seen[-1], snapshot[n - 1]) if n else (None, None)
    if isinstance(mine, TextDelta) and isinstance(theirs, TextDelta):
        rest = theirs.text[len(mine.text):]
        if rest:
            out.append(TextDelta(mine.session_id, rest))
    return out + snapshot[n:]


__all__ = ["since"]
