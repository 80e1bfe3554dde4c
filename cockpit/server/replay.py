"""Picking up a session's events after a dropped connection, without loss or repeats.

A ``subscribe`` reply holds every session's events so far the way the manager logs them
(:meth:`cockpit.runtime.manager.SessionManager.snapshot`): consecutive ``TextDelta``\\s merged,
partial ``UsageUpdate``\\s left out. A client that folds what it has seen by the same rule
(:func:`fold`) finds, in the snapshot of a new connection, exactly what happened since the drop
(:func:`since`): the events past its own, and the rest of a text that was still streaming.
"""

from __future__ import annotations

from cockpit.events import Event, StatusChanged, TextDelta, UsageUpdate


def fold(log: list[Event], event: Event) -> None:
    """Add ``event`` to ``log`` as the server's session log does."""
    if isinstance(event, UsageUpdate) and event.partial:
        return
    if isinstance(event, TextDelta) and log and isinstance(log[-1], TextDelta):
        log[-1] = TextDelta(event.session_id, log[-1].text + event.text)
        return
    log.append(event)


def since(seen: list[Event], snapshot: list[Event]) -> list[Event]:
    """The events of ``snapshot`` (one session's, as a new ``subscribe`` gives them) that are
    not in ``seen`` (the same session's events folded with :func:`fold`), in order. When the
    server trimmed its log below what was seen, only the session's latest state is returned."""
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


__all__ = ["fold", "since"]
