"""One agent session: an asyncio task running the Messages API tool loop.

States (``cockpit.events.SessionStatus``), known from the loop itself:

``queued`` (waiting for a concurrency slot) → ``starting`` → ``preseeding`` (only when preseed
is on; detail "waiting for model warm-up" while the embedder loads) → ``streaming`` (a request
is in flight) ⇄ ``running tool`` → ``waiting for you`` (interactive sessions after ``end_turn``,
``max_tokens`` or the turn cap; a follow-up via ``SessionManager.send`` resumes ``streaming``)
→ ``done`` | ``error`` | ``killed``. Non-interactive (headless) sessions go straight to ``done``
after the model ends its turn (``error`` when the turn cap is hit).

Turn handling:

- ``stop_reason == "tool_use"``: every ``tool_use`` block runs (ToolCall/ToolResult events), the
  results go back in one user message, and the loop continues.
- ``"max_tokens"``: the turn ends visibly (StatusChanged detail "stopped: max_tokens …",
  ``SessionDone.stop_reason == "max_tokens"``); unfinished tool calls in it are not run.
- ``None`` (stream ended without ``message_stop``; the SDK does not raise): an interrupted turn.
  It is re-sent ``interrupted_retries`` times (detail "stream interrupted, retry 1/1"), then the
  session ends in ``error`` (kind ``interrupted``). Never treated as finished. Text deltas of
  the abandoned attempt were already published; consumers should drop the partial text of the
  current turn when they see a StatusChanged whose detail starts with "retry".
- Mid-stream ``error`` events of type ``overloaded_error``/``api_error`` are retried the same way;
  others end the session.
- HTTP 429/529/5xx/connection errors are retried by the SDK (``max_retries``), then the session
  (and only it) ends in ``error`` with kind ``rate_limit``/``overloaded``/``api``/``connection``.
  401/403 → kind ``auth``. Messages are one line and never contain the API key.

Prompt caching: the system prompt block and the last tool definition carry
``cache_control: ephemeral`` (identical for every session, so concurrent spawns share one cache
write) and so does the last content block of each request's final message (the growing
conversation). Cache reads/writes are recorded exactly as ``usage`` reports them.
"""

from __future__ import annotations

import asyncio
import copy
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import anthropic
import httpx2

from cockpit.events import (
    InjectedNote,
    Preseeded,
    SelectorInfo,
    SessionDone,
    SessionErrorEvent,
    SessionStatus,
    StatusChanged,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UsageUpdate,
)
from cockpit.runtime import prompts
from cockpit.runtime.selector import selector_for
from cockpit.runtime.tools import TOOL_DEFINITIONS, ToolRunner
from cockpit.runtime.transcript import TranscriptWriter, now_iso

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.manager import SessionManager

S = SessionStatus
CACHE = {"type": "ephemeral"}


def cached_tools() -> list[dict]:
    tools = copy.deepcopy(TOOL_DEFINITIONS)
    tools[-1]["cache_control"] = dict(CACHE)
    return tools


def new_session_id() -> str:
    return secrets.token_hex(3)


class SessionFailure(Exception):
    """Ends a session in ``error``. ``kind`` as in ``SessionErrorEvent.kind``."""

    def __init__(self, kind: str, message: str, retryable: bool = False):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _block_to_param(block: Any) -> dict:
    t = getattr(block, "type", None)
    if t == "text":
        return {"type": "text", "text": block.text}
    if t == "tool_use":
        inp = block.input if isinstance(block.input, dict) else {}
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": inp}
    if t == "thinking":
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if t == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    return block.to_dict() if hasattr(block, "to_dict") else dict(block)


def _usage_of(msg: Any) -> Usage:
    u = getattr(msg, "usage", None)
    if u is None:
        return Usage()
    return Usage(
        input=u.input_tokens or 0,
        output=u.output_tokens or 0,
        cache_write=getattr(u, "cache_creation_input_tokens", None) or 0,
        cache_read=getattr(u, "cache_read_input_tokens", None) or 0,
    )


