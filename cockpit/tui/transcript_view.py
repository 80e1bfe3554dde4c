"""A transcript (its events, :func:`cockpit.runtime.transcript.read_events`) as plain text for the
review screen.

Shows everything: the spawn (with the permission mode and where the session worked), the
injected block exactly as sent, every message, tool call, approval asked and answered, result,
usage per request (tokens, USD), status changes, context notices, errors, the end and review
actions (merge / keep / discard).
"""

from __future__ import annotations

import json
from typing import Any

from cockpit import events as ev
from cockpit.tui import format as fmt
from cockpit.wire import to_plain


def _rule(title: str) -> str:
    return f"── {title} " + "─" * max(0, 60 - len(title))


def _block_text(block: Any) -> str:
    if not isinstance(block, dict):
        return str(block)
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind == "tool_use":
        args = json.dumps(block.get("input"), ensure_ascii=False)
        return f"[tool_use {block.get('id', '')}] {block.get('name', '')} {args}"
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = "\n".join(_block_text(c) for c in content)
        err = " (error)" if block.get("is_error") else ""
        return f"[tool_result {block.get('tool_use_id', '')}{err}]\n{content}"
    return json.dumps(block, ensure_ascii=False)


def _usage_line(u: ev.Usage | None) -> str:
    u = u or ev.Usage()
    return (f"in {u.input}  out {u.output}  cache read {u.cache_read}  cache write {u.cache_write} tokens")


def _spawned(e: ev.SessionSpawned) -> list[str]:
    out = [f"session {e.session_id} · {e.task}", f"model {e.model} · workspace {e.workspace}"]
    if e.resumed_from:
        out.append(f"resumed from {e.resumed_from}")
    if e.continued_from:
        out.append(f"continues session {e.continued_from}")
    w = e.worktree
    where = f"worktree {w.path} on {w.branch}" if w else e.placement
    out.append(f"permission mode {e.permission_mode or 'default'}" + (f" · {where}" if where else ""))
    if not e.preseed_enabled:
        out.append("(preseed off)")
    return out


def _preseeded(e: ev.Preseeded) -> list[str]:
    out = [_rule(f"notes injected ({len(e.notes)})")]
    for note in e.notes:
        star = "★" if note.priority else " "
        kind = "" if note.kind == "line" else "(index) "
        succ = f" (superseded by {note.superseded_by})" if note.superseded_by else ""
        figure = fmt.note_figure(note.probability, note.score, note.priority)
        out.append(f"{star} {kind}{note.name}  {figure}  {note.description}{succ}")
    out.extend(f"  ✗ not a line: {why}" for why in e.left_out)
    if e.error:
        out.append(f"✗ preseed failed: {e.error}")
    out.append(_rule(f"injected block, exactly as sent (~{e.tokens} tokens)"))
    out.append(e.text or "(empty: nothing qualified)")
    return out


def render_transcript(events: list[ev.Event]) -> str:
    """The whole transcript as text (one string, lines separated by ``\\n``)."""
    out: list[str] = []
    requests = 0
    for e in events:
        if isinstance(e, ev.TextDelta):  # streamed text is shown whole, with the message that holds it
            continue
        if isinstance(e, ev.SessionSpawned):
            out.extend(_spawned(e))
        elif isinstance(e, ev.Preseeded):
            out.extend(_preseeded(e))
        elif isinstance(e, ev.SessionStarted):
            out.append(f"started {e.started_at}")
        elif isinstance(e, ev.MemoryMiss):
            where = "listed in the index" if e.in_index else "not in the block"
            out.append(f"memory miss: {e.name} read via {e.via} ({where})")
        elif isinstance(e, ev.ConversationMessage):
            blocks = e.content if isinstance(e.content, list) else [{"type": "text", "text": str(e.content)}]
            out.append(_rule(f"message · {e.role}"))
            out.extend(_block_text(b) for b in blocks)
        elif isinstance(e, ev.ToolCall):
            out.append(f"⚙ tool call {e.name} [{e.tool_use_id}] {json.dumps(e.input, ensure_ascii=False)}")
        elif isinstance(e, ev.ToolResult):
            out.append(f"⚙ tool result {e.name} [{e.tool_use_id}]{' ERROR' if e.is_error else ''}")
            out.append(str(e.content))
        elif isinstance(e, ev.UsageUpdate):
            if e.partial:
                continue
            requests += 1
            what = " (selector)" if e.source == "selector" else ""
            out.append(f"· usage (request {requests}{what}): {_usage_line(e.usage)}  "
                       f"cost {fmt.usd(e.cost_usd)}  stop {e.stop_reason}")
        elif isinstance(e, ev.StatusChanged):
            if e.status.is_final:  # the end says it
                continue
            out.append(f"· status: {e.status.value}{f' ({e.detail})' if e.detail else ''}")
        elif isinstance(e, ev.SessionErrorEvent):
            out.append(f"✗ error [{e.kind}]: {e.message}")
        elif isinstance(e, ev.Retrying):
            out.append(f"· retrying after [{e.kind}]: {e.message}")
        elif isinstance(e, ev.ApprovalRequested):
            out.append(f"? approval asked [{e.request_id}] {e.kind}: {e.summary}")
            if e.detail and e.detail != e.summary:
                out.append(e.detail)
        elif isinstance(e, ev.ApprovalResolved):
            verdict = f"allowed ({e.scope})" if e.allowed else f"denied ({e.scope})"
            out.append(f"{'✓' if e.allowed else '✗'} approval {verdict}{f': {e.reason}' if e.reason else ''}")
        elif isinstance(e, ev.ContextNotice):
            detail = e.message or (f"{e.used} of {e.window} tokens" if e.used else "")
            out.append(f"· context {e.level}: {detail}".rstrip(": "))
        elif isinstance(e, ev.WorktreeRemoved):
            out.append(f"· worktree removed ({e.reason})")
        elif isinstance(e, ev.Reviewed):
            out.append(f"{'✓' if e.ok else '✗'} review {e.action}: {e.message}")
        elif isinstance(e, ev.SessionDone):
            out.append(_rule(f"end: {e.status.value}"))
            if e.reason:
                out.append(e.reason)
            out.append(f"stop {e.stop_reason} · {_usage_line(e.usage)} · cost {fmt.usd(e.cost_usd)}")
        else:
            data = {k: v for k, v in to_plain(e).items() if k != "session_id"}
            out.append(f"· {type(e).__name__} {json.dumps(data, ensure_ascii=False, default=str)}")
    return "\n".join(out)
