"""The grid of session panes, sized to the terminal.

Up to nine panes show at once (1 → full screen, 2–3 side by side, 4 → 2×2, 5–6 → 3×2,
7–9 → 3×3). A small terminal gets fewer at once: a pane needs ``MIN_PANE_WIDTH`` columns and
``MIN_PANE_HEIGHT`` rows to show any output, so at 80×24 a page holds 2×2 and at 60×20 two
panes above each other. More sessions than a page holds: panes go on pages (no cap, nothing
hidden: the totals bar says "page 2/3", focus keys cross pages). Pane numbers continue across
pages (the first pane of page 2 at 3×3 is 10). A pane keeps its number while it is open: closing
one leaves its number free (the next new pane takes the lowest free one) and never renumbers the
others; a pane titled 1–9 has its number's key, the page's others take the keys left free
(``cockpit.tui.screens.main.page_keys``).
Any pane can be zoomed to the whole screen (``z``: Textual's maximize).

Showing another page draws it over a few frames: the frame of the key that crossed pages lays
out the new page and paints only the pane that key selects; the page's other panes keep their
cells (``visibility: hidden``: laid out, not painted) and appear ``REVEAL_PER_FRAME`` at a time
on the frames after it. Painting a whole page of nine panes costs a key's frame ≈ 60-90 ms of
CPU; one pane ≈ a ninth of it (docs/BENCHMARKS.md, Issue 24).

Narrower than ``NARROW_LAYOUT`` columns (a phone's browser) the grid is ``single``: one pane a
page, the selected one; the main screen then shows the list of sessions above it and the buttons
for the selected one below (``widgets.narrow``).
"""

from __future__ import annotations

import math

from textual.app import ComposeResult
from textual.containers import Container
from textual.message import Message
from textual.widgets import Static

from cockpit.tui.widgets.pane import SessionPane

MAX_PAGE = 9  # panes per page at most (3×3)
MIN_PANE_WIDTH = 40  # columns a pane needs (body + side strip)
MIN_PANE_HEIGHT = 8  # rows a pane needs to show a few lines of output (borders + status + 5)
REVEAL_PER_FRAME = 2  # panes of a newly shown page painted per frame after the key's own
NARROW_LAYOUT = 60  # columns: below this, one pane at a time and the list of sessions

EMPTY_HINT = (
    "[b]No sessions yet.[/]\n\n"
    "Press [b]n[/] to spawn one: its first message will carry the project notes that match its task.\n"
    "[b]r[/] past sessions · [b]m[/] search the notes · [b]ctrl+p[/] every command"
)
NO_KEY_HINT = ("\n\n[b $warning]ANTHROPIC_API_KEY is not set:[/] sessions will stop with an auth error."
               "\n[dim]Set it, or try a local Messages API server: ANTHROPIC_API_KEY=x cockpit --base-url URL"
               "\n(docs/GUIDE.md, \"Without an API key\", has one).[/]")


