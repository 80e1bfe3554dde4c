"""Which panes to redraw on a flush tick: a pure object (no Textual), unit-tested on its own.

Panes are marked *dirty* when their session's view changed: *urgent* for anything but more
answer text (a status, a tool call, usage, a new block: drawn on the next tick), text-only
otherwise. Answer text is the bulk of the repaint work (a scrolling body repaints all its lines),
so across all panes streaming text is redrawn at most ``budget_hz`` times a second and each pane
at most ``pane_max_hz`` times; the panes waiting longest go first, at most
``ceil(budget_hz / tick_hz)`` of them a tick, so no tick — and no frame — carries every body.
"""

from __future__ import annotations

import math


class RepaintScheduler:
    def __init__(self, tick_hz: float, pane_max_hz: float, budget_hz: float) -> None:
        self.tick_hz, self.pane_max_hz, self.budget_hz = tick_hz, pane_max_hz, budget_hz
        self.dirty: set[str] = set()
        self.urgent: set[str] = set()
        self.last: dict[str, float] = {}  # pane id → time of its last redraw

    def mark(self, pane_id: str, urgent: bool = True) -> None:
        """``pane_id``'s view changed; ``urgent``: by more than answer text."""
        self.dirty.add(pane_id)
        if urgent:
            self.urgent.add(pane_id)

    def forget(self, pane_id: str) -> None:
        self.dirty.discard(pane_id)
        self.urgent.discard(pane_id)
        self.last.pop(pane_id, None)

    def due(self, now: float, visible: set[str] | None = None) -> set[str]:
        """The panes to redraw on the tick at ``now`` (and they count as redrawn at ``now``).
        ``visible``: the panes on screen (None: all); the others stay dirty, drawn once shown —
        with thirty sessions streaming, the two pages out of sight cost nothing."""
        dirty = self.dirty if visible is None else self.dirty & visible
        out = self.urgent & dirty
        text_only = [p for p in dirty if p not in self.urgent]
        if text_only:
            interval = max(1 / self.pane_max_hz, len(text_only) / self.budget_hz) - 0.5 / self.tick_hz
            ready = [p for p in text_only if now - self.last.get(p, -math.inf) >= interval]
            ready.sort(key=lambda p: (self.last.get(p, -math.inf), p))
            out |= set(ready[: max(1, math.ceil(self.budget_hz / self.tick_hz))])
        self.dirty -= out
        self.urgent -= out
        for p in out:
            self.last[p] = now
        return out
