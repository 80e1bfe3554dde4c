"""Where a growing Markdown answer may be cut so its finished part never re-renders.

``PaneBody`` renders an answer as frozen chunks plus a live tail; once the tail is longer than
``CHUNK`` characters it is cut after the last blank line that is outside a code fence, so each
chunk is complete Markdown on its own (paragraphs, lists, whole fenced blocks).
"""

from __future__ import annotations

CHUNK = 1200  # characters in the live tail before finished paragraphs are frozen


def split_point(text: str) -> int | None:
    """Offset just after the last blank line outside a code fence (``None`` if there is none)."""
    best = None
    fence = False
    offset = 0
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fence = not fence
        offset += len(line)
        if not fence and not stripped and i + 1 < len(lines) and offset < len(text):
            best = offset
    return best
