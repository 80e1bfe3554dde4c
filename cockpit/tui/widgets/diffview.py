"""A file's diff as highlighted lines with a line cursor and a range selection (for review
comments). One ``ScrollView`` drawing lines (no widget per line): a diff of thousands of lines
scrolls and moves its cursor without re-rendering the others.

Keys: ``up``/``down`` move the cursor, ``shift+up``/``shift+down`` extend the
selection, ``v`` starts or clears a selection at the cursor (``selection_start``), ``pageup``/``pagedown``,
``home``/``end``; a click moves the cursor, shift+click extends. :attr:`selection` is the
(first, last) line indexes the next review comment quotes.
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual

from cockpit.tui.diffrender import DiffLine


class DiffView(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False, id="diff.cursor_up"),
        Binding("down", "move(1)", "Down", show=False, id="diff.cursor_down"),
        Binding("shift+up", "move(-1, True)", "Select up", show=False, id="diff.select_up"),
        Binding("shift+down", "move(1, True)", "Select down", show=False, id="diff.select_down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="diff.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="diff.page_down"),
        Binding("home", "edge(-1)", "Top", show=False, id="diff.top"),
        Binding("end", "edge(1)", "Bottom", show=False, id="diff.bottom"),
        Binding("v", "mark", "Select", id="diff.mark"),
        # long lines: the view pans sideways (shift: further)
        Binding("right", "pan(8)", "Right", show=False, id="diff.right"),
        Binding("left", "pan(-8)", "Left", show=False, id="diff.left"),
        Binding("shift+right", "pan(40)", "Far right", show=False, id="diff.far_right"),
        Binding("shift+left", "pan(-40)", "Far left", show=False, id="diff.far_left"),
    ]

    CURSOR_STYLE = "on $primary 35%"
    SELECTION_STYLE = "on $secondary 25%"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.lines: list[DiffLine] = []
        self._contents: list[Content] = []
        self.cursor = 0
        self.selection_start: int | None = None
        self._cache: dict[tuple[int, str], Strip] = {}
        self._width = 1
        self._marking = False  # "v" was pressed: plain moves extend the selection until "v" again

    # -- content ---------------------------------------------------------------------
    def set_lines(self, lines: list[DiffLine], contents: list[Content]) -> None:
        """Show ``contents`` (one per diff line); the cursor goes to the first changed line."""
        self.lines = list(lines)
        self._contents = list(contents)
        self._cache.clear()
        self.selection_start = None
        self.cursor = next((i for i, ln in enumerate(lines) if ln.kind in ("add", "del")), 0)
        self._width = max([c.cell_length for c in contents] or [1])
        self.virtual_size = Size(self._width + 1, len(contents))
        self.scroll_to(0, max(0, self.cursor - 3), animate=False)
        self.refresh()

    @property
    def selection(self) -> tuple[int, int]:
        """(first, last) line index of the selection (the cursor line alone when none)."""
        if self.selection_start is None:
            return self.cursor, self.cursor
        return min(self.selection_start, self.cursor), max(self.selection_start, self.cursor)

    def selected_lines(self) -> list[DiffLine]:
        first, last = self.selection
        return self.lines[first : last + 1]

    def selected_contents(self) -> list[Content]:
        """The selection's lines as shown (highlighted)."""
        first, last = self.selection
        return self._contents[first : last + 1]

    # -- actions ---------------------------------------------------------------------
    def action_move(self, step: int, extend: bool = False) -> None:
        if extend and self.selection_start is None:
            self.selection_start = self.cursor
        elif not extend and self.selection_start is not None and not self._marking:
            self.selection_start = None
        self._go(self.cursor + step)

    def action_mark(self) -> None:
        if self._marking or self.selection_start is not None:
            self._marking = False
            self.selection_start = None
        else:
            self._marking = True
            self.selection_start = self.cursor
        self.refresh()

    def action_page(self, step: int) -> None:
        self.action_move(step * max(1, self.scrollable_content_region.height - 1))

    def action_pan(self, columns: int) -> None:
        self.scroll_to(x=max(0, self.scroll_target_x + columns), animate=False, immediate=True)

    def action_edge(self, step: int) -> None:
        self.action_move(step * len(self.lines))

    def clear_selection(self) -> None:
        self._marking = False
        self.selection_start = None
        self.refresh()

    def _go(self, index: int) -> None:
        if not self.lines:
            return
        self.cursor = max(0, min(len(self.lines) - 1, index))
        height = self.scrollable_content_region.height or 1
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        index = event.y + self.scroll_offset.y
        if 0 <= index < len(self.lines):
            if event.shift:
                if self.selection_start is None:
                    self.selection_start = self.cursor
            elif not self._marking:
                self.selection_start = None
            self._go(index)

    # -- drawing ---------------------------------------------------------------------
    def _state(self, index: int) -> str:
        if index == self.cursor and self.has_focus:
            return "cursor"
        first, last = self.selection
        if self.selection_start is not None and first <= index <= last:
            return "selected"
        if index == self.cursor:
            return "cursor"
        return ""

    def _strip(self, index: int) -> Strip:
        state = self._state(index)
        key = (index, state)
        strip = self._cache.get(key)
        if strip is None:
            content = self._contents[index]
            if state:
                style = self.CURSOR_STYLE if state == "cursor" else self.SELECTION_STYLE
                content = content.extend_right(self._width - content.cell_length).stylize(style)
            strips = Visual.to_strips(self, content, max(1, content.cell_length), 1, self.visual_style,
                                      apply_selection=False)
            strip = strips[0] if strips else Strip.blank(0)
            if len(self._cache) > 2048:
                self._cache.clear()
            self._cache[key] = strip
        return strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        style = self.rich_style
        if index >= len(self._contents):
            return Strip.blank(width, style)
        return self._strip(index).crop_extend(scroll_x, scroll_x + width, style)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
