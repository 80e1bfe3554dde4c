"""The totals bar at the top: sessions by state ("needs approval" and "budget reached" in
reverse colours, so a session waiting for a yes/no or a higher spend cap stands out), total
tokens and USD (moving live while responses stream), the memory engine's state (warming / N
notes / last sync / warnings count — press ``w`` to see them; a missing notes folder is said
here), and the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.content import Content
from textual.markup import escape
from textual.widgets import Static

from cockpit.events import SessionStatus
from cockpit.tui import format as fmt
from cockpit.tui.model import SessionView, count_by_status, totals


@dataclass
class MemoryState:
    """What the bar says about the memory engine (filled from ``engine.status()``)."""

    model_state: str = "off"  # "warming" | "ready" | "error" | "off" (no engine)
    notes: int = 0
    last_sync: str = ""  # "HH:MM:SS", already formatted
    warnings: int = 0
    watching: bool = False
    watch_status: str = ""  # the watcher's own line (engine.status().watch / on_status)
    watch_problem: bool = False  # e.g. the notes folder is missing
    syncing: bool = False
    last_change: str = ""  # e.g. "+1 ~2 -0"
    notes_missing: str = ""  # the notes folder's path when it does not exist, else ""


def memory_markup(m: MemoryState, brief: bool = False) -> str:
    """The memory part; ``brief``: without the explanation of a missing notes folder."""
    missing = ""
    if m.notes_missing:
        missing = f"[b $warning]no notes folder at {escape(m.notes_missing)}[/]"
        missing += "" if brief else " [dim](sessions start without notes)[/]"
    if m.model_state == "off":
        return f"[dim]memory off[/] · {missing}" if missing else "[dim]memory off[/]"
    if m.model_state == "warming":
        state = "[$warning]warming model…[/]"
    elif m.model_state == "error":
        state = "[$error]model error[/]"
    else:
        state = f"{m.notes} note{'' if m.notes == 1 else 's'}"
    parts = [f"memory: {state}"]
    if m.syncing:
        parts.append("[$secondary]indexing…[/]")
    elif m.last_sync:
        change = f" ({m.last_change})" if m.last_change else ""
        parts.append(f"synced {m.last_sync}{change}")
    if missing:
        parts.append(missing)
    elif m.watching and m.watch_status:  # (said once the watcher says so: its OS watch is in place)
        line = escape(m.watch_status)
        parts.append(f"[$warning]{line}[/]" if m.watch_problem else line)
    if m.warnings:
        parts.append(f"[$warning]⚠ {m.warnings} warning{'' if m.warnings == 1 else 's'}[/] [dim](w)[/]")
    return " · ".join(parts)


def memory_short(m: MemoryState) -> str:
    """The memory part for a narrow bar: the missing notes folder, the engine's state, warnings."""
    if m.notes_missing:
        return "[b $warning]⚠ no notes folder[/]"
    state = {"off": "[dim]memory off[/]", "warming": "[$warning]warming…[/]", "error": "[$error]model error[/]"}.get(
        m.model_state, f"{m.notes} note{'' if m.notes == 1 else 's'}")
    warned = f" [$warning]⚠ {m.warnings}[/] [dim](w)[/]" if m.warnings else ""
    return state + warned


