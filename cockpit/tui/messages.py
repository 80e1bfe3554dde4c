"""The runtime's events as Textual messages.

The app's event pump (``CockpitApp._pump``: one worker reading ``Runtime.subscribe()``) hands
them, in the runtime's order, to the main screen, which owns the panes and folds them
(``cockpit.tui.screens.panes.SessionPanes``: ``on_runtime_snapshot``, ``on_runtime_events``).
Live events wait in the screen's queue (``SessionPanes.queue_event``); one ``RuntimeEvents``
message at a time says some are there, and its handler folds every event queued by then — one
Textual message (dispatch, idle pass) per batch rather than per event: with nine sessions
streaming, ≈ 450 events a second.
They do not bubble: the app hears of what concerns it (attention, an approval answered
elsewhere) from the screen, after the event is folded.
"""

from __future__ import annotations

from textual.message import Message

from cockpit import events as ev

# events handled in one go at most (the pump queueing them, the screen folding them): a backlog
# (the app fell behind) is worked off in slices with keys and frames between them
EVENT_BATCH = 64


class RuntimeSnapshot(Message, bubble=False):
    """Every session's events so far, taken as the app subscribed (``Runtime.snapshot()``)."""

    def __init__(self, events: tuple[ev.Event, ...]) -> None:
        super().__init__()
        self.events = events


class RuntimeEvents(Message, bubble=False):
    """Events as they happen (after the snapshot) wait in the screen's queue: fold them all."""
