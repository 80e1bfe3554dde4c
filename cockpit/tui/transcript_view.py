"""A transcript (``cockpit.runtime.transcript`` records) as plain text for the review screen.

Shows everything: the header (with the permission mode and where the session worked), the
injected block exactly as sent, every message, tool call, approval asked and answered, result,
usage per request (tokens, USD), status changes, context notices, errors, the end record and
review actions (merge / keep / discard).
"""

from __future__ import annotations

import json
from typing import Any

from cockpit.tui import format as fmt


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


def _usage_line(u: dict | None) -> str:
    u = u or {}
    return (
        f"in {u.get('input', 0)}  out {u.get('output', 0)}  "
        f"cache read {u.get('cache_read', 0)}  cache write {u.get('cache_write', 0)} tokens"
    )


def render_transcript(records: list[dict]) -> str:
    """The whole transcript as text (one string, lines separated by ``\\n``)."""
    out: list[str] = []
    requests = 0
    for rec in records:
        kind = rec.get("type")
        if kind == "header":
            out.append(f"session {rec.get('session_id', '')} · {rec.get('task', '')}")
            out.append(
                f"model {rec.get('model', '')} · workspace {rec.get('workspace', '')} · "
                f"started {rec.get('started_at', rec.get('ts', ''))}"
            )
            if rec.get("resumed_from"):
                out.append(f"resumed from {rec['resumed_from']}")
            wt = rec.get("worktree") or {}
            if rec.get("permission_mode") or wt or rec.get("placement"):
                where = f"worktree {wt.get('path', '')} on {wt.get('branch', '')}" if wt else rec.get("placement", "")
                out.append(f"permission mode {rec.get('permission_mode', 'default')} · {where}")
            injected = rec.get("injected") or []
            out.append(_rule(f"notes injected ({len(injected)})"))
            for note in injected:
                star = "★" if note.get("priority") else " "
                kind = "" if note.get("kind", "line") == "line" else "(index) "
                succ = f" (superseded by {note['superseded_by']})" if note.get("superseded_by") else ""
                out.append(
                    f"{star} {kind}{note.get('name', '')}  {fmt.score(note.get('score', 0))}  "
                    f"{note.get('description', '')}{succ}"
                )
            for why in rec.get("left_out") or []:
                out.append(f"  ✗ not a line: {why}")
            if not rec.get("preseed_enabled", True):
                out.append("(preseed off)")
            tokens = rec.get("preseed_tokens", 0)
            out.append(_rule(f"injected block, exactly as sent (~{tokens} tokens)"))
            out.append(rec.get("preseed_text") or "(empty: nothing qualified)")
        elif kind == "memory_miss":
            where = "listed in the index" if rec.get("in_index") else "not in the block"
            out.append(f"memory miss: {rec.get('name', '')} read via {rec.get('via', '')} ({where})")
        elif kind == "message":
            content = rec.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
            out.append(_rule(f"message · {rec.get('role', '')}"))
            out.extend(_block_text(b) for b in blocks)
        elif kind == "tool_call":
            args = json.dumps(rec.get("input"), ensure_ascii=False)
            out.append(f"⚙ tool call {rec.get('name', '')} [{rec.get('id', '')}] {args}")
        elif kind == "tool_result":
            err = " ERROR" if rec.get("is_error") else ""
            out.append(f"⚙ tool result {rec.get('name', '')} [{rec.get('id', '')}]{err}")
            out.append(str(rec.get("content", "")))
        elif kind == "usage":
            requests += 1
            out.append(
                f"· usage (request {requests}): {_usage_line(rec.get('usage'))}  "
                f"cost {fmt.usd(rec.get('cost_usd'))}  stop {rec.get('stop_reason')}"
            )
        elif kind == "status":
            detail = f" ({rec['detail']})" if rec.get("detail") else ""
            out.append(f"· status: {rec.get('status', '')}{detail}")
        elif kind == "error":
            out.append(f"✗ error [{rec.get('kind', '')}]: {rec.get('message', '')}")
        elif kind == "approval":
            out.append(f"? approval asked [{rec.get('request_id', '')}] {rec.get('kind', '')}: "
                       f"{rec.get('summary', '')}")
            if rec.get("detail") and rec.get("detail") != rec.get("summary"):
                out.append(str(rec["detail"]))
        elif kind == "approval_result":
            scope = rec.get("scope", "once")
            verdict = f"allowed ({scope})" if rec.get("allowed") else f"denied ({scope})"
            reason = f": {rec['reason']}" if rec.get("reason") else ""
            out.append(f"{'✓' if rec.get('allowed') else '✗'} approval {verdict}{reason}")
        elif kind == "context":
            used = f"{rec.get('used')} of {rec.get('window')} tokens" if rec.get("used") else ""
            detail = rec.get("message") or used
            out.append(f"· context {rec.get('level', '')}: {detail}".rstrip(": "))
        elif kind == "worktree":
            out.append(f"· worktree removed ({rec.get('reason', '')})" if rec.get("removed") else f"· worktree {rec}")
        elif kind == "review":
            out.append(f"{'✓' if rec.get('ok') else '✗'} review {rec.get('action', '')}: {rec.get('message', '')}")
        elif kind == "end":
            out.append(_rule(f"end: {rec.get('status', '')}"))
            out.append(
                f"stop {rec.get('stop_reason')} · {_usage_line(rec.get('usage'))} · "
                f"cost {fmt.usd(rec.get('cost_usd'))}"
            )
        else:
            out.append(json.dumps(rec, ensure_ascii=False, default=str))
    return "\n".join(out)
