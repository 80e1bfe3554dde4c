"""A pane's scrollable body: the answer as Markdown, tool calls, follow-ups and errors, drawn as
lines by one ``ScrollView`` (no child widgets).

Why not Textual's ``Markdown`` widget: it makes a widget per block, so nine long answers mean
hundreds of widgets, and every update re-lays out the whole screen. Here every block is rendered
once to lines (Rich's Markdown for answer text) and cached per width; a growing answer is split
at paragraph boundaries outside code fences (``answer.split_point``) so only its short tail
re-renders as tokens arrive, and an update repaints only this widget. The view follows the end
while the reader is at the bottom; scrolling up holds the place (scrollback) until they return
to the end.
"""

from __future__ import annotations

from typing import Any

from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from cockpit.tui import format as fmt
from cockpit.tui.model import Block
from cockpit.tui.widgets.answer import CHUNK, split_point


class _Rendered:
    """The lines of one block at one width: frozen (finished paragraphs) + tail."""

    __slots__ = ("version", "width", "frozen_chars", "frozen", "tail")

    def __init__(self, width: int) -> None:
        self.version = -1
        self.width = width
        self.frozen_chars = 0
        self.frozen: list[Strip] = []
        self.tail: list[Strip] = []


class PaneBody(ScrollView, can_focus=False):
    """Lines for a list of ``Block``s; call ``show(blocks, epoch)`` on the flush tick."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._blocks: list[Block] = []
        self._epoch = -1
        self._epoch_wanted = 0
        self._rendered: list[_Rendered] = []
        self._lines: list[Strip] = []
        self._width = 0
        self._line_cache: dict[tuple[int, int, int], tuple[Strip, Strip]] = {}
        self._line_style: Style | None = None  # the style the cached lines were cut with
        self._frame_style: Style | None = None  # this widget's style, once per render_lines
        self._theme_key: tuple | None = None  # what the rendered blocks' colours came from
        # following the end: kept from the last scroll (the reader's or ours), not recomputed
        # after a resize — a shrunk viewport with the old content size reads as "scrolled up"
        self._follow = True

    # -- content ---------------------------------------------------------------------
    def show(self, blocks: list[Block], epoch: int) -> None:
        """Bring the lines up to ``blocks`` (re-renders only what changed)."""
        width = self.scrollable_content_region.width or self.size.width
        self._epoch_wanted = epoch
        if width <= 0:  # not laid out (a pane on a page out of sight): drawn at its first paint
            self._blocks = list(blocks)
            return
        if epoch != self._epoch or width != self._width:
            self._rendered = []
            self._epoch, self._width = epoch, width
        self._blocks = list(blocks)
        changed = len(self._rendered) != len(blocks)
        while len(self._rendered) < len(blocks):
            self._rendered.append(_Rendered(width))
        for block, cached in zip(blocks, self._rendered, strict=False):
            if cached.version != block.version:
                self._render_block(block, cached, width)
                changed = True
        if changed or (self._follow and self.scroll_y < self.max_scroll_y):
            at_end = self._follow
            top, height = self.scroll_offset.y, self.scrollable_content_region.height
            before = self._lines[top : top + height]
            lines: list[Strip] = []
            for cached in self._rendered:
                lines.extend(cached.frozen)
                lines.extend(cached.tail)
            self._lines = lines
            size = Size(width, len(lines))
            if size != self.virtual_size:
                # Setting ``virtual_size`` normally lays out the whole screen; only this widget's
                # scroll range changed (its scrollbar is always shown: no region change), so
                # update it without a layout pass.
                self.set_reactive(ScrollView.virtual_size, size)
                self._scroll_update(size)
            if at_end:
                self.scroll_end(animate=False, immediate=True, x_axis=False)
                self.refresh()
            elif before != lines[top : top + height]:
                # the reader scrolled up: repaint only if what they look at changed (text
                # arriving below the view moves nothing but the scrollbar; a re-rendered tail
                # gives new but equal lines)
                self.refresh()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._follow = new_value >= self.max_scroll_y

    def plain_text(self) -> str:
        """What the body shows, as plain text (one string; for tests and copying)."""
        return "\n".join(strip.text.rstrip() for strip in self._lines)

    def on_resize(self) -> None:
        self.call_after_refresh(self._rewrap)

    def _rewrap(self) -> None:
        if self.is_mounted:
            self.show(self._blocks, self._epoch_wanted)

    # -- rendering -------------------------------------------------------------------
    def _lines_of(self, renderable, width: int) -> list[Strip]:
        console = self.app.console
        options = console.options.update_width(width)
        lines = list(Segment.split_lines(console.render(renderable, options)))
        strips = Strip.from_lines(lines)
        for strip in strips:
            strip.adjust_cell_length(width)
        return strips

    def _colour(self, name: str) -> Style:
        theme = self.app.current_theme
        value = getattr(theme, name, None) or theme.primary
        try:
            return Style(color=value)
        except Exception:
            return Style()

    def _render_block(self, block: Block, cached: _Rendered, width: int) -> None:
        cached.version = block.version
        if block.kind == "text":
            tail = block.text[cached.frozen_chars :]
            while len(tail) > CHUNK:
                cut = split_point(tail)
                if cut is None:
                    break
                cached.frozen.extend(self._lines_of(_markdown(tail[:cut]), width))
                cached.frozen_chars += cut
                tail = tail[cut:]
            cached.tail = self._lines_of(_markdown(tail), width) if tail.strip() else []
            return
        if block.kind == "tool":
            label, args = fmt.tool_label(block.name, block.input)
            text = Text.assemble((label, self._colour("accent")), (" " if args[:1] != "(" else "", ""),
                                 (args, "dim" if args[:1] == "(" else ""))
            outside = block.result is not None and fmt.ran_outside(block.result)
            stopped = "" if block.result is None or outside else fmt.sandbox_blocked(block.result)
            if stopped:  # said on the line, not only to the model (a pipeline's exit status hid it)
                text.append(f" [⛔ the sandbox blocked {stopped}]", self._colour("warning"))
            if block.approval or outside:
                approval = " · ".join(filter(None, (block.approval, "ran outside the sandbox" if outside else "")))
                allowed = approval.startswith(("allowed", "ran outside"))
                text.append(f" [{'✓' if allowed else '✗'} {approval}]",
                            self._colour("success") if allowed else self._colour("error"))
            if block.result is None:
                text.append(" …", "dim")
            else:
                style = self._colour("error") if block.is_error else Style(dim=True)
                text.append(" → " + fmt.tool_result(block.result, block.is_error), style)
        elif block.kind == "user":
            text = Text.assemble(("› ", self._colour("secondary") + Style(bold=True)), block.text)
        elif block.kind == "note":
            text = Text("· " + block.text, Style(dim=True, italic=True))
        else:
            text = Text("✗ " + block.text, self._colour("error"))
        cached.tail = self._lines_of(text, width) + [Strip.blank(width)]

    def render_lines(self, crop):
        width = self.scrollable_content_region.width
        if width > 0 and width != self._width and self._blocks:
            # lines made for another width, or none yet (shown while it had no size): make them
            # for this one on the next frame — whether or not a Resize reached this widget
            self.call_after_refresh(self._rewrap)
        # ``rich_style`` walks every ancestor's styles: once per paint, not once per line
        self._frame_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        style = self._frame_style if self._frame_style is not None else self.rich_style
        if style != self._line_style:
            self._line_cache.clear()
            self._line_style = style
        if index >= len(self._lines):
            return Strip.blank(width, style)
        line = self._lines[index]
        key = (id(line), scroll_x, width)
        hit = self._line_cache.get(key)
        if hit is not None and hit[0] is line:
            return hit[1]
        if len(self._line_cache) > 256:  # a few screens of lines (nine bodies: memory adds up)
            self._line_cache.clear()
        # a line already as wide as the view is used as it is: Textual's crop_extend would cache
        # the strip in itself (a reference cycle per line, left for the garbage collector, whose
        # passes then stall frames)
        fitted = line if scroll_x == 0 and line.cell_length == width else line.crop_extend(scroll_x, scroll_x + width,
                                                                                            style)
        strip = fitted.apply_style(style)
        self._line_cache[key] = (line, strip)
        return strip

    def notify_style_update(self) -> None:
        """Style change. Textual calls this on every widget of a pane whenever a class of the pane
        changes (status), even when nothing this widget shows changed: the blocks render again
        only when the theme colours they use changed (the line cache follows the widget's own
        style in ``render_line``)."""
        super().notify_style_update()
        key = self._theme_signature()
        if key != self._theme_key:
            self._theme_key = key
            if self._rendered:
                self._rendered = []
                self._epoch = -1
                if self.is_mounted:
                    self.call_later(self._rewrap)

    def _theme_signature(self) -> tuple | None:
        try:
            theme = self.app.current_theme
        except Exception:
            return None
        return (theme.name, theme.primary, theme.accent, theme.secondary, theme.error, theme.success)


def _markdown(text: str) -> RichMarkdown:
    """Rich's Markdown of ``text``. ``RichMarkdown(...)`` builds a new ``MarkdownIt`` parser on
    every call, most of the cost of a streaming tail's re-render: this one parses with one
    parser built once (the same rules), when a check at first use shows that gives what Rich's
    own constructor gives; else it is Rich's constructor."""
    if _MD.template is None:
        _MD.check()
    if not _MD.template:
        return RichMarkdown(text, code_theme="monokai", hyperlinks=False)
    md = RichMarkdown.__new__(RichMarkdown)
    md.__dict__.update(_MD.template)
    md.markup = text
    md.parsed = _MD.parser.parse(text)
    return md


class _MD:
    parser: Any = None
    template: dict | None = None  # a constructed one's attributes (empty: use the constructor)

    @classmethod
    def check(cls) -> None:
        sample = "# t\n\n~~s~~ *e* **b** `c`\n\n| a | b |\n| - | - |\n| 1 | 2 |\n\n```py\nx\n```\n"
        cls.template = {}
        try:
            from markdown_it import MarkdownIt

            parser = MarkdownIt().enable("strikethrough").enable("table")
            made = RichMarkdown(sample, code_theme="monokai", hyperlinks=False)
            attrs = dict(vars(made))
            if not {"markup", "parsed"} <= attrs.keys():
                return
            ours = [(t.type, t.tag, t.content) for t in parser.parse(sample)]
            if ours != [(t.type, t.tag, t.content) for t in made.parsed]:
                return
        except Exception:
            return
        cls.parser = parser
        cls.template = attrs
