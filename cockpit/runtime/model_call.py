"""One model request of a session: build it, stream it, count its ``usage``, map its failures.

- Streaming uses ``AsyncAnthropic.messages.stream``; text deltas are published as they arrive.
  ``usage`` is published live: the input side at ``message_start`` and the running output count
  at each ``message_delta`` (``UsageUpdate.partial``), then once more, final, when the message ends
  (only final figures enter the totals).
- A stream that ends without ``message_stop`` (``stop_reason`` None: the SDK does not raise) is
  an interrupted turn, never a finished one: :class:`ModelCaller` re-sends it
  ``interrupted_retries`` times, then fails with kind ``interrupted``.
- HTTP failures map to :class:`SessionFailure` kinds: ``auth`` (401/403), ``rate_limit`` (429),
  ``overloaded`` (529), ``api`` (5xx, other 4xx), ``connection``; ``tools_unsupported`` when the
  endpoint rejects Anthropic's client tool types (then ``--tools portable`` is the way out).
- Context: when the conversation passes half the model's window, requests go through the beta
  Messages API with ``context_management`` (``clear_tool_uses_20250919`` under the
  ``context-management-2025-06-27`` beta: old tool results are cleared server-side). An endpoint
  that refuses the beta is remembered and not asked again. A request the API refuses as too long
  raises :class:`ContextFull`.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cockpit.events import Retrying, TextDelta, Usage, UsageUpdate
from cockpit.runtime.protocols import SessionHost

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.config import RuntimeConfig

CACHE = {"type": "ephemeral"}
CONTEXT_BETA = "context-management-2025-06-27"
CM_FROM = 0.5  # share of the window from which context management is asked for
CM_TRIGGER = 0.7  # the server clears old tool results past this share
PARTIAL_EVERY_S = 0.25


class SessionFailure(Exception):
    """Ends a session in ``error``. ``kind`` as in ``SessionErrorEvent.kind``."""

    def __init__(self, kind: str, message: str, retryable: bool = False):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable


class ContextFull(Exception):
    """The conversation no longer fits the model's context window (message for the user)."""


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def block_to_param(block: Any) -> dict:
    """An SDK content block of a response as a request content block."""
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
    if hasattr(block, "to_dict"):
        return block.to_dict()
    return dict(block)


def usage_of(u: Any) -> Usage:
    if u is None:
        return Usage()
    return Usage(
        input=getattr(u, "input_tokens", None) or 0,
        output=getattr(u, "output_tokens", None) or 0,
        cache_write=getattr(u, "cache_creation_input_tokens", None) or 0,
        cache_read=getattr(u, "cache_read_input_tokens", None) or 0,
    )


@dataclass
class Accounting:
    """A session's running totals (tokens, USD) and context figures."""

    usage: Usage
    cost_usd: float | None
    context_window: int | None
    context_tokens: int = 0
    requests: int = 0


