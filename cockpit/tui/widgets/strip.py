"""The side strip of a pane: the notes this session was given, its changes (files, lines +/-
against the worktree's base commit), its tokens and cost (moving live while a response streams),
and its context use.

Units: tokens (compact, e.g. ``1.2k``), USD, context-window use in % of the model's window
(warning colour from 80 %, error colour when full).
"""

from __future__ import annotations

from textual.content import Content
from textual.markup import escape

from cockpit.tui import format as fmt
from cockpit.tui.model import SessionView

INDEX_NAMES = 4  # names of the index listed in the strip (the rest: the review screen, r)


def strip_markup(view: SessionView, width: int = 22) -> str:
    """The strip's content as Textual markup (theme variables for colour)."""
    lines: list[str] = ["[b]notes given[/b]"]
    if not view.preseed_enabled:
        lines.append("[dim]preseed off[/]")
    elif not view.preseeded:
        lines.append("[dim]…[/]")
    elif view.preseed_error:  # never "(none qualified)": the engine failed, it did not decide
        lines.append("[$error]preseed failed[/]")
    elif not view.memory:  # nothing was asked: there are no notes to qualify
        lines.append("[dim](no notes folder)[/]")
    elif not view.notes:
        lines.append("[dim](none qualified)[/]")
    elif not [n for n in view.notes if n.kind == "line"]:
        lines.append("[dim](no line qualified)[/]")
    name_w = max(width - 6, 6)
    for note in view.notes:
        if note.kind != "line":
            continue
        star = "[$accent]★[/]" if note.priority else " "
        name = escape(fmt.short(note.name, name_w - 1))
        figure = fmt.note_figure(note.probability, note.score, note.priority, compact=True)
        lines.append(f"{star}{name:<{name_w - 1}} [dim]{figure}[/]")
    index = [n for n in view.notes if n.kind == "index"]
    if index:
        lines.append(f"[dim]index: {len(index)} listed[/]")
        shown_index = 0
        for note in index:  # the names (a few), a superseded decision with its successor
            retired = note.superseded_by or note.status in ("superseded", "deprecated")
            if not retired and shown_index >= INDEX_NAMES:
                continue
            lines.append(f"[dim] {escape(fmt.short(note.name, width - 2))}[/]")
            shown_index += 1
            if retired:
                succ = f"→{note.superseded_by}" if note.superseded_by else f"({note.status})"
                lines.append(f"[dim]  {escape(fmt.short(succ, width - 3))}[/]")
        if len(index) > shown_index:
            lines.append(f"[dim] +{len(index) - shown_index} more (r)[/]")
    shown = 0
    for entry in view.left_out:  # the closest candidates that got no line, and why
        name, _, why = entry.partition(": ")
        if "line threshold" not in why or shown == 2:
            continue
        p, _, line_at = why.removeprefix("p ").partition(" < ")
        score = f"{p.removeprefix('0')}<{line_at.split()[0].removeprefix('0')}"  # .02<.40
        room = max(width - 3 - len(score), 4)
        lines.append(f"[dim]✗{escape(fmt.short(name, room)):<{room}} {score}[/]")
        shown += 1
    if view.misses:
        lines.append(f"[$warning]misses {len(view.misses)}[/] [dim]{escape(fmt.short(view.misses[-1], width - 10))}[/]")
    lines += ["", "[b]changes[/b]", changes_markup(view)]
    u = view.usage
    lines += [
        "",
        "[b]tokens[/b]",
        f"in      {fmt.tokens(u.input):>7}",
        f"out     {fmt.tokens(u.output):>7}",
        f"cache r {fmt.tokens(u.cache_read):>7}",
        f"cache w {fmt.tokens(u.cache_write):>7}",
        f"cost    {fmt.usd(view.cost_usd):>7}",
        f"[dim]{escape(fmt.short(cost_note(view), width))}[/]",
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
    line = f"ctx {fmt.bar(view.context_tokens, view.context_window, 8)} {ctx}"
    if view.context_level == "full":
        lines += [f"[b $error]{line}[/]", "[$error]full:[/] [b]c[/] continues"]
    elif view.context_high:
        lines.append(f"[b $warning]{line}[/]")
    else:
        lines.append(line)
    return "\n".join(lines)


def changes_markup(view: SessionView) -> str:
    """One line: ``3 files +12 -4`` (its worktree against the base commit), or the review's
    result, or why there is no diff."""
    r = view.reviewed
    if r is not None and r.ok:
        return {"merge": "[$success]merged[/]", "keep": "[$secondary]branch kept[/]",
                "discard": "[dim]discarded[/]"}.get(r.action, r.action)
    if view.worktree is None:
        return "[dim]in place[/]" if view.placement else "[dim]…[/]"
    c = view.changes
    if c is None or not c.files:
        return "[dim]none[/]" if view.status.is_final else "[dim]none yet[/]"
    files = f"{c.files} file{'s' if c.files != 1 else ''}"
    radar = ""
    if view.overlap:  # another live session changed the same file(s)
        others = sorted({o for sids in view.overlap.values() for o in sids})
        radar = f" [b $warning]⚠ {len(view.overlap)} also in {', '.join(others)}[/]"
    return f"{files} [$success]+{c.added}[/] [$error]-{c.removed}[/]{radar}"


def cost_note(view: SessionView) -> str:
    """Whose cost figure the strip shows, or why there is none (fits the strip's 22 columns)."""
    source = view.cost_source
    if source.startswith("acp:"):
        return "reported by the agent" if view.cost_usd is not None else "n/a: none reported"
    if source == "claude-code":
        return "by Claude Code"
    return "our price table" if view.cost_usd is not None else "n/a: model not priced"


def strip_content(view: SessionView, width: int = 22) -> Content:
    return Content.from_markup(strip_markup(view, width))
