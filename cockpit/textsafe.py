"""Text from outside (model output, tool output, note names and descriptions, task text, file
names) made safe to show on a terminal.

Such text may hold terminal escape sequences (``ESC [ 31 m``, an OSC title or hyperlink
``ESC ] 0 ; … BEL``, a device query) and control characters that a terminal obeys rather than
shows: recolouring, moving the cursor, retitling the window, even answering back on stdin.
Nothing of that reaches the terminal from Cockpit's TUI labels or CLI output:

- :func:`clean` removes escape sequences, C0/C1 control characters other than newline and tab,
  and the Unicode bidirectional overrides (text that reads differently from what it is);
- :func:`one_line` also folds every run of whitespace (newlines included) into one space, for
  labels that must stay one line;
- :func:`flat` folds only line breaks (a peer's error message: its spaces are kept, they may
  be what the message is about);
- :func:`clean_tree` / :func:`clean_event` apply :func:`clean` to every string inside a JSON-like
  value or an event.

Transcripts and what the model is sent keep the exact text; only what is shown is cleaned.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, TypeVar

# ESC followed by: a CSI sequence, an OSC/DCS/SOS/PM/APC string (ended by BEL or ST, or by the end
# of the text), or any single character (two-character escapes); a lone trailing ESC too.
_ESCAPES = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x20-\x7e])?"
    r"|\x9b[0-?]*[ -/]*[@-~]?|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c]*[\x07\x9c]?"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_SPACE = re.compile(r"[\s\u2028\u2029]+")
_BREAKS = re.compile(r"\s*[\n\r\v\f\u2028\u2029]\s*")

T = TypeVar("T")


def clean(text: Any) -> str:
    """``text`` (made a string) without escape sequences or control characters; newlines and
    tabs are kept, a carriage return is dropped."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable() and "\x1b" not in s:
        return s
    return _CONTROLS.sub("", _ESCAPES.sub("", s))


def one_line(text: Any) -> str:
    """:func:`clean` text on one line: every run of whitespace is one space, ends trimmed."""
    return _SPACE.sub(" ", clean(text)).strip()


def short(text: Any, limit: int) -> str:
    """:func:`one_line` text of at most ``limit`` characters, ending in ``…`` when cut."""
    line = one_line(text)
    return line if len(line) <= limit else line[: max(limit - 1, 0)] + "…"


def flat(text: Any) -> str:
    """:func:`clean` text on one line: each line break, with the blanks around it, is one space;
    other spaces are kept; ends trimmed."""
    return _BREAKS.sub(" ", clean(text)).strip()


def clean_tree(value: T) -> T:
    """``value`` with :func:`clean` applied to every string in it (dicts, lists, tuples)."""
    if isinstance(value, str):
        return clean(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {k: clean_tree(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, (list, tuple)):
        return type(value)(clean_tree(v) for v in value)
    return value


def clean_event(event: T) -> T:
    """A copy of a (frozen) event dataclass with every string field, and every string inside its
    dict/list fields, cleaned; the same object when nothing needed it."""
    if not dataclasses.is_dataclass(event) or isinstance(event, type):
        return event
    changes = {}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if isinstance(value, (str, dict, list, tuple)):
            cleaned = clean_tree(value)
            if cleaned != value:
                changes[f.name] = cleaned
    return dataclasses.replace(event, **changes) if changes else event


__all__ = ["clean", "one_line", "clean_tree", "clean_event"]
