"""The grid of session panes, sized to the terminal.

Up to nine panes show at once (1 → full screen, 2–3 side by side, 4 → 2×2, 5–6 → 3×2,
7–9 → 3×3); narrow terminals get fewer columns. More than nine: panes go on pages of nine
(no cap, nothing hidden: the totals bar says "page 2/3", focus keys cross pages).
"""

from __future__ import annotations

import math

from textual.app import ComposeResult
from textual.containers import Container
from textual.widgets import Static

from cockpit.tui.widgets.pane import SessionPane

PAGE_SIZE = 9

EMPTY_HINT = (
    "[b]No sessions yet.[/]\n\n"
    "Press [b]n[/] to spawn one: its first message will carry the project notes that match its task.\n"
    "[b]r[/] past sessions · [b]m[/] search the notes · [b]ctrl+p[/] every command"
)
NO_KEY_HINT = "\n\n[b $warning]ANTHROPIC_API_KEY is not set:[/] sessions will stop with an auth error."


def grid_shape(n: int, width: int = 200) -> tuple[int, int]:
    """(columns, rows) for ``n`` panes on a page of a terminal ``width`` cells wide."""
    if n <= 0:
        return 1, 1
    cols = 1 if n == 1 else 2 if n in (2, 4) else 3
    cols = max(1, min(cols, width // 40 or 1))
    return cols, math.ceil(n / cols)


class PaneGrid(Container, can_focus=True):
    """Holds every ``SessionPane``; shows one page of up to nine. Holds the keyboard focus of
    the main screen (panes are selected, not focused)."""

    def __init__(self) -> None:
        super().__init__(id="grid")
        self.page = 0
        self.panes: list[SessionPane] = []

    def compose(self) -> ComposeResult:
        config = getattr(getattr(self.app, "manager", None), "config", None)
        no_key = config is not None and not getattr(config, "api_key", None)
        yield Static(EMPTY_HINT + (NO_KEY_HINT if no_key else ""), id="empty-hint")

    @property
    def pages(self) -> int:
        return max(1, math.ceil(len(self.panes) / PAGE_SIZE))

    @property
    def columns(self) -> int:
        return grid_shape(len(self.page_panes()), self.size.width or 200)[0]

    def page_panes(self, page: int | None = None) -> list[SessionPane]:
        page = self.page if page is None else page
        return self.panes[page * PAGE_SIZE : (page + 1) * PAGE_SIZE]

    async def add_pane(self, pane: SessionPane) -> None:
        self.panes.append(pane)
        await self.mount(pane)
        self.relayout()

    def show_page(self, page: int) -> None:
        self.page = max(0, min(page, self.pages - 1))
        self.relayout()

    def page_of(self, pane: SessionPane) -> int:
        return self.panes.index(pane) // PAGE_SIZE

    def relayout(self) -> None:
        self.page = min(self.page, self.pages - 1)
        visible = self.page_panes()
        cols, rows = grid_shape(len(visible), self.size.width or 200)
        self.styles.grid_size_columns = cols
        self.styles.grid_size_rows = rows
        shown = set(map(id, visible))
        for pane in self.panes:
            on_page = id(pane) in shown
            pane.display = on_page
            number = visible.index(pane) + 1 if on_page else 0
            if number != pane.number:
                pane.number = number
                pane.sync(force=True)
        self.add_class("empty") if not self.panes else self.remove_class("empty")
        self.query_one("#empty-hint").display = not self.panes

    def on_resize(self) -> None:
        self.relayout()
