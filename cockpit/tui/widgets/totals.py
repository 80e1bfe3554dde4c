"""The totals bar at the top: sessions by state, total tokens and USD, the memory engine's
state (warming / N notes / last sync / warnings count — press ``w`` to see them), and the page.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

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


def memory_markup(m: MemoryState) -> str:
    if m.model_state == "off":
        return "[dim]memory off[/]"
    if m.model_state == "warming":
        state = "[$warning]warming model…[/]"
    elif m.model_state == "error":
        state = "[$error]model error[/]"
    else:
        state = f"{m.notes} notes"
    parts = [f"memory: {state}"]
    if m.syncing:
        parts.append("[$secondary]indexing…[/]")
    elif m.last_sync:
        change = f" ({m.last_change})" if m.last_change else ""
        parts.append(f"synced {m.last_sync}{change}")
    if m.watching:
        from textual.markup import escape

        line = escape(m.watch_status or "watching notes")
        parts.append(f"[$warning]{line}[/]" if m.watch_problem else line)
    if m.warnings:
        parts.append(f"[$warning]⚠ {m.warnings} warning{'' if m.warnings == 1 else 's'}[/] [dim](w)[/]")
    return " · ".join(parts)


def totals_markup(views: list[SessionView], memory: MemoryState, page: int, pages: int) -> str:
    counts = count_by_status(views)
    if counts:
        states = "  ".join(
            f"[{'$' + fmt.status_class(s)}]{fmt.STATUS_GLYPH[s]} {n} {s.value}[/]"
            for s, n in counts.items()
        )
    else:
        states = "[dim]no sessions — press n[/]"
    usage, cost, unpriced = totals(views)
    money = fmt.usd(cost) + (" + n/a" if unpriced and cost is not None else "")
    if cost is None and not unpriced:
        money = fmt.usd(0.0)
    spend = f"{fmt.tokens(usage.total)} tok  {money}"
    page_part = f" │ page {page + 1}/{pages}" if pages > 1 else ""
    return f"[b]cockpit[/b] │ {states} │ {spend} │ {memory_markup(memory)}{page_part}"


class TotalsBar(Static):
    """One line; the app calls ``show`` on its flush tick when something changed."""

    def show(self, views: list[SessionView], memory: MemoryState, page: int, pages: int) -> None:
        self.update(Content.from_markup(totals_markup(views, memory, page, pages)), layout=False)