class ModelCaller:
    """Makes a session's model requests. ``emit`` publishes events (and the caller records them)."""

    def __init__(self, host: SessionHost, session_id: str, model: str, acct: Accounting,
                 emit: Callable[[Any], None], redact: Callable[[str], str],
                 config: RuntimeConfig | None = None):
        self.host = host
        self.cfg = config or host.config
        self.sid = session_id
        self.model = model
        self.acct = acct
        self.emit = emit
        self.redact = redact

    # -- the request -------------------------------------------------------------------------
    def build(self, system: str, tools: list[dict], messages: list[dict], instructions: str = "") -> dict:
        """The request: tools, the system prompt (cached: the same for every session), the
        project's instructions as a second cached system block (the same for every session of
        the project), and the conversation (its last block cached)."""
        msgs = copy.deepcopy(messages)
        if msgs and msgs[-1]["content"]:
            msgs[-1]["content"][-1]["cache_control"] = dict(CACHE)
        blocks = [{"type": "text", "text": system, "cache_control": dict(CACHE)}]
        if instructions:
            blocks.append({"type": "text", "text": instructions, "cache_control": dict(CACHE)})
        return {
            "model": self.model,
            "max_tokens": self.cfg.max_tokens,
            "system": blocks,
            "tools": tools,
            "messages": msgs,
        }

    def _use_context_management(self) -> bool:
        window = self.acct.context_window
        if not window or self.cfg.context_management == "off":
            return False
        if self.host.context_management_supported is False:
            return False
        return self.acct.context_tokens >= CM_FROM * window

    # -- with retries --------------------------------------------------------------------------
    async def call(self, request: dict, on_status: Callable[[str], None]) -> Any:
        """The final message of one turn (retrying interrupted streams). Raises SessionFailure,
        ContextFull."""
        retries = self.cfg.interrupted_retries
        attempt = 0
        detail = ""
        while True:
            on_status(detail)
            try:
                msg = await self._stream_once(request)
            except SessionFailure as f:
                if f.retryable and attempt < retries:
                    attempt += 1
                    self.emit(Retrying(self.sid, f.kind, f.message))
                    detail = f"retry {attempt}/{retries} after {f.kind}: {one_line(f.message, 80)}"
                    continue
                raise
            if msg.stop_reason is None:
                if attempt < retries:
                    attempt += 1
                    self.emit(Retrying(self.sid, "interrupted", "stream ended before message_stop"))
                    detail = f"retry {attempt}/{retries}: stream interrupted before message_stop"
                    continue
                raise SessionFailure(
                    "interrupted", f"the response stream ended before message_stop ({attempt + 1} attempts)"
                )
            return msg

    async def _stream_once(self, request: dict) -> Any:
        import anthropic
        import httpx2

        if not self.cfg.api_key:
            from cockpit.runtime.config import config_path

            raise SessionFailure("auth", "no API key where this session runs: set ANTHROPIC_API_KEY, or "
                                         f"api_key_helper in {config_path()}")
        client = self.host.client(self.cfg)
        managed = self._use_context_management()
        self.acct.requests += 1
        stream = None
        live = _Live()
        try:
            if managed:
                window = self.acct.context_window or 0
                cm = {"edits": [{
                    "type": "clear_tool_uses_20250919",
                    "trigger": {"type": "input_tokens", "value": int(window * CM_TRIGGER)},
                    "keep": {"type": "tool_uses", "value": 4},
                }]}
                ctx = client.beta.messages.stream(**request, betas=[CONTEXT_BETA], context_management=cm)
            else:
                ctx = client.messages.stream(**request)
            async with ctx as stream:
                async for ev in stream:
                    et = ev.type
                    if et == "text" and ev.text:
                        self.emit(TextDelta(self.sid, ev.text))
                    elif et == "message_start":
                        live.start = usage_of(ev.message.usage)
                        self._partial(live.start)
                    elif et == "message_delta" and getattr(ev, "usage", None) is not None:
                        live.output = getattr(ev.usage, "output_tokens", 0) or 0
                        now = time.monotonic()
                        if now - live.at >= PARTIAL_EVERY_S:
                            live.at = now
                            self._partial(live.current())
                msg = await stream.get_final_message()
        except asyncio.CancelledError:
            self._account_partial(stream)
            raise
        except anthropic.APIStatusError as exc:
            self._account_partial(stream)
            if managed and _refuses_beta(exc):
                self.host.set_context_management_supported(False)
                self.emit(Retrying(self.sid, "context_management", one_line(_api_message(exc))))
                return await self._stream_once(request)
            raise self._status_failure(exc) from None
        except anthropic.APIConnectionError as exc:
            self._account_partial(stream)
            if stream is not None:
                raise SessionFailure("interrupted", f"connection lost mid-stream: {exc}", retryable=True) from None
            where = self.cfg.base_url or "the Anthropic API"
            raise SessionFailure(
                "connection", f"cannot reach {where} after {self.cfg.max_retries} retries: {exc}"
            ) from None
        except httpx2.HTTPError as exc:
            self._account_partial(stream)
            raise SessionFailure("interrupted", f"stream broken: {type(exc).__name__}: {exc}", retryable=True) from None
        except ValueError as exc:  # e.g. invalid tool-input JSON from the model
            self._account_partial(stream)
            raise SessionFailure("api", f"unreadable response: {exc}", retryable=True) from None
        if managed:
            self.host.set_context_management_supported(True)
        self.account(msg)
        return msg

    # -- usage -----------------------------------------------------------------------------
    def _partial(self, u: Usage) -> None:
        cost = self.host.pricing.cost(self.model, u)
        total_cost = None if self.acct.cost_usd is None else self.acct.cost_usd + (cost or 0.0)
        self.emit(UsageUpdate(self.sid, u, self.acct.usage + u, cost, total_cost,
                              context_tokens=u.input + u.cache_read + u.cache_write,
                              context_window=self.acct.context_window, partial=True))

    def account(self, msg: Any) -> None:
        """Count a finished (or abandoned) response's usage: totals, transcript, event."""
        u = usage_of(getattr(msg, "usage", None))
        if u.total == 0:
            return
        acct = self.acct
        acct.usage = acct.usage + u
        cost = self.host.pricing.cost(self.model, u)
        if cost is not None and acct.cost_usd is not None:
            acct.cost_usd += cost
        acct.context_tokens = u.input + u.cache_read + u.cache_write + u.output
        self.host.add_usage(u, cost)
        self.emit(UsageUpdate(self.sid, u, acct.usage, cost, acct.cost_usd,
                              context_tokens=acct.context_tokens, context_window=acct.context_window,
                              model=self.model, stop_reason=getattr(msg, "stop_reason", None)))

    def _account_partial(self, stream: Any) -> None:
        if stream is None:
            return
        try:
            snap = stream.current_message_snapshot
        except (AssertionError, AttributeError):
            return
        self.account(snap)

    def _status_failure(self, exc: Any) -> SessionFailure:
        status = exc.status_code
        etype = getattr(exc, "type", None) or ""
        api_msg = _api_message(exc)
        tries = self.cfg.max_retries
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
        low = api_msg.lower()
        if status in (400, 413) and ("prompt is too long" in low or "context window" in low
                                     or "context length" in low or "too many tokens" in low):
            raise ContextFull(f"the conversation no longer fits the model's context window ({api_msg})")
        if status in (400, 422) and _rejects_client_tools(low):
            where = self.cfg.base_url or "the Messages API"
            return SessionFailure(
                "tools_unsupported",
                f"{where} rejected Anthropic's client tool types (bash_20250124, text_editor_20250728): "
                f"{api_msg}. Rerun with --tools portable (plain JSON-schema tools with the same names)",
            )
        hint = v1_hint(self.cfg.base_url) if status == 404 else ""
        return SessionFailure("api", f"API error {status} {etype}: {api_msg}{hint}")


