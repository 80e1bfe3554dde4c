"""What the TUI knows about one session, built only from ``cockpit.events`` (no Textual).

A ``SessionView`` is a :class:`cockpit.runtime.history.SessionHistory` (the one reducer): it
folds events in as they arrive (cheap, per event); a pane widget renders it
on its flush tick, so a burst of ``TextDelta``/``UsageUpdate`` events costs one repaint.
Units: token counts in tokens, costs in USD (``None`` = the model has no price, shown "n/a").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cockpit.events import SessionStatus, Usage
from cockpit.runtime.history import Block, SessionHistory, approval_text

__all__ = ["Block", "SessionView", "approval_text", "overlaps", "count_by_status", "totals"]


@dataclass
class SessionView(SessionHistory):
    """A pane's session: the folded history (every fact from events) and the conflict radar."""

    # session_id is grid-wide: a remote host's ids carry the host (``cockpit.hostids``)
    host: str = ""  # the host the pane's title names ("" with one host in the grid)
    link: str = ""  # "" while its host is connected, else e.g. "reconnecting (…) · retry in 4 s"
    overlap: dict[str, list[str]] = field(default_factory=dict)  # conflict radar: file → other sessions

    # -- derived facts -----------------------------------------------------------------
    @property
    def in_place(self) -> bool:
        return self.worktree is None

    @property
    def worktree_open(self) -> bool:
        """It has a worktree that no merge / keep / discard has closed yet."""
        return self.worktree is not None and not (self.reviewed is not None and self.reviewed.ok)

    @property
    def has_changes(self) -> bool:
        """Its open worktree holds changes (files changed against the base commit)."""
        return self.worktree_open and self.changes is not None and self.changes.files > 0

    @property
    def context_fraction(self) -> float | None:
        if not self.context_window:
            return None
        return self.context_tokens / self.context_window

    @property
    def context_high(self) -> bool:
        """Context use at or past the 80 % warning (or the context is full)."""
        frac = self.context_fraction
        return self.context_level in ("warn", "full") or (frac is not None and frac >= 0.8)

    @property
    def preseed_share(self) -> float | None:
        """Preseed tokens as a fraction of all input-side tokens sent so far (0–1)."""
        sent = self.usage.input + self.usage.cache_read + self.usage.cache_write
        if not sent or not self.preseed_tokens:
            return None
        return min(1.0, self.preseed_tokens / sent)

    # -- earlier output (a resumed session's predecessor) ----------------------------------
    def add_history(self, earlier: list[Block], note: str = "") -> None:
        """Put a predecessor's output (:meth:`SessionHistory.earlier_blocks` of its transcript's
        events) before the blocks events have added."""
        history = list(earlier)
        if note:
            history.append(Block("note", text=note))
        if history:
            self.blocks[:0] = history
            self.turn_start += len(history)
            self.epoch += 1
            self.version += 1
            self.meta_version += 1


def overlaps(views: Any) -> dict[str, dict[str, list[str]]]:
    """The conflict radar: for each session, each changed file that another session with an open
    worktree (not merged, kept or discarded; live or waiting) has changed too → those sessions'
    ids. ``views``: a list or a dict of :class:`SessionView`."""
    items = list(views.values()) if isinstance(views, dict) else list(views)
    touching: dict[str, list[str]] = {}
    for v in items:
        if v.worktree_open and v.changes is not None and not v.status.is_final:
            for path in v.changes.paths:
                touching.setdefault(path, []).append(v.session_id)
    out: dict[str, dict[str, list[str]]] = {}
    for path, sids in touching.items():
        if len(sids) > 1:
            for sid in sids:
                out.setdefault(sid, {})[path] = [o for o in sids if o != sid]
    return out


def count_by_status(views: list[SessionView]) -> dict[SessionStatus, int]:
    """Sessions per state, in the runtime's state order, omitting zeros."""
    counts: dict[SessionStatus, int] = {}
    for status in SessionStatus:
        n = sum(1 for v in views if v.status is status)
        if n:
            counts[status] = n
    return counts


def totals(views: list[SessionView]) -> tuple[Usage, float | None, bool]:
    """(summed usage in tokens, summed USD of priced sessions or None, any unpriced?)."""
    usage = Usage()
    cost: float | None = None
    unpriced = False
    for v in views:
        usage = usage + v.usage
        if v.cost_usd is None:
            unpriced = True
        else:
            cost = (cost or 0.0) + v.cost_usd
    return usage, cost, unpriced
