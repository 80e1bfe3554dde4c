"""Plain-text formatting for the TUI (no Textual import): token counts, USD, status glyphs.

Units: token counts are integers of tokens, shown compactly (``1.2k``, ``3.4M``); money is
US dollars (``$0.0123``), or ``n/a`` when the model has no price.
"""

from __future__ import annotations

import json
import re
from typing import Any

from cockpit import textsafe
from cockpit.events import SessionStatus
from cockpit.runtime.history import outcome_part

STATUS_GLYPH: dict[SessionStatus, str] = {
    SessionStatus.QUEUED: "…",
    SessionStatus.STARTING: "○",
    SessionStatus.PRESEEDING: "◔",
    SessionStatus.STREAMING: "●",
    SessionStatus.RUNNING_TOOL: "⚙",
    SessionStatus.NEEDS_APPROVAL: "!",
    SessionStatus.WAITING: "?",
    SessionStatus.BUDGET_REACHED: "$",
    SessionStatus.DONE: "✓",
    SessionStatus.ERROR: "✗",
    SessionStatus.KILLED: "■",
    SessionStatus.INTERRUPTED: "↯",
}

# a state in one short word, for a header with little room ("? 2 waiting" rather than "? 2")
STATUS_SHORT: dict[SessionStatus, str] = {
    SessionStatus.RUNNING_TOOL: "running",
    SessionStatus.NEEDS_APPROVAL: "asking",
    SessionStatus.WAITING: "waiting",
    SessionStatus.BUDGET_REACHED: "at cap",
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


def note_figure(probability: float | None, cosine: float | None, priority: bool = False,
                compact: bool = False) -> str:
    """The one figure shown beside a note given to a session, labelled: the judge's probability
    that it matters (``p 0.87``), else ``rule`` for a priority note given by rule, else its cosine
    with the task (``cos 0.73``). ``compact`` (the pane's strip): four characters (``p.87``)."""
    if probability is not None:
        v = max(0.0, min(float(probability), 1.0))
        return ("p1.0" if v >= 0.995 else "p" + f"{v:.2f}"[1:]) if compact else f"p {v:.2f}"
    if priority:
        return "rule"
    if cosine is None:
        return "–"
    v = max(0.0, min(float(cosine), 1.0))
    return ("c1.0" if v >= 0.995 else "c" + f"{v:.2f}"[1:]) if compact else f"cos {v:.2f}"


def score(x: float | None) -> str:
    """A relevance score (cosine, 0–1) with two decimals; below 0 shows as 0.00 (a negative
    cosine means "unrelated", not a figure to read)."""
    if x is None:
        return "–"
    return f"{max(0.0, float(x)):.2f}"


def where(placement: str, branch: str | None) -> str:
    """Where a session works, one line: ``⎇ cockpit/…`` (its worktree's branch) or the
    runtime's ``in place: …`` reason ("" when not known yet)."""
    if branch:
        return f"⎇ {branch}"
    return placement


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
    """One line of at most ``limit`` characters, with ``…`` when cut (no escape sequence or
    control character reaches a label)."""
    return textsafe.short(text, limit)


def tool_args(value: Any, limit: int = 60) -> str:
    """A tool call's input as one compact line: ``path=README.md, query="x"``."""
    if isinstance(value, dict):
        parts = []
        for key, val in value.items():
            text = val if isinstance(val, str) else json.dumps(val, ensure_ascii=False)
            parts.append(f"{key}={short(text, 40)}")
        return short(", ".join(parts), limit)
    return short(json.dumps(value, ensure_ascii=False, default=str), limit)


EDITOR_TOOL = "str_replace_based_edit_tool"


def tool_label(name: str, value: Any, limit: int = 60) -> tuple[str, str]:
    """(label, arguments) for a tool call: Anthropic's tools read as what they do —
    ``("$", "pytest -q")`` for bash, ``("✎ str_replace", "calc.py")`` for the text editor —
    other tools as ``("⚙ name", "(key=value, …)")``."""
    if isinstance(value, dict):
        command = value.get("command")
        # bash, and an ACP agent's terminal call (titled with its command, as Claude Code's adapter does)
        if name == "bash" or (isinstance(command, str) and command and name.strip("`").strip() == command.strip()):
            if value.get("restart"):
                return "$", "(restart the shell)"
            return "$", short(str(command or ""), limit)
        if name == EDITOR_TOOL and "command" in value:
            return f"✎ {value.get('command')}", short(str(value.get("path", "")), limit)
    return f"⚙ {name}", f"({tool_args(value, limit)})"


_BLOCKED_NOTE = re.compile(r"\n\[the sandbox blocked ([^\]\n]{1,200})\]")


def sandbox_blocked(content: str) -> str:
    """What the sandbox stopped in a command, from the note the session adds to its result (the
    model reads it): ``"network access (off for this session)"``; "" when nothing was stopped."""
    found = _BLOCKED_NOTE.findall(content or "")
    return found[-1] if found else ""


def ran_outside(content: str) -> bool:
    """Whether a tool result is a command the user allowed to run again outside the sandbox."""
    return outcome_part(content)[1]


def tool_result(content: str, is_error: bool, limit: int = 60) -> str:
    """A tool result as one compact line: its first non-blank line and how many more lines. A
    command re-run outside the sandbox shows the re-run's output (the failed sandboxed run stays
    in the full result); :func:`ran_outside` tells the caller to say so."""
    content = outcome_part(content)[0]
    lines = content.splitlines() or [""]
    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    head = short(lines[first], limit)
    lines = lines[first:]
    prefix = "error: " if is_error else ""
    more = f" (+{len(lines) - 1} line{'s' if len(lines) > 2 else ''})" if len(lines) > 1 else ""
    return f"{prefix}{head}{more}"