def totals_markup(views: list[SessionView], memory: MemoryState, page: int, pages: int,
                  closed: Sequence[SessionView] = (), hosts: Sequence[tuple[str, str]] = (), width: int = 0) -> str:
    """``views``: the sessions with a pane (counted by state); ``closed``: sessions whose pane
    was closed (their tokens and USD stay in the totals); ``hosts``: ``(name, state)`` of each
    host of a grid of several (``cockpit.tui.hosts``). ``width``: the bar's columns (0: any);
    when the whole line does not fit, the memory part is said short, right after the name (a
    narrow terminal cuts the end: a missing notes folder must stay in sight)."""
    counts = count_by_status(views)

    def states_markup(words: str) -> str:
        """``words``: ``long`` ("? 2 waiting for you"), ``short`` ("? 2 waiting") or "" ("? 2")."""
        if not counts:
            return "[dim]no sessions — press n[/]"

        def said(s: SessionStatus) -> str:
            return {"long": " " + s.value, "short": " " + fmt.STATUS_SHORT.get(s, s.value)}.get(words, "")

        return ("  " if words else " ").join(
            f"[b $background on ${fmt.status_class(s)}] {fmt.STATUS_GLYPH[s]} {n}{said(s)} [/]"
            if s in (SessionStatus.NEEDS_APPROVAL, SessionStatus.BUDGET_REACHED)
            else f"[{'$' + fmt.status_class(s)}]{fmt.STATUS_GLYPH[s]} {n}{said(s)}[/]"
            for s, n in counts.items()
        )

    states = states_markup("long")
    usage, cost, unpriced = totals([*views, *closed])
    money = fmt.usd(cost) + (" + n/a" if unpriced and cost is not None else "")
    if cost is None and not unpriced:
        money = fmt.usd(0.0)
    spend = f"{fmt.tokens(usage.total)} tok  {money}"
    page_part = f" │ page {page + 1}/{pages}" if pages > 1 else ""  # early: a narrow terminal cuts the end
    rest = f"{hosts_markup(hosts)} │ {states}{sandbox_markup(views)}{radar_markup(views)} │ {spend}"
    # narrower: the states in a word each, then by glyph and count only; narrowest: the spend
    # before them (after the memory part: a missing notes folder must stay in sight)
    worded, short = (f"{hosts_markup(hosts)} │ {states_markup(words)} │ {spend}{sandbox_markup(views)}"
                     f"{radar_markup(views)}" for words in ("short", ""))
    lines = [f"[b]cockpit[/b]{page_part}{rest} │ {memory_markup(memory)}",
             f"[b]cockpit[/b]{page_part}{rest} │ {memory_markup(memory, brief=True)}",
             f"[b]cockpit[/b]{page_part} │ {memory_short(memory)}{rest}",
             f"[b]cockpit[/b]{page_part} │ {memory_short(memory)}{worded}",
             f"[b]cockpit[/b]{page_part} │ {memory_short(memory)}{short}",
             f"[b]cockpit[/b]{page_part} │ {memory_short(memory)} │ {spend}{hosts_markup(hosts)} │ "
             f"{states_markup('')}{sandbox_markup(views)}{radar_markup(views)}"]
    return next((line for line in lines if not width or Content.from_markup(line).cell_length <= width), lines[-1])


HOST_GLYPH = {"connected": "●", "replaying": "◐", "connecting": "○", "reconnecting": "⟳", "unreachable": "✗"}


def hosts_markup(hosts: Sequence[tuple[str, str]]) -> str:
    """`` │ local ● box ⟳ reconnecting``: a connected host by its name, any other with its state
    in the warning colour; nothing with one host."""
    if not hosts:
        return ""
    parts = [f"{escape(name)} [$success]●[/]" if state == "connected"
             else f"[b $warning]{escape(name)} {HOST_GLYPH.get(state, '?')} {escape(state)}[/]"
             for name, state in hosts]
    return " │ " + "  ".join(parts)


def radar_markup(views: Sequence[SessionView]) -> str:
    """The conflict radar in the header: `` · ⚠ calc.py changed by 2 sessions`` (the first shared
    file, and how many more) in the warning colour; nothing when no two live sessions share a file."""
    shared: dict[str, set[str]] = {}
    for v in views:
        for path, others in v.overlap.items():
            shared.setdefault(path, set()).update([v.session_id, *others])
    if not shared:
        return ""
    first = sorted(shared)[0]
    more = f" (+{len(shared) - 1} more)" if len(shared) > 1 else ""
    return f" · [b $warning]⚠ {escape(first)} changed by {len(shared[first])} sessions{more}[/]"


def sandbox_markup(views: Sequence[SessionView]) -> str:
    """Where the live sessions' commands run: `` · ⚠ 2 unconfined`` in the warning colour when any
    runs unconfined, `` · sandboxed`` when all are; nothing before the first session."""
    live = [v for v in views if not v.status.is_final and (v.sandbox or v.sandbox_note)]
    loose = sum(1 for v in live if not v.sandbox)
    if loose:
        return f" · [b $warning]⚠ {loose} unconfined[/]"
    return " · [dim]sandboxed[/]" if live else ""


class TotalsBar(Static):
    """One line; the app calls ``show`` on its flush tick when something changed (and a resize
    redraws the last one, fitted to the new width)."""

    _last: tuple | None = None

    def show(self, views: list[SessionView], memory: MemoryState, page: int, pages: int,
             closed: Sequence[SessionView] = (), hosts: Sequence[tuple[str, str]] = ()) -> None:
        self._last = (views, memory, page, pages, closed, hosts)
        width = self.content_region.width or self.app.size.width - 2
        self.update(Content.from_markup(totals_markup(views, memory, page, pages, closed, hosts, width)), layout=False)

    def on_resize(self) -> None:
        if self._last is not None:
            self.show(*self._last)