def v1_hint(base_url: str | None) -> str:
    """For a 404: the hint when ``base_url`` ends in ``/v1`` (the SDK appends ``/v1/messages``
    itself, so the request went to ``…/v1/v1/messages``)."""
    if base_url and base_url.rstrip("/").endswith("/v1"):
        return (f" — base_url {base_url} ends in /v1 and the client adds /v1/messages itself: "
                f"drop the trailing /v1 (base_url = \"{base_url.rstrip('/')[:-3]}\")")
    return ""


class _Live:
    def __init__(self) -> None:
        self.start = Usage()
        self.output = 0
        self.at = 0.0

    def current(self) -> Usage:
        return Usage(self.start.input, self.output, self.start.cache_write, self.start.cache_read)


def _api_message(exc: Any) -> str:
    msg = getattr(exc, "api_message", None)
    if msg:
        return str(msg)
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error") if isinstance(body.get("error"), dict) else body
        return str(err.get("message", "")) if isinstance(err, dict) else ""
    return str(exc)


def _refuses_beta(exc: Any) -> bool:
    if getattr(exc, "status_code", 0) not in (400, 404, 422):
        return False
    low = _api_message(exc).lower()
    return any(k in low for k in ("context_management", "context-management", "anthropic-beta", "beta"))


def _rejects_client_tools(low: str) -> bool:
    return any(k in low for k in ("bash_20250124", "text_editor_20250728", "tools.0", "tools[0]", "tool type",
                                  "input_schema", "tools.1", "tools[1]"))
