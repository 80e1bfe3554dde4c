"""The model-based preseed selector: a small fast model picks, from the engine's shortlist, the
notes a task needs (``preseed.selector = "model"`` in ``config.toml``, ``--selector model``,
``COCKPIT_SELECTOR=model``; off by default).

It implements :class:`memory.selector.Selector`. One Messages API call per spawn, with the same
API key and base URL as the sessions (:class:`~cockpit.runtime.config.RuntimeConfig`) and the
official ``anthropic`` SDK (synchronous client: ``build_preseed`` runs in a worker thread):

* **Request.** ``system``: fixed instructions carrying ``cache_control`` (the stable prefix —
  the API caches a prefix only above the model's minimum cacheable length, 1024–4096 tokens,
  so today's ~250-token instructions are marked but in practice not cached); ``messages``: one
  user message with the task and the shortlist (``SHORTLIST`` = 30 notes, name + description,
  about 1.3k tokens whatever the size of the notes folder). ``max_tokens`` 400, no retries.
* **Answer.** Strict JSON: one object ``{"notes": ["name", …]}`` (a ```json fence around it is
  tolerated), names exactly as listed. Unlisted names are dropped; an answer naming only
  unlisted notes, any other shape, a cut answer, a timeout (``selector_timeout``, default 5 s),
  429/529/5xx or a connection error → ``names=None`` and the engine falls back to its embedded
  selection. ``{"notes": []}`` → no block (the selector is also the gate).
* **Cost.** ``SelectorResult.usage`` is the response's ``usage`` (also for an answer that was
  then discarded); the session adds it to its totals and the pane shows it as "selector".
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

from memory.selector import SelectorCandidate, SelectorResult, SelectorUsage

DEFAULT_SELECTOR_MODEL = "claude-haiku-5-5"
_NO_USAGE = SelectorUsage()
DEFAULT_TIMEOUT_S = 5.0
MAX_TOKENS = 400

INSTRUCTIONS = """\
You select project notes for an AI coding session that is about to start a task. You get the \
task and a shortlist of notes from the project's memory, one per line as "name: description".

Choose every note the session needs to do this task right:
- notes that answer what the task asks, and
- conventions, rules and decisions the work must follow even though the task does not name \
them (how this project writes endpoints, errors, migrations, tests, deploys, reviews, and so on).
Leave out notes about other topics, other services or other kinds of work. When none applies, \
choose none: an empty answer is better than an unrelated note.

