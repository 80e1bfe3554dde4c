"""What a pane shows while its session waits for an approval: the ask, its detail highlighted
(the command as bash, an edit as a numbered diff in the file's language, a note as Markdown),
and a hint line with the keys that answer it.

The full detail, scrollable, with "deny with a reason", is the approval dialog
(``screens.approval``).
"""

from __future__ import annotations

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


def panel_content(ask: ApprovalRequested, max_lines: int, keys: dict[str, str]) -> Content:
    """Title, up to ``max_lines`` lines of the detail, and the hint line. ``keys``: action name →
    key shown (``approve_once``, ``approve_session``, ``approve``)."""
    detail = (ask.detail or ask.summary).strip()
    if detail == ask.summary.strip() and fmt.short(ask.summary, 200) == ask.summary:
        lines = []  # the title holds it whole (a one-line command): not twice
    else:
        lines = detail_lines(ask, headers=False)
    shown = lines[: max(1, max_lines)]
    parts = [ask_title(ask), *shown]
    more = len(lines) - len(shown)
    once, session, dialog = (keys.get(a, "?") for a in ("approve_once", "approve_session", "approve"))
    if more > 0:
        parts.append(Content.from_markup("[dim]… $n more line$s ($key shows all)[/]",
                                         n=more, s="s" if more != 1 else "", key=dialog))
    rule = f" ({ask.suggestion})" if ask.suggestion else ""
    parts.append(Content.from_markup(
        "[b $accent]$once[/] allow once · [b $accent]$session[/] allow for this session$rule · "
        "[b $accent]$dialog[/] details, or deny with a reason",
        once=once, session=session, rule=rule, dialog=dialog,
    ))
    return Content("\n").join(parts)
