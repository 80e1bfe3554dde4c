"""Plain-text formatting for the TUI (no Textual import): token counts, USD, status glyphs.

Units: token counts are integers of tokens, shown compactly (``1.2k``, ``3.4M``); money is
US dollars (``$0.0123``), or ``n/a`` when the model has no price.
"""

from __future__ import annotations

import json
from typing import Any

from cockpit.events import SessionStatus

STATUS_GLYPH: dict[SessionStatus, str] = {
    SessionStatus.QUEUED: "…",
    SessionStatus.STARTING: "○",
    SessionStatus.PRESEEDING: "◔",
    SessionStatus.STREAMING: "●",
    SessionStatus.RUNNING_TOOL: "⚙",
    SessionStatus.NEEDS_APPROVAL: "!",
    SessionStatus.WAITING: "?",
    SessionStatus.DONE: "✓",
    SessionStatus.ERROR: "✗",
    SessionStatus.KILLED: "■",
    SessionStatus.INTERRUPTED: "↯",
}


def status_class(status: SessionStatus) -> str:
    """CSS class for a status, e.g. ``status-running-tool`` (theme variable ``$status-…``)."""
    return "status-" + status.name.lower().replace("_", "-")


def tokens(n: int | None) -> str:
    """A token count, compact: 950 → ``950``, 12_345 → ``12.3k``, 2_500_000 → ``2.5M``."""
    if n is None:
        return "–"
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def usd(x: float | None) -> str:
    """A cost in US dollars: ``$0.0123`` below $1, ``$12.34`` above; ``n/a`` when unknown."""
    if x is None:
        return "n/a"
    if x < 1:
        return f"${x:.4f}"
    return f"${x:,.2f}"


def percent(part: int, whole: int | None) -> str:
    """``part`` as a percentage of ``whole`` (e.g. context-window use); ``–`` when unknown."""
    if not whole:
        return "–"
    return f"{100 * part / whole:.0f}%"


def bar(part: int, whole: int | None, width: int = 10) -> str:
    """A text gauge such as ``███░░░░░░░`` for ``part`` of ``whole``."""
    if not whole or width <= 0:
        return "░" * max(width, 0)
    filled = max(0, min(width, round(width * part / whole)))
    return "█" * filled + "░" * (width - filled)


def short(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, with ``…`` when cut."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: max(limit - 1, 0)] + "…"


def tool_args(value: Any, limit: int = 60) -> str:
    """A tool call's input as one compact line: ``path=README.md, query="x"``."""
    if isinstance(value, dict):
        parts = []
        for key, val in value.items():
            text = val if isinstance(val, str) else json.dumps(val, ensure_ascii=False)
            parts.append(f"{key}={short(text, 40)}")
        return short(", ".join(parts), limit)
    return short(json.dumps(value, ensure_ascii=False, default=str), limit)


def tool_result(content: str, is_error: bool, limit: int = 60) -> str:
    """A tool result as one compact line: its line count and first line."""
    lines = content.splitlines() or [""]
    head = short(lines[0], limit)
    prefix = "error: " if is_error else ""
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return f"{prefix}{head}{more}"