Answer with one JSON object and nothing else, using names exactly as listed:
{"notes": ["note-name", "other-note"]}
or, when no note applies:
{"notes": []}"""

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def user_message(task: str, candidates: Sequence[SelectorCandidate]) -> str:
    """The per-call part of the request: the task, then the shortlist."""
    lines = "\n".join(f"{c.name}: {' '.join(c.description.split())}" for c in candidates)
    return f"<task>\n{task.strip()}\n</task>\n\n<notes>\n{lines}\n</notes>"


def parse_answer(text: str, listed: Sequence[str]) -> tuple[list[str] | None, str | None]:
    """``(names, error)`` from the model's text: names in the shortlist (matched
    case-insensitively, returned as listed), or ``(None, reason)`` for an unusable answer."""
    s = text.strip()
    m = _FENCE.match(s)
    if m:
        s = m.group(1)
    try:
        data = json.loads(s)
    except ValueError:
        return None, f"malformed answer: not JSON: {' '.join(text.split())[:80]!r}"
    if not isinstance(data, dict) or not isinstance(data.get("notes"), list) \
            or not all(isinstance(n, str) for n in data["notes"]):
        return None, 'malformed answer: expected {"notes": [names]}'
    by_key = {n.casefold(): n for n in listed}
    names = list(dict.fromkeys(by_key[n.strip().casefold()] for n in data["notes"]
                               if n.strip().casefold() in by_key))
    if data["notes"] and not names:
        return None, "malformed answer: it names no shortlisted note"
    return names, None


def _usage(msg: Any) -> SelectorUsage:
    u = getattr(msg, "usage", None)
    if u is None:
        return SelectorUsage()
    return SelectorUsage(input=u.input_tokens or 0, output=u.output_tokens or 0,
                         cache_write=getattr(u, "cache_creation_input_tokens", None) or 0,
                         cache_read=getattr(u, "cache_read_input_tokens", None) or 0)


class ModelSelector:
    """A :class:`memory.selector.Selector` over the Messages API (see module docstring).

    ``api_key``/``base_url``: as the sessions use them. ``model``: the selector's model id
    (default ``DEFAULT_SELECTOR_MODEL``). ``timeout``: seconds for the whole call, after which
    the engine falls back. ``client``: an ``anthropic.Anthropic`` to use instead (tests).
    ``select`` never raises; it never logs or returns the API key."""

    def __init__(self, *, api_key: str | None, base_url: str | None = None,
                 model: str = DEFAULT_SELECTOR_MODEL, timeout: float = DEFAULT_TIMEOUT_S,
                 client: Any = None, auth_token: str | None = None):
        self.model = model
        self.timeout = timeout
        self._api_key = api_key
        self._auth_token = auth_token
        self._base_url = base_url
        self._client = client
        self._lock = threading.Lock()

    def _get_client(self):
        with self._lock:
            if self._client is None:
                import anthropic

                cred = ({"api_key": self._api_key} if self._api_key or not self._auth_token
                        else {"auth_token": self._auth_token})  # the SDK takes one credential
                self._client = anthropic.Anthropic(**cred, base_url=self._base_url,
                                                   max_retries=0, timeout=self.timeout)
            return self._client

    def request(self, task: str, candidates: Sequence[SelectorCandidate]) -> dict:
        """The Messages API request body for one selection."""
        return {
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "system": [{"type": "text", "text": INSTRUCTIONS, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": user_message(task, candidates)}],
        }

    def select(self, task: str, candidates: Sequence[SelectorCandidate]) -> SelectorResult:
        import anthropic

        t0 = time.perf_counter()

        def done(names, usage=_NO_USAGE, error=None, model=self.model) -> SelectorResult:
            return SelectorResult(names, usage, (time.perf_counter() - t0) * 1000, model, error)

        if not candidates:
            return done([])
        if not self._api_key:
            return done(None, error="no API key: set ANTHROPIC_API_KEY")
        try:
            msg = self._get_client().messages.create(**self.request(task, candidates))
        except anthropic.APITimeoutError:
            return done(None, error=f"timeout: no answer within {self.timeout:g} s")
        except anthropic.APIStatusError as exc:
            etype = getattr(exc, "type", None) or ""
            return done(None, error=f"HTTP {exc.status_code}: {etype or 'error'}")
        except anthropic.APIConnectionError as exc:
            return done(None, error=f"connection: {' '.join(str(exc).split())[:120]}")
        except Exception as exc:  # a selector never breaks a spawn
            return done(None, error=f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}")
        usage = _usage(msg)
        model = getattr(msg, "model", None) or self.model
        if getattr(msg, "stop_reason", None) == "max_tokens":
            return done(None, usage, "malformed answer: cut at max_tokens", model)
        text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", "") == "text")
        names, error = parse_answer(text, [c.name for c in candidates])
        return done(names, usage, error, model)


_cache: dict[tuple, ModelSelector] = {}
_cache_lock = threading.Lock()


def selector_for(config) -> ModelSelector | None:
    """The selector a :class:`~cockpit.runtime.config.RuntimeConfig` asks for: a shared
    :class:`ModelSelector` when ``config.selector == "model"`` (one client per key, base URL,
    model and timeout), else None."""
    if getattr(config, "selector", "embedded") != "model":
        return None
    key = (config.api_key, getattr(config, "auth_token", None), config.base_url, config.selector_model,
           config.selector_timeout)
    with _cache_lock:
        sel = _cache.get(key)
        if sel is None:
            sel = _cache[key] = ModelSelector(api_key=config.api_key, auth_token=key[1], base_url=config.base_url,
                                              model=config.selector_model,
                                              timeout=config.selector_timeout)
        return sel
