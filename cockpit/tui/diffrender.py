"""Unified diffs as highlighted lines, with Textual's own highlighter (``textual.highlight``).

:func:`parse_patch` splits a unified diff (``git diff`` or ``difflib``) into :class:`DiffLine`s
with old/new line numbers; :func:`render_diff` turns them into one ``Content`` per line: a
gutter (old and new line numbers), the sign, and the code highlighted for the file's language
(guessed from its path by Pygments, as ``textual.highlight`` does). Each hunk is highlighted as
one piece of code, so a string or comment spanning lines stays coloured; added lines get a green
tint, removed ones a red tint (theme colours ``$success`` / ``$error``). Shell commands (an
approval for ``bash``) go through :func:`highlight_command`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pygments.token import Token
from textual.content import Content
from textual.highlight import HighlightTheme, highlight

from cockpit.textsafe import clean

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
MAX_HIGHLIGHT_CHARS = 200_000  # a bigger hunk is shown plain (Pygments on megabytes blocks)


class CockpitHighlightTheme(HighlightTheme):
    """Textual's highlight theme plus diff tokens (for text highlighted as ``diff``)."""

    STYLES = {
        **HighlightTheme.STYLES,
        Token.Generic.Inserted: "$text-success",
        Token.Generic.Deleted: "$text-error",
        Token.Generic.Heading: "bold",
        Token.Generic.Subheading: "$text-primary",
    }


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff. ``kind``: meta (``diff --git``, ``---``, ``+++``, mode lines),
    hunk (``@@ … @@``), add, del, ctx (context) or note (``\\ No newline at end of file``).
    ``old``/``new``: line numbers in the old/new file (None where the line has none); ``text``
    the line without its sign."""

    kind: str
    text: str
    old: int | None = None
    new: int | None = None

    @property
    def sign(self) -> str:
        return {"add": "+", "del": "-", "ctx": " "}.get(self.kind, "")


def parse_patch(patch: str) -> list[DiffLine]:
    """The lines of a unified diff, numbered. Lines before the first hunk are ``meta``."""
    out: list[DiffLine] = []
    old = new = 0
    in_hunk = False
    for raw in clean(patch).splitlines():  # a file's escape sequences are shown, not obeyed
        m = _HUNK.match(raw)
        if m:
            old, new = int(m.group(1)), int(m.group(2))
            in_hunk = True
            out.append(DiffLine("hunk", raw))
        elif not in_hunk:
            out.append(DiffLine("meta", raw))
        elif raw.startswith("+"):
            out.append(DiffLine("add", raw[1:], None, new))
            new += 1
        elif raw.startswith("-"):
            out.append(DiffLine("del", raw[1:], old, None))
            old += 1
        elif raw.startswith("\\"):
            out.append(DiffLine("note", raw))
        elif raw.startswith("diff --git"):
            in_hunk = False
            out.append(DiffLine("meta", raw))
        else:
            out.append(DiffLine("ctx", raw[1:] if raw.startswith(" ") else raw, old, new))
            old += 1
            new += 1
    return out


def _code_lines(texts: list[str], path: str | None, language: str | None) -> list[Content]:
    code = "\n".join(texts)
    if not texts:
        return []
    if len(code) > MAX_HIGHLIGHT_CHARS:
        return [Content(t) for t in texts]
    lines = highlight(code, path=path, language=language, theme=CockpitHighlightTheme).split("\n")
    lines = list(lines[: len(texts)])
    while len(lines) < len(texts):
        lines.append(Content(""))
    return lines


def gutter_width(lines: list[DiffLine]) -> int:
    """Digits of the widest line number in ``lines`` (at least 3)."""
    top = max([n for line in lines for n in (line.old, line.new) if n is not None] or [0])
    return max(3, len(str(top)))


def render_diff(lines: list[DiffLine], path: str | None = None, *, language: str | None = None,
                numbers: bool = True) -> list[Content]:
    """One ``Content`` per diff line: gutter (old, new line numbers), sign, highlighted code.
    Added and removed lines are padded to the widest line, so their tint reads as a band."""
    out = _render(lines, path, language, numbers)
    widest = max([c.cell_length for c in out] or [0])
    return [_tinted(c.extend_right(widest - c.cell_length), line.kind) if line.kind in _TINT else c
            for line, c in zip(lines, out, strict=True)]


def _tinted(content: Content, kind: str) -> Content:
    return content.stylize_before(_TINT[kind])


def _render(lines: list[DiffLine], path: str | None, language: str | None, numbers: bool) -> list[Content]:
    width = gutter_width(lines)
    out: list[Content] = []
    i = 0
    while i < len(lines):
        if lines[i].kind in ("add", "del", "ctx"):
            j = i
            while j < len(lines) and lines[j].kind in ("add", "del", "ctx"):
                j += 1
            codes = _code_lines([ln.text for ln in lines[i:j]], path, language)
            for line, code in zip(lines[i:j], codes, strict=True):
                out.append(_body_line(line, code, width, numbers))
            i = j
            continue
        line = lines[i]
        if line.kind == "hunk":
            style = "$text-primary"
        elif line.kind == "note":
            style = "dim italic"
        else:
            style = "dim"
        pad = " " * (2 * width + 3) if numbers else ""
        out.append(Content.styled(pad + line.text, style))
        i += 1
    return out


_TINT = {"add": "on $success 15%", "del": "on $error 15%"}
_SIGN_STYLE = {"add": "bold $text-success", "del": "bold $text-error", "ctx": "dim"}


def _body_line(line: DiffLine, code: Content, width: int, numbers: bool) -> Content:
    parts: list[Content | tuple[str, str] | str] = []
    if numbers:
        old = "" if line.old is None else str(line.old)
        new = "" if line.new is None else str(line.new)
        parts.append((f"{old:>{width}} {new:>{width}} ", "dim"))
    parts.append((line.sign + " ", _SIGN_STYLE[line.kind]))
    return Content.assemble(*parts, code.expand_tabs(4))


def highlight_command(command: str) -> Content:
    """A shell command, highlighted as bash."""
    return highlight(command, language="bash", theme=CockpitHighlightTheme)


def highlight_detail(kind: str, detail: str, path: str | None = None) -> list[Content]:
    """An approval's ``detail`` as lines: a command (bash), an edit's unified diff (numbered,
    highlighted for ``path``'s language), or plain text (``memory_save``: the note)."""
    if kind == "bash":
        return list(highlight_command(detail).split("\n"))
    if kind in ("edit", "create") and ("@@" in detail or detail.startswith("---")):
        return render_diff(parse_patch(detail), path)
    return list(highlight(detail, language="markdown", theme=CockpitHighlightTheme).split("\n"))


def patch_path(detail: str) -> str | None:
    """The file a unified diff is about (its ``+++ b/…`` line), or None."""
    for raw in detail.splitlines()[:4]:
        if raw.startswith("+++ "):
            name = raw[4:].strip()
            return name[2:] if name.startswith("b/") else name
    return None
