"""The first message of a session that continues another (its context was full).

Built from what the old session recorded (its transcript folded: :mod:`cockpit.runtime.history`),
without a model call (the old context no longer fits
one): the task, the notes it was given, what it did (its tool calls, newest last, capped), what
it last said, and where its work stands (same worktree and branch). Bounded to about
:data:`MAX_CHARS` characters.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from cockpit.runtime import prompts

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.history import SessionHistory
    from cockpit.runtime.session_base import SessionSpec

MAX_CHARS = 12_000
MAX_CALLS = 40


def _call_line(block: dict[str, Any]) -> str:
    name = block.get("name", "?")
    given = block.get("input")
    data: dict[str, Any] = given if isinstance(given, dict) else {}
    if name == "bash":
        what = str(data.get("command", "restart"))
    elif name == "str_replace_based_edit_tool":
        what = f"{data.get('command', '?')} {data.get('path', '')}"
    else:
        what = json.dumps(data, ensure_ascii=False)
    what = " ".join(what.split())
    return f"- {name}: {what[:160]}"


def continuation_message(old: SessionHistory, spec: SessionSpec) -> list[dict]:
    """Content blocks for the new session's first user message."""
    calls: list[str] = []
    said: list[str] = []
    for m in old.messages:
        for b in m.get("content", []):
            if not isinstance(b, dict):
                continue
            if m["role"] == "assistant" and b.get("type") == "tool_use":
                calls.append(_call_line(b))
            elif m["role"] == "assistant" and b.get("type") == "text" and b.get("text", "").strip():
                said.append(b["text"].strip())
    follow_ups = [
        b.get("text", "") for m in old.messages[1:] if m["role"] == "user"
        for b in m.get("content", []) if isinstance(b, dict) and b.get("type") == "text"
    ]
    parts = [
        f"You are continuing session {old.session_id}, whose context window filled up. Its task was:",
        old.task,
    ]
    if follow_ups:
        parts.append("The user's follow-ups in it:\n" + "\n".join(f"- {t[:300]}" for t in follow_ups[-5:]))
    if calls:
        shown = calls[-MAX_CALLS:]
        skipped = len(calls) - len(shown)
        parts.append("What it did (tool calls, oldest first" + (f"; {skipped} earlier ones left out" if skipped else "")
                     + "):\n" + "\n".join(shown))
    if said:
        parts.append("What it said last:\n" + said[-1][-3000:])
    parts.append("Its changes are in your working tree (same worktree and branch). Check the current state "
                 "(e.g. git status / git diff) before going on, then finish the task.")
    text = "\n\n".join(parts)
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + "\n[summary cut]"
    blocks = [{"type": "text", "text": prompts.env_block(spec)}]
    if old.preseed_text:
        blocks.append({"type": "text", "text": old.preseed_text})
    blocks.append({"type": "text", "text": text})
    return blocks
