"""The one reader of old transcripts: records of the format before every line was an event
(a ``header`` record first, then ``message``, ``usage``, ``status``, ``end``… records) turned
into the events a new transcript would hold, so every reader folds one kind of history.

What the old format kept as a conversation message becomes a ``ConversationMessage`` and, for
the pane, the ``TextDelta`` (assistant text) and ``UserMessage`` (a follow-up) events a live
session publishes; ``tool_call``/``tool_result`` records become ``ToolCall``/``ToolResult``;
records without an event of their own (a backend's diagnostics) become ``BackendRecord``s. Event
lines appended to an old transcript since (a review, the end a dead server's session never wrote)
are read as they are.
"""

from __future__ import annotations

from typing import Any

from cockpit import events as ev
from cockpit.events import Usage
from cockpit.wire import event_from_json


def _usage(value: Any) -> Usage:
    u = value if isinstance(value, dict) else {}
    return Usage(*(int(u.get(k) or 0) for k in ("input", "output", "cache_write", "cache_read")))


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _notes(items: Any) -> tuple[ev.InjectedNote, ...]:
    return tuple(
        ev.InjectedNote(str(n.get("name", "")), float(n.get("score") or 0), bool(n.get("priority")),
                        str(n.get("description", "")), str(n.get("path", "")), str(n.get("kind") or "line"),
                        _num(n.get("probability")), str(n.get("status") or ""), str(n.get("superseded_by") or ""))
        for n in items or [] if isinstance(n, dict))


_HEADER_KEYS = {"type", "ts", "_line", "version", "session_id", "task", "model", "backend", "workspace", "cwd",
                "worktree", "placement", "permission_mode", "sandbox", "sandbox_note", "sandbox_off", "tools",
                "preseed_enabled", "top_k", "interactive", "injected", "left_out", "notes", "preseed_text",
                "preseed_tokens", "preseed_error", "system_prompt", "started_at", "resumed_from", "budget"}


