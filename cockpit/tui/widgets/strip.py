"""The side strip of a pane: the notes this session was given, and its tokens and cost.

Units: tokens (compact, e.g. ``1.2k``), USD, context-window use in % of the model's window.
"""

from __future__ import annotations

from textual.content import Content
from textual.markup import escape

from cockpit.tui import format as fmt
from cockpit.tui.model import SessionView


def strip_markup(view: SessionView, width: int = 22) -> str:
    """The strip's content as Textual markup (theme variables for colour)."""
    lines: list[str] = ["[b]notes given[/b]"]
    if not view.preseed_enabled:
        lines.append("[dim]preseed off[/]")
    elif not view.preseeded:
        lines.append("[dim]…[/]")
    elif not view.notes:
        lines.append("[dim](none qualified)[/]")
    name_w = max(width - 6, 6)
    for note in view.notes:
        star = "[$accent]★[/]" if note.priority else " "
        name = escape(fmt.short(note.name, name_w - 1))
        lines.append(f"{star}{name:<{name_w - 1}} [dim]{note.score:.2f}[/]")
    u = view.usage
    lines += [
        "",
        "[b]tokens[/b]",
        f"in      {fmt.tokens(u.input):>7}",
        f"out     {fmt.tokens(u.output):>7}",
        f"cache r {fmt.tokens(u.cache_read):>7}",
        f"cache w {fmt.tokens(u.cache_write):>7}",
        f"cost    {fmt.usd(view.cost_usd):>7}",
    ]
    if view.preseed_tokens:
        share = view.preseed_share
        pct = f" {share * 100:.0f}%" if share is not None else ""
        lines.append(f"preseed {fmt.tokens(view.preseed_tokens):>5}{pct}")
    sel = view.selector
    if sel is not None:  # the model selector's call: tokens (also in the totals above), outcome
        what = "fell back" if sel.chosen is None else f"{sel.chosen} chosen"
        lines.append(f"selector {fmt.tokens(sel.usage.total):>4} [dim]{what}[/]")
    ctx = fmt.percent(view.context_tokens, view.context_window)
    lines.append(f"ctx {fmt.bar(view.context_tokens, view.context_window, 8)} {ctx}")
    return "\n".join(lines)


def strip_content(view: SessionView, width: int = 22) -> Content:
    return Content.from_markup(strip_markup(view, width))