class Session:
    """A running (or finished) session. Read-only for consumers; drive it via the manager.

    Attributes: ``id`` (6 hex chars), ``task``, ``model``, ``workspace`` (Path), ``status``
    (SessionStatus), ``detail`` (str), ``usage`` (Usage, tokens summed over responses),
    ``cost_usd`` (USD, None when the model has no price), ``injected`` (tuple[InjectedNote]),
    ``preseed_text``, ``preseed_tokens``, ``transcript_path``, ``final_text`` (text of the last
    assistant turn), ``stop_reason``, ``error`` (SessionErrorEvent or None), ``messages`` (the
    conversation as sent), ``requests`` (model requests made), ``interactive``.
    """

    def __init__(
        self,
        manager: "SessionManager",
        *,
        task: str,
        model: str,
        workspace: Path,
        preseed_enabled: bool,
        top_k: int,
        interactive: bool,
        transcript_path: Path,
        session_id: str | None = None,
        messages: list[dict] | None = None,
        resumed_from: str | None = None,
        resumed_header: dict | None = None,
    ):
        self.id = session_id or new_session_id()
        self.task = task
        self.model = model
        self.workspace = Path(workspace)
        self.preseed_enabled = preseed_enabled
        self.top_k = top_k
        self.interactive = interactive
        self.transcript_path = Path(transcript_path)
        self.status: SessionStatus = S.QUEUED
        self.detail = ""
        self.usage = Usage()
        price = manager.pricing.lookup(model)
        self.cost_usd: float | None = 0.0 if price else None
        self.context_window = price.context_window if price else None
        self.injected: tuple[InjectedNote, ...] = ()
        self.preseed_text = ""
        self.preseed_tokens = 0
        self.final_text = ""
        self.stop_reason: str | None = None
        self.error: SessionErrorEvent | None = None
        self.messages: list[dict] = list(messages or [])
        self.requests = 0
        self.started_at = now_iso()
        self.resumed_from = resumed_from
        self._resumed_header = resumed_header or {}
        self._mgr = manager
        self._cfg = manager.config
        self._inbox: asyncio.Queue[str] = asyncio.Queue()
        self._tools = ToolRunner(self.workspace, manager.engine, top_k)
        self._tw: TranscriptWriter | None = None
        self._slot = False
        self._task: asyncio.Task | None = None

    # -- plumbing -------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<Session {self.id} {self.status.value} {self.model} {self.task[:30]!r}>"

    def _emit(self, event) -> None:
        self._mgr._publish(event)

    def _set(self, status: SessionStatus, detail: str = "") -> None:
        if status == self.status and detail == self.detail:
            return
        self.status, self.detail = status, detail
        if self._tw:
            self._tw.write("status", status=status.value, detail=detail)
        self._emit(StatusChanged(self.id, status, detail))

    def _record(self, type_: str, **fields) -> None:
        if self._tw:
            self._tw.write(type_, **fields)

    def _redact(self, text: str) -> str:
        key = self._cfg.api_key
        if key and len(key) >= 4:
            text = text.replace(key, "***")
        return text

    async def _acquire(self) -> None:
        sem = self._mgr._slots
        if sem.locked():
            self._set(S.QUEUED, "waiting for a free slot")
        await sem.acquire()
        self._slot = True

    def _release(self) -> None:
        if self._slot:
            self._slot = False
            self._mgr._slots.release()

    def _open_transcript(self) -> None:
        if self._tw is not None:
            return
        self._tw = TranscriptWriter(self.transcript_path)
        self._tw.write(
            "header",
            version=1,
            session_id=self.id,
            task=self.task,
            model=self.model,
            workspace=str(self.workspace),
            preseed_enabled=self.preseed_enabled,
            top_k=self.top_k,
            interactive=self.interactive,
            injected=[n.__dict__ for n in self.injected],
            preseed_text=self.preseed_text,
            preseed_tokens=self.preseed_tokens,
            system_prompt=prompts.system_prompt(self.preseed_enabled),
            started_at=self.started_at,
            resumed_from=self.resumed_from,
        )

    def _add_message(self, role: str, content: list[dict]) -> None:
        if role == "user" and self.messages and self.messages[-1]["role"] == "user":
            # e.g. a follow-up after the turn cap stopped after tool results: keep roles alternating
            self.messages[-1] = {"role": "user", "content": list(self.messages[-1]["content"]) + content}
        else:
            self.messages.append({"role": role, "content": content})
        self._record("message", role=role, content=content)

    # -- main loop ------------------------------------------------------------------------
    async def _run(self) -> None:
        final = S.DONE
        try:
            await self._acquire()
            self._set(S.STARTING)
            if self.resumed_from is not None:
                self._resume_setup()
            else:
                await self._preseed()
                self._open_transcript()
                self._add_message("user", prompts.first_user_content(self.task, self.preseed_text))
            need_model = not self.messages or self.messages[-1]["role"] == "user"
            while True:
                if need_model:
                    outcome = await self._turns()
                else:
                    outcome = ("resumed", "")
                need_model = True
                kind, detail = outcome
                if not self.interactive:
                    if kind == "turn_cap":
                        raise SessionFailure("turn_cap", detail)
                    break
                self._release()
                self._set(S.WAITING, detail)
                text = await self._inbox.get()
                await self._acquire()
                self._add_message("user", [{"type": "text", "text": text}])
        except asyncio.CancelledError:
            final = S.KILLED
        except SessionFailure as f:
            final = S.ERROR
            self._fail(f.kind, f.message)
        except Exception as exc:  # internal bug: keep other sessions alive, say what happened
            final = S.ERROR
            self._fail("internal", f"{type(exc).__name__}: {exc}")
        finally:
            self._release()
            self._finish(final)

    def _fail(self, kind: str, message: str) -> None:
        message = self._redact(_one_line(message))
        ev = SessionErrorEvent(self.id, message, kind)
        self.error = ev
        self._open_transcript()
        self._record("error", kind=kind, message=message)
        self._emit(ev)

    def _finish(self, status: SessionStatus) -> None:
        self._open_transcript()
        self.status = status
        self.detail = self.error.message if (status == S.ERROR and self.error) else self.detail
        self._record(
            "end",
            status=status.value,
            final_text=self.final_text,
            stop_reason=self.stop_reason,
            usage=self.usage.__dict__,
            cost_usd=self.cost_usd,
            requests=self.requests,
            ended_at=now_iso(),
        )
        if self._tw:
            self._tw.close()
        self._emit(StatusChanged(self.id, status, self.detail if status == S.ERROR else ""))
        self._emit(
            SessionDone(
                self.id,
                status,
                final_text=self.final_text,
                stop_reason=self.stop_reason,
                extra={"transcript_path": str(self.transcript_path), "requests": self.requests},
            )
        )

    def _resume_setup(self) -> None:
        h = self._resumed_header
        self.injected = tuple(InjectedNote(**n) for n in h.get("injected", []))
        self.preseed_text = h.get("preseed_text", "")
        self.preseed_tokens = h.get("preseed_tokens", 0)
        msgs, self.messages = self.messages, []
        self._open_transcript()
        for m in msgs:
            self._add_message(m["role"], m["content"])
        for m in reversed(self.messages):
            if m["role"] == "assistant":
                self.final_text = "".join(b.get("text", "") for b in m["content"] if b.get("type") == "text")
                break

    async def _preseed(self) -> None:
        engine = self._mgr.engine
        if not self.preseed_enabled:
            return
        info = None
        self._set(S.PRESEEDING)
        if engine is not None:
            try:
                if not getattr(engine, "ready", True):
                    self._set(S.PRESEEDING, "waiting for model warm-up and the first index sync")
                    await asyncio.to_thread(engine.wait_ready)
                    self._set(S.PRESEEDING)
                sel = selector_for(self._cfg)  # the model selector, when configured (issue 11)
                pre = await asyncio.to_thread(engine.build_preseed, self.task, self.top_k,
                                              **({"selector": sel} if sel is not None else {}))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # fail open, visibly
                self._set(S.PRESEEDING, _one_line(f"preseed failed, continuing without: {exc}"))
            else:
                self.preseed_text = pre.text or ""
                self.preseed_tokens = int(pre.tokens or 0)
                self.injected = tuple(
                    InjectedNote(h.name, float(h.score), bool(h.priority), h.description or "", str(h.path))
                    for h in pre.hits
                )
                info = self._account_selector(getattr(pre, "selector", None))
        self._emit(Preseeded(self.id, self.injected, self.preseed_tokens, self.preseed_text, info))

    def _account_selector(self, res) -> SelectorInfo | None:
        """Add a selector call's usage to the session's totals (transcript ``usage`` record with
        ``source: "selector"``, UsageUpdate) and describe it for the Preseeded event."""
        if res is None:
            return None
        u = Usage(res.usage.input, res.usage.output, res.usage.cache_write, res.usage.cache_read)
        cost = self._mgr.pricing.cost(res.model, u) if u.total else None
        if u.total:
            self.usage = self.usage + u
            if cost is not None and self.cost_usd is not None:
                self.cost_usd += cost
            self._open_transcript()  # the header (injected notes) is final by now
            self._record("usage", usage=u.__dict__, cost_usd=cost, model=res.model, source="selector")
            self._mgr._on_usage(u, cost)
            self._emit(UsageUpdate(self.id, u, self.usage, cost, self.cost_usd, context_window=self.context_window))
        return SelectorInfo(res.model, u, cost, res.latency_ms, None if res.names is None else len(res.names),
                            res.error)

    async def _turns(self) -> tuple[str, str]:
        """Model turns for one user message. Returns (kind, detail) with kind end|max_tokens|turn_cap."""
        cap = self._cfg.max_turns
        for _ in range(cap):
            msg = await self._call_model()
            content = [_block_to_param(b) for b in msg.content]
            self.stop_reason = msg.stop_reason
            text = "".join(b["text"] for b in content if b["type"] == "text")
            if msg.stop_reason == "max_tokens":
                content = [b for b in content if b["type"] != "tool_use"] or [
                    {"type": "text", "text": "(output cut at max_tokens)"}
                ]
                self._add_message("assistant", content)
                self.final_text = text
                detail = f"stopped: max_tokens reached ({self._cfg.max_tokens} output tokens)"
                self._set(self.status, detail)
                return "max_tokens", detail
            if not content:
                content = [{"type": "text", "text": "(empty response)"}]
            self._add_message("assistant", content)
            if text:
                self.final_text = text
            calls = [b for b in content if b["type"] == "tool_use"]
            if msg.stop_reason == "tool_use" and calls:
                await self._run_tools(msg, calls)
                continue
            return "end", ""
        detail = f"turn cap reached ({cap} model turns)"
        self._set(self.status, detail)
        return "turn_cap", detail

    async def _run_tools(self, msg: Any, calls: list[dict]) -> None:
        raw_inputs = {b.id: b.input for b in msg.content if getattr(b, "type", None) == "tool_use"}
        results = []
        for call in calls:
            raw = raw_inputs.get(call["id"], call["input"])
            self._set(S.RUNNING_TOOL, call["name"])
            self._record("tool_call", id=call["id"], name=call["name"], input=raw)
            self._emit(ToolCall(self.id, call["id"], call["name"], raw))
            out = await self._tools.run(call["name"], raw)
            self._record("tool_result", id=call["id"], name=call["name"], content=out.content, is_error=out.is_error)
            self._emit(ToolResult(self.id, call["id"], call["name"], out.content, out.is_error))
            block = {"type": "tool_result", "tool_use_id": call["id"], "content": out.content}
            if out.is_error:
                block["is_error"] = True
            results.append(block)
        self._add_message("user", results)

    # -- one model call -------------------------------------------------------------------
    def _request(self) -> dict:
        msgs = copy.deepcopy(self.messages)
        if msgs and msgs[-1]["content"]:
            msgs[-1]["content"][-1]["cache_control"] = dict(CACHE)
        return {
            "model": self.model,
            "max_tokens": self._cfg.max_tokens,
            "system": [
                {"type": "text", "text": prompts.system_prompt(self.preseed_enabled), "cache_control": dict(CACHE)}
            ],
            "tools": cached_tools(),
            "messages": msgs,
        }

    async def _call_model(self) -> Any:
        retries = self._cfg.interrupted_retries
        attempt = 0
        detail = ""
        while True:
            self._set(S.STREAMING, detail)
            try:
                msg = await self._stream_once()
            except SessionFailure as f:
                if f.retryable and attempt < retries:
                    attempt += 1
                    self._record("error", kind=f.kind, message=f.message, retrying=True)
                    detail = f"retry {attempt}/{retries} after {f.kind}: {_one_line(f.message, 80)}"
                    continue
                raise
            if msg.stop_reason is None:
                if attempt < retries:
                    attempt += 1
                    self._record("error", kind="interrupted", message="stream ended before message_stop", retrying=True)
                    detail = f"retry {attempt}/{retries}: stream interrupted before message_stop"
                    continue
                raise SessionFailure(
                    "interrupted", f"the response stream ended before message_stop ({attempt + 1} attempts)"
                )
            return msg

    def _account(self, msg: Any) -> None:
        u = _usage_of(msg)
        if u.total == 0:
            return
        self.usage = self.usage + u
        cost = self._mgr.pricing.cost(self.model, u)
        if cost is not None and self.cost_usd is not None:
            self.cost_usd += cost
        self._record(
            "usage", usage=u.__dict__, cost_usd=cost, stop_reason=getattr(msg, "stop_reason", None), model=self.model
        )
        self._mgr._on_usage(u, cost)
        self._emit(
            UsageUpdate(
                self.id,
                u,
                self.usage,
                cost,
                self.cost_usd,
                context_tokens=u.input + u.cache_read + u.cache_write,
                context_window=self.context_window,
            )
        )

    async def _stream_once(self) -> Any:
        if not self._cfg.api_key:
            raise SessionFailure("auth", "no API key: set ANTHROPIC_API_KEY in the environment")
        client = self._mgr._get_client()
        request = self._request()
        self.requests += 1
        stream = None
        try:
            async with client.messages.stream(**request) as stream:
                async for ev in stream:
                    if ev.type == "text" and ev.text:
                        self._emit(TextDelta(self.id, ev.text))
                msg = await stream.get_final_message()
        except asyncio.CancelledError:
            self._account_partial(stream)
            raise
        except anthropic.APIStatusError as exc:
            self._account_partial(stream)
            raise self._status_failure(exc) from None
        except anthropic.APIConnectionError as exc:
            self._account_partial(stream)
            if stream is not None:  # dropped mid-stream
                raise SessionFailure("interrupted", f"connection lost mid-stream: {exc}", retryable=True) from None
            where = self._cfg.base_url or "the Anthropic API"
            raise SessionFailure(
                "connection", f"cannot reach {where} after {self._cfg.max_retries} retries: {exc}"
            ) from None
        except httpx2.HTTPError as exc:
            self._account_partial(stream)
            raise SessionFailure("interrupted", f"stream broken: {type(exc).__name__}: {exc}", retryable=True) from None
        except ValueError as exc:  # e.g. invalid tool-input JSON from the model
            self._account_partial(stream)
            raise SessionFailure("api", f"unreadable response: {exc}", retryable=True) from None
        self._account(msg)
        return msg

    def _account_partial(self, stream) -> None:
        if stream is None:
            return
        try:
            snap = stream.current_message_snapshot
        except AssertionError:
            return
        self._account(snap)

    def _status_failure(self, exc: anthropic.APIStatusError) -> SessionFailure:
        status = exc.status_code
        etype = getattr(exc, "type", None) or ""
        api_msg = getattr(exc, "api_message", None) or ""
        tries = self._cfg.max_retries
        if status == 200:  # an `error` event inside a 200 stream
            kind = {"overloaded_error": "overloaded", "rate_limit_error": "rate_limit"}.get(etype, "api")
            retryable = etype in ("overloaded_error", "api_error")
            return SessionFailure(kind, f"error event mid-stream: {etype or 'error'}: {api_msg}", retryable)
        if status in (401, 403):
            return SessionFailure("auth", f"authentication failed ({status} {etype}): check ANTHROPIC_API_KEY")
        if status == 429:
            return SessionFailure("rate_limit", f"rate limited (429) after {tries} retries: {api_msg}")
        if status == 529 or etype == "overloaded_error":
            return SessionFailure("overloaded", f"API overloaded ({status}) after {tries} retries: {api_msg}")
        if status >= 500:
            return SessionFailure("api", f"server error {status} after {tries} retries: {api_msg}")
        return SessionFailure("api", f"API error {status} {etype}: {api_msg}")

    # -- manager-facing -------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"cockpit-session-{self.id}")

    def post(self, text: str) -> None:
        self._inbox.put_nowait(text)

    @property
    def is_idle(self) -> bool:
        return self.status.is_final or (self.status == S.WAITING and self._inbox.empty())

    def to_dict(self) -> dict:
        """JSON-ready summary (used by the headless report)."""
        return {
            "id": self.id,
            "task": self.task,
            "model": self.model,
            "workspace": str(self.workspace),
            "status": self.status.value,
            "stop_reason": self.stop_reason,
            "answer": self.final_text,
            "error": {"kind": self.error.kind, "message": self.error.message} if self.error else None,
            "preseed": self.preseed_enabled,
            "injected": [
                {"name": n.name, "priority": n.priority, "score": round(n.score, 4)} for n in self.injected
            ],
            "preseed_tokens": self.preseed_tokens,
            "usage": {**self.usage.__dict__, "total": self.usage.total},
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "requests": self.requests,
            "transcript": str(self.transcript_path),
        }