class _Migration:
    def __init__(self, path: str, warnings: list[str]):
        self.path = path
        self.warnings = warnings
        self.sid = ""
        self.task = ""
        self.first_user = True
        self.totals = Usage()
        self.cost: float | None = None

    def header(self, r: dict) -> list[ev.Event]:
        self.sid, self.task = str(r.get("session_id", "")), str(r.get("task", ""))
        for key in ("injected", "left_out"):
            if key in r and not isinstance(r[key], (list, type(None))):
                self.warnings.append(f"{self.path}: line {r.get('_line', 1)}: the header's {key} is not a list: "
                                     "left out")
        w = r.get("worktree") if isinstance(r.get("worktree"), dict) else None
        ref = None if w is None else ev.WorktreeRef(str(w.get("path", "")), str(w.get("branch", "")),
                                                    str(w.get("base_commit", "")), w.get("base_branch"))
        out: list[ev.Event] = [ev.SessionSpawned(
            self.sid, self.task, str(r.get("model", "")), str(r.get("workspace", "")), self.path,
            bool(r.get("preseed_enabled", True)), str(r.get("backend") or "cockpit"),
            str(r.get("permission_mode") or "default"), str(r.get("cwd", "")), ref, str(r.get("placement", "")),
            str(r.get("tools") or "anthropic"), str(r.get("resumed_from") or ""), "",
            str(r.get("sandbox", "")), str(r.get("sandbox_note", "")))]
        if r.get("preseed_enabled", True) or r.get("injected"):
            out.append(ev.Preseeded(self.sid, _notes(r.get("injected")), int(r.get("preseed_tokens") or 0),
                                    str(r.get("preseed_text") or ""), str(r.get("preseed_error") or ""),
                                    left_out=tuple(str(x) for x in r.get("left_out") or [])))
        top_k = r.get("top_k")
        out.append(ev.SessionStarted(
            self.sid, str(r.get("started_at") or r.get("ts", "")), str(r.get("system_prompt") or ""),
            top_k if isinstance(top_k, int) else None, bool(r.get("interactive", True)), str(r.get("notes") or ""),
            bool(r.get("sandbox_off")), r["budget"] if isinstance(r.get("budget"), dict) else {},
            {k: v for k, v in r.items() if k not in _HEADER_KEYS}, version=int(r.get("version") or 1)))
        return out

    def message(self, r: dict) -> list[ev.Event]:
        role, content = r.get("role"), r.get("content")
        if role not in ("user", "assistant") or not isinstance(content, (str, list)):
            return []
        out: list[ev.Event] = [ev.ConversationMessage(self.sid, str(role), content)]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        first, self.first_user = self.first_user and role == "user", self.first_user and role != "user"
        for b in blocks:
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if role == "assistant" and kind == "text" and b.get("text"):
                out.append(ev.TextDelta(self.sid, str(b["text"])))
            elif role == "user" and kind == "text" and b.get("text") and not first:
                out.append(ev.UserMessage(self.sid, str(b["text"])))
        return out

    def usage(self, r: dict) -> list[ev.Event]:
        u, cost = _usage(r.get("usage")), _num(r.get("cost_usd"))
        self.totals = self.totals + u
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost
        return [ev.UsageUpdate(self.sid, u, self.totals, cost, self.cost, model=str(r.get("model") or ""),
                               stop_reason=r.get("stop_reason"), source=str(r.get("source") or ""),
                               cost_source=str(r.get("cost_source") or "pricing"),
                               agent_total_usd=_num(r.get("claude_total_cost_usd")))]

    def end(self, r: dict) -> list[ev.Event]:
        status = ev.SessionStatus(str(r.get("status")))
        reason = str(r.get("reason") or "")
        keep = ("type", "ts", "_line", "status", "final_text", "stop_reason", "usage", "cost_usd", "reason",
                "ended_at")
        return [ev.StatusChanged(self.sid, status, reason),
                ev.SessionDone(self.sid, status, str(r.get("final_text") or ""), r.get("stop_reason"),
                               {k: v for k, v in r.items() if k not in keep},
                               _usage(r.get("usage")) if isinstance(r.get("usage"), dict) else None,
                               _num(r.get("cost_usd")), reason, str(r.get("ended_at") or ""))]

    def convert(self, r: dict) -> list[ev.Event]:
        kind, sid = r.get("type"), self.sid
        if kind in ev.EVENT_TYPES and isinstance(r.get("data"), dict):  # appended since (a review, an end)
            return [event_from_json(r)]
        s = lambda key: str(r.get(key) or "")  # noqa: E731
        if kind == "header":
            return self.header(r)
        if kind == "message":
            return self.message(r)
        if kind == "usage":
            return self.usage(r)
        if kind == "end":
            return self.end(r)
        if kind == "tool_call":
            return [ev.ToolCall(sid, s("id"), s("name"), r.get("input"))]
        if kind == "tool_result":
            return [ev.ToolResult(sid, s("id"), s("name"), _text(r.get("content")), bool(r.get("is_error")))]
        if kind == "status":
            return [ev.StatusChanged(sid, ev.SessionStatus(str(r.get("status"))), s("detail"))]
        if kind == "error":
            if r.get("retrying"):
                return [ev.Retrying(sid, s("kind"), s("message"))]
            return [ev.SessionErrorEvent(sid, s("message"), s("kind") or "error")]
        if kind == "approval":
            return [ev.ApprovalRequested(sid, s("request_id"), s("tool"), s("kind"), s("summary"), s("detail"))]
        if kind == "approval_result":
            return [ev.ApprovalResolved(sid, s("request_id"), bool(r.get("allowed")), s("scope") or "once",
                                        s("reason"))]
        if kind == "context":
            used = r.get("used")
            return [ev.ContextNotice(sid, s("level"), used if isinstance(used, int) else 0,
                                     r.get("window") if isinstance(r.get("window"), int) else None, s("message"))]
        if kind == "worktree" and r.get("removed"):
            return [ev.WorktreeRemoved(sid, s("reason"))]
        if kind == "review":
            return [ev.Reviewed(sid, s("action"), bool(r.get("ok")), s("message"))]
        if kind == "budget":
            return [ev.BudgetNotice(sid, s("level"), s("scope"), _num(r.get("spent_usd")),
                                    int(r.get("spent_tokens") or 0), _num(r.get("limit_usd")),
                                    r.get("limit_tokens") if isinstance(r.get("limit_tokens"), int) else None,
                                    s("message"))]
        if kind == "memory_miss":
            return [ev.MemoryMiss(sid, s("name"), s("via"), bool(r.get("in_index")), s("notes"), s("task"),
                                  tuple(str(g) for g in r.get("given") or []))]
        if kind == "rule":
            return [ev.RuleApplied(sid, s("rule"), s("where"))]
        return [ev.BackendRecord(sid, str(kind), {k: v for k, v in r.items() if k not in ("type", "ts", "_line")})]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content)
    return "" if content is None else str(content)


def events_from_records(records: list[dict], path: str, warnings: list[str]) -> list[tuple[str, ev.Event]]:
    """``(ts, event)`` for old-format ``records`` (the header first). A record that does not fit
    its type (a damaged line) is skipped with a warning in ``warnings``."""
    m = _Migration(path, warnings)
    out: list[tuple[str, ev.Event]] = []
    for r in records:
        try:
            events = m.convert(r)
        except (TypeError, ValueError) as exc:
            warnings.append(f"{path}: line {r.get('_line', '?')} skipped: {type(exc).__name__}: {exc}")
            continue
        out.extend((str(r.get("ts", "")), e) for e in events)
    return out
