"""Claude Code's tool calls as Cockpit shows and judges them: approval text and confinement.

- :func:`describe`: what an ``ApprovalRequested`` says about a call — ``kind`` (``bash``,
  ``edit``, ``create``, ``memory_save``, or ``tool`` for any other tool), a one-line ``summary``,
  and ``detail``: the command, the edit's unified diff against the file as it is now, the note a
  ``memory_save`` would write, the plan ``ExitPlanMode`` asks to carry out, or the input as JSON.
- :func:`refused_path`: the reason a file-writing call (``Write``, ``Edit``, ``MultiEdit``,
  ``NotebookEdit``) leaves the working tree — the same rule as Cockpit's editor
  (:class:`~cockpit.runtime.workspace.Workspace`): ``..``, ``~``, absolute paths outside, symlinks
  resolving outside, ``.git``. Used by a ``PreToolUse`` hook in every permission mode.
- :func:`rule_text`: a Claude Code permission suggestion as the rule text a pane shows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.runtime.editor import MAX_FILE_BYTES, edit_diff
from cockpit.runtime.permissions import Action, Rule, session_rule_for
from cockpit.runtime.workspace import PathRefused, Workspace, regular_file

from .memory_server import SAVE_TOOL

WRITE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
DETAIL_CHARS = 20_000


@dataclass(frozen=True)
class Described:
    kind: str
    summary: str
    detail: str
    rule: str  # the rule "allow for this session" stands for when Claude Code suggests none


def refused_path(tool: str, data: dict, cwd: Path) -> str | None:
    """Why ``tool`` may not write where ``data`` says (None: inside the working tree, or not a
    file-writing tool)."""
    key = WRITE_TOOLS.get(tool)
    if key is None:
        return None
    given = data.get(key)
    if not isinstance(given, str) or not given.strip():
        return None  # Claude Code rejects the input itself
    try:
        Workspace(cwd).resolve(given, for_write=True)
    except PathRefused as exc:
        return f"{exc} (Cockpit confines every session's edits to its working tree)"
    return None


def _read(path: Path) -> str | None:
    try:
        regular_file(path, MAX_FILE_BYTES)
        return path.read_text(encoding="utf-8")
    except (OSError, ValueError, PathRefused):
        return None


def _cap(text: str) -> str:
    if len(text) <= DETAIL_CHARS:
        return text
    return text[:DETAIL_CHARS] + f"\n… ({len(text) - DETAIL_CHARS:,} more characters)"


def _file_change(tool: str, data: dict, cwd: Path) -> Described:
    ws = Workspace(cwd)
    given = str(data.get(WRITE_TOOLS[tool]) or "")
    try:
        target = ws.resolve(given, for_write=True)
        rel = ws.rel(target)
    except PathRefused:
        target, rel = None, given
    old = _read(target) if target is not None and target.exists() else None
    new: str | None = None
    if tool == "Write":
        new = str(data.get("content", ""))
    elif tool in ("Edit", "MultiEdit") and old is not None:
        edits = data.get("edits") if tool == "MultiEdit" else [data]
        new = old
        for e in edits if isinstance(edits, list) else []:
            if not isinstance(e, dict):
                continue
            a, b = str(e.get("old_string", "")), str(e.get("new_string", ""))
            new = new.replace(a, b) if e.get("replace_all") else new.replace(a, b, 1)
    kind = "create" if tool == "Write" and old is None else "edit"
    if new is not None:
        diff, added, removed = edit_diff(rel, old, new)
        summary = f"{'create' if kind == 'create' else tool.lower()} {rel} (+{added} -{removed})"
        detail = diff or "(no change)"
    else:
        summary = f"{tool.lower()} {rel}"
        detail = json.dumps(data, indent=2, ensure_ascii=False)
    return Described(kind, summary, _cap(detail), str(session_rule_for(Action(kind, rel))))


def describe(tool: str, data: Any, cwd: Path) -> Described:
    """What a pane shows for an approval of ``tool`` with input ``data`` (reads the file an edit
    changes; call from a thread)."""
    data = data if isinstance(data, dict) else {}
    if tool == "Bash":
        cmd = str(data.get("command", ""))
        line = " ".join(cmd.split())
        return Described("bash", line[:200], _cap(cmd), str(session_rule_for(Action("bash", cmd.strip()))))
    if tool in WRITE_TOOLS:
        return _file_change(tool, data, cwd)
    if tool == SAVE_TOOL:
        name = str(data.get("name", ""))
        detail = f"name: {name}\ndescription: {data.get('description', '')}\n\n{data.get('body', '')}"
        return Described("memory_save", f"save note {name}", _cap(detail), SAVE_TOOL)
    if tool == "ExitPlanMode" and isinstance(data.get("plan"), str):
        return Described("tool", "leave plan mode and carry out this plan", _cap(data["plan"]), tool)
    text = json.dumps(data, indent=2, ensure_ascii=False)
    line = " ".join(json.dumps(data, ensure_ascii=False).split())
    return Described("tool", f"{tool} {line}"[:200], _cap(text), tool)


def rule_text(update: Any) -> str:
    """A Claude Code ``PermissionUpdate`` as text: ``Bash(npm test *)``, ``Edit``, ``acceptEdits mode``."""
    if getattr(update, "type", None) == "setMode":
        return f"{update.mode} mode"
    rules = getattr(update, "rules", None) or []
    out = []
    for r in rules:
        out.append(r.tool_name if not r.rule_content else f"{r.tool_name}({r.rule_content})")
    return ", ".join(out)


def claude_rule(text: str) -> str:
    """One of our permission rules in Claude Code's spelling (``memory_save`` → the MCP tool name).
    Raises :class:`~cockpit.runtime.permissions.RuleError` for a malformed rule."""
    rule = Rule.parse(text)
    if rule.tool in ("memory_save", "memory_search"):
        return f"mcp__cockpit__{rule.tool}"
    return str(rule)
