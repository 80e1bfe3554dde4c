"""A session's row of the headless report (``cockpit run``, ``--json``) and of ``cockpit ls``,
read from its folded events (:class:`~cockpit.runtime.history.SessionHistory`) and nothing else.

A live session folds the events it emits as it goes (``SessionBase.history``); a transcript
folded after the fact (:func:`cockpit.runtime.history.fold` over
:func:`cockpit.runtime.transcript.read_events`) gives the same row. Units: tokens; USD rounded to
six places (``None``: unpriced).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from cockpit.events import Usage
from cockpit.runtime.history import SessionHistory, reviewed_dict


def _claude_code(h: SessionHistory) -> dict[str, Any]:
    from cockpit.runtime.claude_code import claude_session_id

    return {"claude_session_id": h.ended.extra.get("claude_session_id") if h.ended is not None
            else claude_session_id(h)}


def _acp(h: SessionHistory) -> dict[str, Any]:
    live = h.backend_records.get("acp_session", {}).get("session_id")
    return {"agent": h.backend.partition(":")[2],
            "acp_session_id": h.ended.extra.get("acp_session_id") if h.ended is not None else live}


# a backend's own keys (by the backend's name, or its prefix before ":")
BACKEND_KEYS: dict[str, Callable[[SessionHistory], dict[str, Any]]] = {"claude-code": _claude_code, "acp": _acp}


def _diff(h: SessionHistory) -> dict[str, int] | None:
    """``{files, added, removed}`` of its worktree against the base commit as last reported
    (zeros when it was removed for having no changes; None when it runs in place or none was)."""
    if h.worktree is None:
        return None
    if h.worktree_removed:
        return {"files": 0, "added": 0, "removed": 0}
    c = h.changes
    return None if c is None else {"files": c.files, "added": c.added, "removed": c.removed}


def session_row(h: SessionHistory) -> dict[str, Any]:
    """The session's row (the keys are listed in :mod:`cockpit.headless`)."""
    w = h.worktree
    worktree = None if w is None else {"path": w.path, "branch": w.branch, "base_commit": w.base_commit,
                                       "base_branch": w.base_branch}
    if worktree is not None and h.worktree_removed:
        worktree["removed"] = h.worktree_removed
    row: dict[str, Any] = {
        "id": h.session_id,
        "task": h.task,
        "model": h.model,
        "backend": h.backend,
        "workspace": h.workspace,
        "cwd": h.cwd,
        "placement": h.placement,
        "worktree": worktree,
        "permission_mode": h.permission_mode,
        "interactive": h.started.interactive if h.started else None,  # False: headless (cockpit run)
        "sandbox": h.sandbox or None,
        "sandbox_note": h.sandbox_note,
        "status": h.status.value,
        "stop_reason": h.stop_reason,
        "answer": h.answer,
        "error": {"kind": h.error_kind, "message": h.error} if h.error_kind else None,
        "preseed": h.preseed_enabled,
        "preseed_error": h.preseed_error or None,
        "injected": [{"name": n.name, "priority": n.priority, "score": round(n.score, 4), "kind": n.kind}
                     for n in h.notes],
        "preseed_tokens": h.preseed_tokens,
        "usage": {**h.usage.__dict__, "total": h.usage.total},
        "cost_usd": None if h.cost_usd is None else round(h.cost_usd, 6),
        "cost_source": h.cost_source,
        "requests": h.requests,
        "denied": list(h.denied),
        "budget": {"usd": h.budget_usd, "tokens": h.budget_tokens,
                   "reached": ({"scope": h.budget_scope, "caps": list(h.budget_caps)}
                               if h.error_kind == "budget" and h.budget_scope else None)},
        "transcript": h.transcript_path,
        "reviewed": reviewed_dict(h.reviewed),  # how its worktree ended: merge / keep / discard
    }
    extra = BACKEND_KEYS.get(h.backend) or BACKEND_KEYS.get(h.backend.partition(":")[0])
    if extra is not None:
        row.update(extra(h))
    row["diff"] = _diff(h)
    return row


def build_report(rows: Iterable[dict[str, Any]], pricing: Any) -> dict[str, Any]:
    """The whole report: the rows, their totals (tokens; USD over the priced sessions, None when
    none was priced; ``unpriced_sessions``: how many spent tokens with no price, left out of the
    USD) and the price table's ``source``/``date``/``override``."""
    rows = list(rows)
    usage, cost, priced, unpriced = Usage(), 0.0, False, 0
    for r in rows:
        u = r.get("usage") or {}
        spent = Usage(u.get("input", 0), u.get("output", 0), u.get("cache_write", 0), u.get("cache_read", 0))
        usage = usage + spent
        if r.get("cost_usd") is not None:
            cost += r["cost_usd"]
            priced = True
        elif spent.total:
            unpriced += 1  # it spent tokens nobody priced: the total leaves it out, and says so
    return {
        "sessions": rows,
        "totals": {"usage": {**usage.__dict__, "total": usage.total},
                   "cost_usd": round(cost, 6) if priced else None, "unpriced_sessions": unpriced},
        "pricing": {"source": pricing.source, "date": pricing.date, "override": pricing.overridden_by},
    }


__all__ = ["BACKEND_KEYS", "build_report", "session_row"]
