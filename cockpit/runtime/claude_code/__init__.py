"""The ``claude-code`` session backend: Claude Code, driven through the official ``claude-agent-sdk``.

Optional: ``pip install 'cockpit[claude-code]'`` (the SDK's wheel bundles the ``claude`` CLI; no
npm). Importing this package never imports the SDK; :func:`session_class` does, and raises
:class:`BackendUnavailable` (one line saying how to install it) when it is missing.

How a Cockpit session maps onto Claude Code (details in :mod:`.session`, :mod:`.options`):

- **Where.** ``cwd`` = the session's worktree (or the workspace when it runs in place); Claude
  Code's own tools (``Read``, ``Edit``, ``Write``, ``Bash``…). A ``PreToolUse`` hook refuses any
  file edit whose path resolves outside the working tree, in every permission mode.
- **Preseed.** The same first user message as Cockpit's loop — ``<env>`` block, the engine's
  preseed block, the task — sent as the first prompt; the transcript header records the notes,
  scores and block tokens. ``--no-preseed``: no block, and the system prompt (Claude Code's own,
  with :func:`cockpit.runtime.prompts.claude_code_append` appended) tells the model to call
  ``mcp__cockpit__memory_search`` first.
- **Memory.** ``memory_search`` / ``memory_save`` are an in-process SDK MCP server named
  ``cockpit`` calling the session's (warm, shared) engine: no second model load.
- **Permissions.** Permission modes pass one to one; the config's ``allow``/``deny`` rules go to
  Claude Code's ``permissions`` settings (``memory_save`` → ``mcp__cockpit__memory_save``);
  ``memory_search`` is always allowed, ``memory_save`` follows edits (asks in ``default``, allowed
  in ``acceptEdits``/``bypassPermissions``, refused in ``plan``). When Claude Code would ask, its
  ``can_use_tool`` callback publishes the same ``ApprovalRequested`` as Cockpit's loop and waits
  for ``SessionManager.answer`` (headless: denied with the reason).
- **States** from the message stream and hooks: ``status: requesting`` → ``streaming``,
  ``PreToolUse`` → ``running tool``, an ask → ``needs approval``, the ``result`` → ``waiting for
  you`` / ``done`` / ``error``.
- **Usage and cost.** Live figures from the stream's ``message_start``/``message_delta``; each
  turn's ``result`` gives its usage (into the totals) and Claude Code's cumulative
  ``total_cost_usd`` (the difference is the turn's cost), published as ``UsageUpdate`` with
  ``cost_source="claude-code"``.
- **Transcript and resume.** Our JSONL transcript (messages, tool calls and results, usage,
  errors) with a ``claude_code`` record holding Claude Code's session id;
  ``SessionManager.resume`` takes the transcript or that id and resumes the Claude Code session.
- **The API key** is not put in Claude Code's environment (which its Bash tool inherits): it is
  handed over through Claude Code's ``apiKeyHelper`` setting, a command that prints it from a
  0600 file in a private 0700 folder, deleted when the session ends (see :mod:`.options`).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.history import SessionHistory

INSTALL_HINT = ("the claude-code backend needs the optional claude-agent-sdk package: "
                "pip install 'cockpit[claude-code]' (from a checkout: pip install -e '.[claude-code]')")


class BackendUnavailable(ValueError):
    """The claude-code backend was chosen but ``claude-agent-sdk`` is not installed."""


def available() -> bool:
    """True when ``claude-agent-sdk`` is importable (checked without importing it)."""
    try:
        return importlib.util.find_spec("claude_agent_sdk") is not None
    except (ImportError, ValueError):
        return False


def session_class() -> Any:
    """:class:`~cockpit.runtime.claude_code.session.ClaudeCodeSession` (imports the SDK).
    Raises :class:`BackendUnavailable` when it is missing or broken."""
    if not available():
        raise BackendUnavailable(INSTALL_HINT)
    try:
        from cockpit.runtime.claude_code.session import ClaudeCodeSession
    except ImportError as exc:
        raise BackendUnavailable(f"{INSTALL_HINT} ({exc})") from None
    return ClaudeCodeSession


def claude_session_id(history: SessionHistory) -> str | None:
    """The Claude Code session id a transcript recorded (its last ``claude_code`` record), or None."""
    found = history.backend_records.get("claude_code", {}).get("session_id")
    return str(found) if found else None


def resume_info(history: SessionHistory | None) -> dict[str, Any]:
    """What a resumed session needs from its predecessor's folded transcript: ``claude_session_id``
    and ``claude_total_cost_usd`` (Claude Code's cumulative cost so far, USD; the baseline from
    which the new session counts its own)."""
    if history is None:
        return {"claude_session_id": None, "claude_total_cost_usd": 0.0}
    total = history.agent_total_usd or 0.0
    ended = history.ended.extra.get("claude_total_cost_usd") if history.ended is not None else None
    if isinstance(ended, (int, float)):
        total = float(ended)
    return {"claude_session_id": claude_session_id(history), "claude_total_cost_usd": float(total)}


def looks_like_session_id(text: str) -> bool:
    """True for a Claude Code session id (a UUID)."""
    return bool(re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", text))


def find_transcript(sessions_dir: Path, session_id: str) -> Path | None:
    """The newest transcript in ``sessions_dir`` that recorded Claude Code session ``session_id``
    (one its folded events name: :attr:`SessionHistory.agent_session_ids`)."""
    from cockpit.runtime.history import fold
    from cockpit.runtime.transcript import read_events

    if not sessions_dir.is_dir():
        return None
    for path in sorted(sessions_dir.glob("*.jsonl"), reverse=True):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                if not any(session_id in line for line in fh):  # most transcripts: not read further
                    continue
            if session_id in fold(read_events(path, [])).agent_session_ids:
                return path
        except (OSError, ValueError):
            continue
    return None


__all__ = ["INSTALL_HINT", "BackendUnavailable", "available", "session_class", "claude_session_id",
           "resume_info", "looks_like_session_id", "find_transcript"]
