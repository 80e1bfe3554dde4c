"""A Cockpit session whose agent is Claude Code (one ``ClaudeSDKClient``, one ``claude`` process).

The loop (:meth:`ClaudeCodeSession._main`): preseed as Cockpit's own loop does, record the first
user message (``<env>``, preseed block, task), start Claude Code in the working tree, send the
message, read the stream until the turn's ``result``; interactive sessions then wait for a
follow-up (``waiting for you``) and send it on the same connection; headless ones end ``done``.

Mapping of what arrives (``claude_agent_sdk`` types):

- ``SystemMessage`` ``init``: Claude Code's session id → a ``claude_code`` transcript record
  (``session_id``, CLI version, model, permission mode, MCP servers); ``status: requesting`` →
  ``streaming``.
- ``StreamEvent`` (top level): ``message_start`` counts a request and gives live input/cache
  figures; text deltas → ``TextDelta``; ``message_delta`` gives the response's final usage.
  Live ``UsageUpdate``s are ``partial`` (they do not enter the totals).
- ``AssistantMessage`` (top level): its blocks (Claude Code sends one message per block) are
  joined per API message into one transcript ``message``; each ``tool_use`` → ``ToolCall``.
  Subagent messages (``parent_tool_use_id`` set) are recorded as ``subagent`` records only.
- ``UserMessage``: ``tool_result`` blocks → ``ToolResult`` events and one ``message``.
- ``ResultMessage``: the turn's ``usage`` (tokens, into the totals) and the change of Claude
  Code's cumulative ``total_cost_usd`` (USD, the turn's cost) → ``UsageUpdate`` with
  ``cost_source="claude-code"``; a ``result`` record; the answer is its ``result`` text. An error
  result ends the session ``error`` (kind from the HTTP status: ``auth``, ``rate_limit``,
  ``overloaded``, ``api``; ``turn_cap`` for ``error_max_turns`` when headless — interactive
  sessions then wait for you; ``claude_code`` otherwise). ``error_max_budget_usd`` (Claude Code
  stopped at the session's USD cap, passed as its own ``max_budget_usd``): ``budget reached``
  until the cap is raised, then Claude Code is restarted (resumed) with the new cap and the
  session waits for you; headless: ``error``, kind ``budget``. The server's cap, and a token cap,
  are checked before each turn.
- Hooks: ``PreToolUse`` → ``running tool`` (and refuses file edits outside the working tree);
  ``PostToolUse`` / ``PostToolUseFailure`` of ``Bash``/``Edit``/``Write``… → ``WorktreeChanged``.
- ``can_use_tool`` (Claude Code would ask) → ``ApprovalRequested`` / ``ApprovalResolved`` exactly
  as in Cockpit's loop; "allow for this session" applies Claude Code's own suggestion (or the
  rule Cockpit would add) to this session only, never to a settings file.

Failures of the process: ``claude_code`` (it exited, with its last stderr line), ``connection``
(the pipe broke), ``interrupted`` (the stream ended without a result).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import claude_agent_sdk as sdk
from claude_agent_sdk.types import PermissionRuleValue

from cockpit.events import ApprovalRequested, Retrying, TextDelta, ToolCall, ToolResult, Usage, UsageUpdate
from cockpit.runtime import prompts
from cockpit.runtime.budget import BudgetHit
from cockpit.runtime.model_call import SessionFailure, one_line
from cockpit.runtime.session_base import S, SessionBase, denial_message

from .approvals import WRITE_TOOLS, describe, refused_path, rule_text
from .memory_server import memory_server
from .options import KeyFile, agent_options

if TYPE_CHECKING:  # pragma: no cover
    pass

COST_SOURCE = "claude-code"
_CHANGING_TOOLS = set(WRITE_TOOLS) | {"Bash"}


def _usage(d: Any) -> Usage:
    if not isinstance(d, dict):
        return Usage()
    return Usage(int(d.get("input_tokens") or 0), int(d.get("output_tokens") or 0),
                 int(d.get("cache_creation_input_tokens") or 0), int(d.get("cache_read_input_tokens") or 0))


def _block(b: Any) -> dict | None:
    """An SDK content block as an API content block (None: nothing to keep)."""
    if isinstance(b, sdk.TextBlock):
        return {"type": "text", "text": b.text}
    if isinstance(b, sdk.ToolUseBlock):
        return {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}
    if isinstance(b, sdk.ThinkingBlock):
        return {"type": "thinking", "thinking": b.thinking, "signature": b.signature}
    if isinstance(b, sdk.ToolResultBlock):
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": b.tool_use_id, "content": _result_text(b.content)}
        if b.is_error:
            out["is_error"] = True
        return out
    if dataclasses.is_dataclass(b) and not isinstance(b, type):
        return {"type": type(b).__name__, **dataclasses.asdict(b)}
    return None


def _result_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for c in content:
        if isinstance(c, dict) and c.get("type") == "text":
            parts.append(str(c.get("text", "")))
        elif isinstance(c, dict):
            parts.append(f"[{c.get('type', 'content')}]")
    return "\n".join(parts)


def _rule_update(rule: str) -> Any:
    m = re.fullmatch(r"([\w-]+)(?:\((.*)\))?", rule.strip())
    if not m:
        return None
    return sdk.PermissionUpdate(type="addRules", behavior="allow", destination="session",
                                rules=[PermissionRuleValue(tool_name=m.group(1), rule_content=m.group(2) or None)])


class ClaudeCodeSession(SessionBase):
    """The ``claude-code`` backend's session. Adds ``claude_session_id`` (Claude Code's own id,
    None until it started) to :class:`~cockpit.runtime.session_base.SessionBase`'s surface."""

    cost_source = COST_SOURCE

    def _init_backend(self) -> None:
        from cockpit.runtime.claude_code import resume_info

        h = resume_info(self._resumed)
        self.acct.cost_usd = 0.0  # Claude Code reports its cost for any model
        self.claude_session_id: str | None = h.get("claude_session_id")
        self._resume_id = self.claude_session_id
        self._cc_cost_seen = float(h.get("claude_total_cost_usd") or 0.0)  # Claude Code's cumulative figure
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._names: dict[str, str] = {}
        self._inputs: dict[str, Any] = {}  # tool_use id → its input (a note read in full is a miss)
        self._assistant: tuple[str | None, list[dict]] | None = None
        self._turn_live = Usage()  # finished responses of the running turn (live figures)
        self._resp_start = Usage()
        self._turn_text = ""
        self._client: Any = None
        self._key_file: KeyFile | None = None
        self._cc_cap: float | None = None  # the session's USD cap when Claude Code was started

    def system_prompt(self) -> str:
        return "(Claude Code's own system prompt, then:)\n" + prompts.claude_code_append(self.preseed_enabled)

    def _header_extra(self) -> dict[str, Any]:
        sources = self._cfg.claude_setting_sources
        return {"claude_code": {"setting_sources": None if sources is None else list(sources),
                                "resume": self._resume_id, "sdk_version": sdk.__version__}}

    def _end_extra(self) -> dict[str, Any]:
        return {"cost_source": COST_SOURCE, "claude_session_id": self.claude_session_id,
                "claude_total_cost_usd": self._cc_cost_seen}

    # -- the loop ---------------------------------------------------------------------------
    async def _main(self) -> None:
        content: list[dict] | None
        if self.resumed_from is not None:
            self._resume_setup()
            content = None
        else:
            await self._preseed()
            self._open_transcript()
            content = self._first_content or prompts.first_user_content(
                self.task, self.preseed_text, prompts.env_block(self.spec))
            self._add_message("user", content)
        self._set(S.STARTING, "starting Claude Code")
        await self._connect()
        while True:
            kind, detail = await self._turn(content) if content is not None else ("resumed", "")
            if kind == "budget":  # Claude Code stopped at the USD cap it was given
                same = self.budget.usd == self._cc_cap  # (not raised meanwhile: pause even if our figure is under)
                await self._budget_gate(BudgetHit("session", self.budget, self.cost_usd, self.usage.total)
                                        if same else None)
                await self._reconnect()  # its cap is fixed per process: resume it with the new one
                detail = "the budget was raised: send a follow-up to go on"
            if not self.interactive:
                if kind == "turn_cap":
                    raise SessionFailure("turn_cap", detail)
                return
            text = await self._wait_follow_up(detail)
            if text is None:
                return
            content = [{"type": "text", "text": text}]

    async def _connect(self) -> None:
        key = self._cfg.api_key or self._cfg.auth_token  # apiKeyHelper's is sent as both headers
        if key:
            self._key_file = KeyFile(key)
        hooks = {
            "PreToolUse": [sdk.HookMatcher(hooks=[self._pre_tool])],
            "PostToolUse": [sdk.HookMatcher(hooks=[self._post_tool])],
            "PostToolUseFailure": [sdk.HookMatcher(hooks=[self._post_tool])],
        }
        options = agent_options(self.spec, self._cfg, session_id=self.id, key_file=self._key_file,
                                mcp_server=memory_server(self.engine, self.top_k), can_use_tool=self._can_use_tool,
                                hooks=hooks, stderr=self._on_stderr, resume=self._resume_id,
                                max_budget_usd=self._cc_budget())
        client = sdk.ClaudeSDKClient(options)
        try:
            await client.connect()
        except sdk.ClaudeSDKError as exc:
            try:
                await client.disconnect()
            except Exception:
                pass
            raise self._failure(exc) from None
        self._client = client

    def _cc_budget(self) -> float | None:
        """Claude Code's own ``max_budget_usd``: what is left of the session's USD cap (Claude Code
        counts it per process, from its start)."""
        cap = self._cc_cap = self.budget.usd
        if cap is None:
            return None
        return max(cap - (self.cost_usd or 0.0), 1e-6)

    async def _reconnect(self) -> None:
        """A new ``claude`` process resuming the same conversation (after the cap was raised)."""
        client, self._client = self._client, None
        if client is not None:
            try:
                await asyncio.shield(client.disconnect())
            except Exception:
                pass
        if self._key_file is not None:
            self._key_file.remove()
            self._key_file = None
        self._resume_id = self.claude_session_id or self._resume_id
        self._set(S.STARTING, "restarting Claude Code with the new budget")
        await self._connect()

    async def _turn(self, content: list[dict]) -> tuple[str, str]:
        """Send one user message and read until its result: (kind, detail); kind end | turn_cap |
        budget."""
        await self._budget_gate()  # a cap reached (the session's tokens, the server's): pause first
        self._set(S.STREAMING)
        self._turn_text = ""

        async def one() -> AsyncIterator[dict]:
            yield {"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None}

        try:
            await self._client.query(one())
            async for msg in self._client.receive_response():
                if isinstance(msg, sdk.ResultMessage):
                    return self._on_result(msg)
                self._on_message(msg)
        except sdk.ClaudeSDKError as exc:
            raise self._failure(exc) from None
        raise SessionFailure("interrupted", "Claude Code's stream ended before the turn's result"
                             + self._stderr_tail())

    async def _cleanup(self) -> None:
        self._flush_assistant()
        if self._turn_live.total:  # a turn cut short: its finished responses still count (cost unknown)
            self._account(self._turn_live, None)
            self._turn_live = Usage()
        if self._client is not None:
            client, self._client = self._client, None
            try:
                await asyncio.shield(client.disconnect())
            except BaseException:
                pass
        if self._key_file is not None:
            self._key_file.remove()

    # -- what arrives -------------------------------------------------------------------------
    def _on_message(self, msg: Any) -> None:
        if isinstance(msg, sdk.StreamEvent):
            if msg.parent_tool_use_id is None:
                self._on_stream(msg.event)
        elif isinstance(msg, sdk.AssistantMessage):
            self._on_assistant(msg)
        elif isinstance(msg, sdk.UserMessage):
            self._on_user(msg)
        elif isinstance(msg, sdk.SystemMessage):
            self._on_system(msg)

    def _on_system(self, msg: Any) -> None:
        data = msg.data if isinstance(msg.data, dict) else {}
        if msg.subtype == "init":
            sid = data.get("session_id")
            if sid and sid != self.claude_session_id:
                self.claude_session_id = sid
            self._note("claude_code", session_id=sid, version=data.get("claude_code_version"),
                            model=data.get("model"), permission_mode=data.get("permissionMode"),
                            cwd=data.get("cwd"), mcp_servers=data.get("mcp_servers"))
        elif msg.subtype == "status":
            status = data.get("status")
            if status:
                self._set(S.STREAMING, "" if status == "requesting" else str(status))

    def _on_stream(self, ev: dict) -> None:
        et = ev.get("type")
        if et == "content_block_delta":
            delta = ev.get("delta") or {}
            if delta.get("type") == "text_delta" and delta.get("text"):
                self.rec.emit(TextDelta(self.id, delta["text"]))
        elif et == "message_start":
            self.acct.requests += 1
            self._resp_start = _usage((ev.get("message") or {}).get("usage"))
            self._live(self._resp_start)
        elif et == "message_delta" and isinstance(ev.get("usage"), dict):
            u = ev["usage"]
            s = self._resp_start
            resp = Usage(int(u.get("input_tokens") or s.input), int(u.get("output_tokens") or 0),
                         int(u.get("cache_creation_input_tokens") or s.cache_write),
                         int(u.get("cache_read_input_tokens") or s.cache_read))
            self._resp_start = Usage()
            self._turn_live = self._turn_live + resp
            self.acct.context_tokens = resp.input + resp.cache_read + resp.cache_write + resp.output
            self._live(Usage())

    def _live(self, current: Usage) -> None:
        turn = self._turn_live + current
        self.rec.emit(UsageUpdate(self.id, turn, self.acct.usage + turn, None, self.acct.cost_usd,
                                  context_tokens=current.input + current.cache_read + current.cache_write
                                  or self.acct.context_tokens,
                                  context_window=self.acct.context_window, partial=True, cost_source=COST_SOURCE))

    def _on_assistant(self, msg: Any) -> None:
        blocks = [b for b in (_block(x) for x in msg.content) if b is not None]
        if msg.parent_tool_use_id is not None:
            self._note("subagent", parent_tool_use_id=msg.parent_tool_use_id, role="assistant", content=blocks)
            return
        if self._assistant is None or self._assistant[0] != msg.message_id:
            self._flush_assistant()
            self._assistant = (msg.message_id, [])
        self._assistant[1].extend(blocks)
        for b in blocks:
            if b["type"] == "text" and b["text"].strip():
                self._turn_text = b["text"]
            elif b["type"] == "tool_use":
                self._names[b["id"]] = b["name"]
                self._inputs[b["id"]] = b["input"]
                self.rec.emit(ToolCall(self.id, b["id"], b["name"], b["input"]))
        if msg.error:
            self.rec.emit(Retrying(self.id, "claude_code", f"assistant message error: {msg.error}"))

    def _flush_assistant(self) -> None:
        if self._assistant is not None:
            _, blocks = self._assistant
            self._assistant = None
            if blocks:
                self._add_message("assistant", blocks)

    def _on_user(self, msg: Any) -> None:
        content = msg.content if isinstance(msg.content, list) else [sdk.TextBlock(text=str(msg.content))]
        blocks = [b for b in (_block(x) for x in content) if b is not None]
        if msg.parent_tool_use_id is not None:
            self._note("subagent", parent_tool_use_id=msg.parent_tool_use_id, role="user", content=blocks)
            return
        self._flush_assistant()
        for b in blocks:
            if b["type"] == "tool_result":
                name = self._names.get(b["tool_use_id"], "")
                err = bool(b.get("is_error"))
                self.rec.emit(ToolResult(self.id, b["tool_use_id"], name, b["content"], err))
                self.note_tool_use(name, self._inputs.pop(b["tool_use_id"], None), err)
        if blocks:
            self._add_message("user", blocks)

    def _on_result(self, r: Any) -> tuple[str, str]:
        self._flush_assistant()
        self.stop_reason = r.stop_reason
        if r.session_id:
            self.claude_session_id = r.session_id
        cost = None
        if r.total_cost_usd is not None:
            cost = max(0.0, float(r.total_cost_usd) - self._cc_cost_seen)
            self._cc_cost_seen = float(r.total_cost_usd)
        if self.acct.context_window is None:
            windows = [m.get("contextWindow") for m in (r.model_usage or {}).values() if isinstance(m, dict)]
            self.acct.context_window = next((int(w) for w in windows if w), None)
        turn = _usage(r.usage) if r.usage else Usage()
        if not turn.total:  # e.g. an error_max_budget_usd result reports zeros: the stream's figures
            turn = self._turn_live
        self._turn_live = Usage()
        self._account(turn, cost, r.total_cost_usd)
        self._note("result", subtype=r.subtype, is_error=r.is_error, num_turns=r.num_turns,
                        duration_ms=r.duration_ms, duration_api_ms=r.duration_api_ms, session_id=r.session_id,
                        stop_reason=r.stop_reason, terminal_reason=r.terminal_reason,
                        total_cost_usd=r.total_cost_usd, permission_denials=r.permission_denials,
                        errors=r.errors, api_error_status=r.api_error_status)
        if r.result and not r.is_error:
            self.final_text = r.result
        elif self._turn_text:
            self.final_text = self._turn_text
        if r.subtype == "error_max_turns":
            detail = f"turn cap reached ({self._cfg.max_turns} model turns)"
            self._set(self.status, detail)
            return "turn_cap", detail
        if r.subtype == "error_max_budget_usd":
            return "budget", "Claude Code stopped at the session's budget"
        if r.is_error or r.subtype != "success":
            raise SessionFailure(*self._result_failure(r))
        return "end", ""

    def _account(self, u: Usage, cost: float | None, cc_total: float | None = None) -> None:
        acct = self.acct
        acct.usage = acct.usage + u
        if cost is not None:
            acct.cost_usd = (acct.cost_usd or 0.0) + cost
        self._host.add_usage(u, cost)
        self.rec.emit(UsageUpdate(self.id, u, acct.usage, cost, acct.cost_usd, context_tokens=acct.context_tokens,
                                  context_window=acct.context_window, cost_source=COST_SOURCE,
                                  model=self.spec.model, stop_reason=self.stop_reason, agent_total_usd=cc_total))

    def _result_failure(self, r: Any) -> tuple[str, str]:
        status = r.api_error_status
        kind = {401: "auth", 403: "auth", 429: "rate_limit", 529: "overloaded"}.get(status or 0)
        if kind is None:
            kind = "api" if status else "claude_code"
        what = "; ".join(str(e) for e in (r.errors or [])) or (r.result or "") or r.subtype
        where = f"HTTP {status}: " if status else ""
        return kind, f"Claude Code ended the turn with an error ({r.subtype}): {where}{what}"

    # -- hooks and permissions ----------------------------------------------------------------
    async def _pre_tool(self, hook_input: sdk.HookInput, tool_use_id: str | None,
                        context: sdk.HookContext) -> sdk.HookJSONOutput:
        data: dict[str, Any] = dict(hook_input)
        name = str(data.get("tool_name", ""))
        why = await asyncio.to_thread(refused_path, name, data.get("tool_input") or {}, self.cwd)
        if why:
            self._note("tool_refused", id=tool_use_id, name=name, reason=why)
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                           "permissionDecisionReason": why}}
        if data.get("agent_id") is None:
            self._set(S.RUNNING_TOOL, name)
        return {}

    async def _post_tool(self, hook_input: sdk.HookInput, tool_use_id: str | None,
                         context: sdk.HookContext) -> sdk.HookJSONOutput:
        name = str(dict(hook_input).get("tool_name", ""))
        if name in _CHANGING_TOOLS:
            await self._report_changes()
        return {}

    async def _can_use_tool(self, name: str, data: dict, ctx: Any) -> Any:
        d = await asyncio.to_thread(describe, name, data, self.cwd)
        suggestions = [s for s in (ctx.suggestions or []) if s.type in ("addRules", "setMode")]
        shown = "; ".join(t for t in (rule_text(s) for s in suggestions) if t) or d.rule
        request_id = ctx.tool_use_id or f"{name}-{len(self._answers)}"
        ask = ApprovalRequested(self.id, request_id, name, d.kind, d.summary, d.detail, shown)
        try:
            allowed, scope, reason = await self._await_answer(ask)
        except asyncio.CancelledError:  # the session was killed while it waited
            return sdk.PermissionResultDeny(message="the session was stopped", interrupt=True)
        if not allowed:
            return sdk.PermissionResultDeny(message=denial_message(reason))
        self._set(S.RUNNING_TOOL, name)
        if scope != "session":
            return sdk.PermissionResultAllow()
        updates = [dataclasses.replace(s, destination="session") for s in suggestions]
        if not updates:
            fallback = _rule_update(d.rule)
            updates = [fallback] if fallback is not None else []
        return sdk.PermissionResultAllow(updated_permissions=updates or None)

    # -- failures -------------------------------------------------------------------------------
    def _on_stderr(self, line: str) -> None:
        line = self._redact(line.rstrip())
        if line:
            self._stderr.append(line)
            self._note("stderr", line=line[:2000])

    def _stderr_tail(self) -> str:
        useful = [ln for ln in self._stderr if not ln.startswith("[claude-code:")]
        return f" — {one_line(useful[-1], 240)}" if useful else ""

    def _failure(self, exc: Exception) -> SessionFailure:
        if isinstance(exc, sdk.CLINotFoundError):
            return SessionFailure("claude_code", f"Claude Code CLI not found: {exc}")
        if isinstance(exc, sdk.ProcessError):
            return SessionFailure("claude_code", f"Claude Code exited (code {exc.exit_code}){self._stderr_tail()}")
        if isinstance(exc, sdk.CLIConnectionError):
            return SessionFailure("connection", f"lost the connection to Claude Code: {exc}{self._stderr_tail()}")
        return SessionFailure("claude_code", f"{type(exc).__name__}: {exc}{self._stderr_tail()}")


__all__ = ["ClaudeCodeSession", "COST_SOURCE"]
