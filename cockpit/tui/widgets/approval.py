"""What a pane shows while its session waits for an approval: the ask, its detail highlighted
(the command as bash, an edit as a numbered diff in the file's language, a note as Markdown),
and a hint line with the keys that answer it.

The full detail, scrollable, with "deny with a reason", is the approval dialog
(``screens.approval``).
"""

from __future__ import annotations

import textwrap

from textual.content import Content

from cockpit.events import ApprovalRequested
from cockpit.tui import format as fmt
from cockpit.tui.diffrender import highlight_detail, patch_path


def detail_lines(ask: ApprovalRequested, headers: bool = True) -> list[Content]:
    """The ask's detail as highlighted lines (see ``diffrender.highlight_detail``);
    ``headers=False`` drops a diff's ``---``/``+++`` lines (the title names the file)."""
    path = patch_path(ask.detail) if ask.kind in ("edit", "create") else None
    lines = highlight_detail(ask.kind, ask.detail or ask.summary, path)
    if not headers and path is not None:
        lines = [line for line in lines if not line.plain.lstrip().startswith(("--- ", "+++ "))]
    return lines


def ask_title(ask: ApprovalRequested) -> Content:
    what = {"bash": "run a command", "edit": "edit a file", "create": "create a file",
            "memory_save": "save a note"}.get(ask.kind, ask.kind)
    return Content.from_markup("[b]! approval needed[/b] · $what: [b]$summary[/b]",
                               what=what, summary=fmt.short(ask.summary, 200))


def _rows(line: Content, width: int) -> int:
    """Rows ``line`` takes when wrapped at words within ``width`` cells, as the panel wraps it."""
    return max(1, len(textwrap.wrap(line.plain, max(1, width), break_on_hyphens=False)))


TITLE_ROWS = 2  # a small panel's title at most: the command is in the detail below it


def panel_content(ask: ApprovalRequested, max_lines: int, keys: dict[str, str],
                  width: int | None = None, rows: int | None = None) -> Content:
    """Title, up to ``max_lines`` lines of the detail, and the hint line. ``keys``: action name →
    key shown (``approve_once``, ``approve_session``, ``approve``). ``width``/``rows``: the panel's
    room (a small pane): the hint line is never the part cut — it is shortened to fit the width,
    the title is cut to leave it its rows, and the detail gets what is left."""
    detail = (ask.detail or ask.summary).strip()
    if detail == ask.summary.strip() and fmt.short(ask.summary, 200) == ask.summary:
        lines = []  # the title holds it whole (a one-line command): not twice
    else:
        lines = detail_lines(ask, headers=False)
    once, session, dialog = (keys.get(a, "?") for a in ("approve_once", "approve_session", "approve"))
    # a command no rule can name (inline code, a run outside the sandbox): "for the session" adds none
    rule = f" ({ask.suggestion})" if ask.suggestion else " (no rule can name it: it asks again)" \
        if ask.kind == "bash" else ""
    hint = Content.from_markup(
        "[b $accent]$once[/] allow once · [b $accent]$session[/] allow for this session$rule · "
        "[b $accent]$dialog[/] details, or deny with a reason",
        once=once, session=session, rule=rule, dialog=dialog,
    )
    title = ask_title(ask)
    if width is not None and rows is not None:
        # the full hint wrapped while it leaves room for the title and a line of detail; else a
        # short one, with the rule the session key allows while that fits on one line
        if rows < _rows(hint, width) + 3:
            for short_rule in (rule, ""):
                hint = Content.from_markup("[b $accent]$once[/] once · [b $accent]$session[/] session$rule · "
                                           "[b $accent]$dialog[/] details/deny", once=once, session=session,
                                           rule=short_rule, dialog=dialog)
                if hint.cell_length <= width:
                    break
        left = rows - _rows(hint, width)
        if left < 1:  # no room beside the keys: they alone (the pane's status line says it asks)
            return hint
        room = min(left, TITLE_ROWS)
        if _rows(title, width) > room:
            cut = room * width
            while cut > 1 and _rows(title[:cut] + "…", width) > room:
                cut -= max(1, width // 8)
            title = title[: max(1, cut)] + "…"
        left -= _rows(title, width)
        shown: list[Content] = []
        for k, line in enumerate(lines[: max(0, max_lines)]):
            need = _rows(line, width) + (1 if k < len(lines) - 1 else 0)  # and the "more" line after it
            if need > left:
                break
            shown.append(line)
            left -= _rows(line, width)
    else:
        shown = lines[: max(1, max_lines)]
    parts = [title, *shown]
    more = len(lines) - len(shown)
    if more > 0 and (rows is None or width is None or left >= 1):
        parts.append(Content.from_markup("[dim]… $n more line$s ($key shows all)[/]",
                                         n=more, s="s" if more != 1 else "", key=dialog))
    parts.append(hint)
    return Content("\n").join(parts)