def page_capacity(width: int = 200, height: int = 50) -> tuple[int, int]:
    """(columns, rows) of panes a grid ``width``×``height`` cells can show with output visible."""
    cols = max(1, min(3, width // MIN_PANE_WIDTH))
    rows = max(1, min(3, height // MIN_PANE_HEIGHT))
    return cols, rows


def grid_shape(n: int, width: int = 200, height: int = 50) -> tuple[int, int]:
    """(columns, rows) for ``n`` panes on a page of a grid ``width``×``height`` cells."""
    if n <= 0:
        return 1, 1
    max_cols, _ = page_capacity(width, height)
    cols = 1 if n == 1 else 2 if n in (2, 4) else 3
    cols = min(cols, max_cols)
    return cols, math.ceil(n / cols)


class PaneGrid(Container, can_focus=True):
    """Holds every ``SessionPane``; shows one page of them. Holds the keyboard focus of the main
    screen (panes are selected, not focused)."""

    class PageChanged(Message):
        """The page shown or the number of pages changed (a key, a pane added or closed, a resize)."""

    def __init__(self) -> None:
        super().__init__(id="grid")
        self.page = 0
        self.panes: list[SessionPane] = []
        self._area = (200, 50)  # the grid's last size on screen (it has none while a pane is zoomed)
        self._unrevealed: list[SessionPane] = []  # panes of the page shown, not painted yet
        self._laid_out = (0, 1)  # the (page, pages) of the last layout
        self.single = False  # the narrow layout: one pane a page

    def compose(self) -> ComposeResult:
        no_key = getattr(self.app, "api_key_missing", False)
        yield Static(EMPTY_HINT + (NO_KEY_HINT if no_key else ""), id="empty-hint")

    @property
    def page_size(self) -> int:
        """Panes per page for the grid's current size (1–9; 1 in the narrow layout)."""
        if self.single:
            return 1
        cols, rows = page_capacity(*self._area)
        return min(MAX_PAGE, cols * rows)

    @property
    def pages(self) -> int:
        return max(1, math.ceil(len(self.panes) / self.page_size))

    @property
    def columns(self) -> int:
        return self._shape(self._per_page())[0]

    def _per_page(self) -> int:
        """Panes on the fullest page: every page has its shape, so a last page with fewer panes
        keeps their size and position (and paging never changes the grid's shape, which
        re-styles every pane on every page: ≈ 20 ms a key)."""
        return min(len(self.panes), self.page_size)

    def _shape(self, n: int) -> tuple[int, int]:
        return grid_shape(n, *self._area)

    def page_panes(self, page: int | None = None) -> list[SessionPane]:
        page = self.page if page is None else page
        size = self.page_size
        return self.panes[page * size : (page + 1) * size]

    async def add_pane(self, pane: SessionPane) -> None:
        taken = {p.number for p in self.panes}
        pane.number = next(n for n in range(1, len(self.panes) + 2) if n not in taken)
        self.panes.append(pane)
        self.panes.sort(key=lambda p: p.number)
        pane.display = self.page_of(pane) == self.page  # a pane of another page is not drawn while it mounts
        await self.mount(pane, before=self.panes.index(pane) + 1 if self.panes[-1] is not pane else None)
        self.relayout()

    async def remove_pane(self, pane: SessionPane) -> None:
        """Take ``pane`` off the grid (its session's pane is closed)."""
        if pane in self.panes:
            self.panes.remove(pane)
        await pane.remove()
        self.relayout()

    def show_page(self, page: int, first: SessionPane | None = None) -> None:
        """Show ``page``; ``first``: the pane painted in this frame (the one a key selects), the
        page's others on the next frames (see the module's docstring). None: all at once."""
        page = max(0, min(page, self.pages - 1))
        if page == self.page:
            return
        self.page = page
        self.relayout(first)

    @property
    def revealing(self) -> bool:
        """Whether panes of the page shown are still waiting for their frame."""
        return bool(self._unrevealed)

    def _reveal(self) -> None:
        """Paint the next few panes of the page shown (after the frame that drew the ones
        before), then come back after the next frame until all are shown."""
        batch, self._unrevealed = self._unrevealed[:REVEAL_PER_FRAME], self._unrevealed[REVEAL_PER_FRAME:]
        for pane in batch:
            pane.styles.visibility = "visible"
            pane.sync()
        if self._unrevealed:
            self.call_after_refresh(self._reveal)

    def page_of(self, pane: SessionPane) -> int:
        return self.panes.index(pane) // self.page_size

    def relayout(self, first: SessionPane | None = None) -> None:
        """Lay out the page shown. ``first``: see ``show_page``."""
        self.page = min(self.page, self.pages - 1)
        visible = self.page_panes()
        cols, rows = self._shape(self._per_page())
        self.styles.grid_size_columns = cols  # (a setting that changes nothing does nothing)
        self.styles.grid_size_rows = rows
        shown = set(map(id, visible))
        for pane in self._unrevealed:
            pane.styles.visibility = "visible"
        self._unrevealed = []
        for pane in self.panes:
            if id(pane) in shown and not pane.display and first is not None and pane is not first:
                pane.styles.visibility = "hidden"
                self._unrevealed.append(pane)
            pane.display = id(pane) in shown
        if self._unrevealed:
            self.call_after_refresh(self._reveal)
        self.add_class("empty") if not self.panes else self.remove_class("empty")
        self.query_one("#empty-hint").display = not self.panes
        if (self.page, self.pages) != self._laid_out:
            self._laid_out = (self.page, self.pages)
            self.post_message(self.PageChanged())

    def on_resize(self) -> None:
        if self.size.width and self.size.height:
            self._area = (self.size.width, self.size.height)
            self.single = self.size.width < NARROW_LAYOUT
        selected = getattr(self.screen, "selected", None)
        if selected in self.panes:  # keep the selected pane on screen when the page size changes
            self.page = self.page_of(selected)
        self.relayout()
