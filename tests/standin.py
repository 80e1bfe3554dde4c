"""A local stand-in for the Anthropic Messages API: real HTTP + SSE on 127.0.0.1.

Speaks the wire format the ``anthropic`` SDK (and the Claude Code CLI, through
``ANTHROPIC_BASE_URL``) expects (``POST /v1/messages`` with ``stream: true``
→ ``message_start``, ``content_block_*`` with ``text_delta`` / ``input_json_delta``,
``message_delta`` with ``usage``, ``message_stop``; error bodies ``{"type": "error", "error":
{...}}``; ``POST /v1/messages/count_tokens``), so the real client runs end to end.

Use from a test (``tests/`` is on ``sys.path`` under pytest, so ``import standin`` works)::

    from standin import StandIn, Reply, ToolUse, HTTPError

    with StandIn() as api:                       # random port, background thread
        api.script(                              # turns consumed in order by /v1/messages
            HTTPError(429),                      # 429 + retry-after-ms: 1 (SDK retries at once)
            Reply(tool_uses=[ToolUse("str_replace_based_edit_tool", {"command": "view", "path": "README.md"})]),
            Reply("The answer is 42."),
        )
        client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="test-key")
        ...
        api.message_requests[0]["messages"]      # JSON bodies the stand-in received, in order

When the script is empty the ``responder`` answers (default :class:`FactResponder`, a tiny
"model" that answers from the facts in the conversation it receives — see its docstring).
Pass ``responder=callable(body) -> Turn`` to replace it.

Turns: :class:`Reply` (text and/or tool calls; ``cut_after`` / ``error_after`` / ``stall_after``
inject stream faults), :class:`HTTPError` (status + error body). ``tokens_per_second`` paces
text deltas (one delta ≈ one word ≈ one token) for benchmarks; ``None`` = as fast as possible.

Usage: ``input_tokens`` ≈ characters/4 of the request; prompt caching is simulated: a prefix
ending at a ``cache_control`` breakpoint is "written" the first time (``cache_creation_input_tokens``)
and "read" afterwards (``cache_read_input_tokens``) — no minimum length, no TTL.

Standalone: ``python tests/standin.py --port 8765`` (or ``python -m tests.standin``) serves the
FactResponder until Ctrl-C.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["StandIn", "Reply", "ToolUse", "HTTPError", "FactResponder", "Turn"]


# --------------------------------------------------------------------------------------------
# Turns
# --------------------------------------------------------------------------------------------
@dataclass
class ToolUse:
    """One ``tool_use`` block. ``raw_json`` (when set) is sent verbatim as the input JSON
    (to test bad input); else ``json.dumps(input)`` split in a few ``input_json_delta`` parts."""

    name: str
    input: Any = field(default_factory=dict)
    id: str | None = None
    raw_json: str | None = None


@dataclass
class Reply:
    """A streamed assistant response.

    ``stop_reason`` None → ``"tool_use"`` when there are tool calls, else ``"end_turn"``.
    ``usage``: dict with any of ``input``, ``output``, ``cache_write``, ``cache_read`` to report
    instead of the computed numbers. Faults (counted in SSE events sent, ``message_start`` = 1):
    ``cut_after=N`` closes the connection after N events (no ``message_stop``);
    ``error_after=N`` sends an ``error`` event (``error_type``) after N events, then closes;
    ``stall_after=N`` stops after N events until :meth:`StandIn.release` or shutdown.
    ``delay``: seconds before the response starts.
    """

    text: str = ""
    tool_uses: list[ToolUse] = field(default_factory=list)
    stop_reason: str | None = None
    usage: dict | None = None
    cut_after: int | None = None
    error_after: int | None = None
    error_type: str = "overloaded_error"
    stall_after: int | None = None
    delay: float = 0.0


@dataclass
class HTTPError:
    """A non-200 response with the API's error body. 429/5xx get ``retry-after-ms: 1`` unless
    ``headers`` says otherwise (so the SDK's retries are fast in tests)."""

    status: int
    error_type: str | None = None
    message: str = ""
    headers: dict | None = None

    def body(self) -> dict:
        etype = self.error_type or {
            400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
            404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error",
        }.get(self.status, "api_error")
        return {"type": "error", "error": {"type": etype, "message": self.message or etype.replace("_", " ")}}


Turn = Reply | HTTPError


# --------------------------------------------------------------------------------------------
# The default responder: a tiny model-like behaviour
# --------------------------------------------------------------------------------------------
_STOP = set(
    "what which when where who whom whose why how does do did with from that this there their "
    "they them then than into onto about and the for are was were will would should could have "
    "has had our your you we us run runs use using".split()
)


def _texts(content) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    for b in content or []:
        if b.get("type") == "text":
            out.append(b.get("text", ""))
    return out


def _user_texts(content) -> list[str]:
    """Text a user typed or was given: Claude Code's ``<system-reminder>`` blocks and Cockpit's
    ``<env>`` block left out."""
    return [t for t in _texts(content) if not t.lstrip().startswith(("<env>", "<system-reminder>"))]


def _tool_result_text(block) -> str:
    c = block.get("content", "")
    if isinstance(c, list):
        return "\n".join(_texts(c))
    return str(c)


EDITOR = "str_replace_based_edit_tool"
READ = "Read"  # Claude Code's file tool
_HOOK_CONTEXT = re.compile(r"\w+ hook additional context: ")
_SEARCH_FIRST = re.compile(r"start by calling (?:mcp__\w+?__)?memory_search")


class FactResponder:
    """Answers like a (very literal) model, from what the conversation it receives holds.

    - The question is the latest user text (the task in the first message, or a follow-up).
    - Memory = text blocks of the first user message before the task (the preseed block; an
      ``<env>`` block and Claude Code's ``<system-reminder>`` blocks are skipped), what a prompt
      hook added (Claude Code puts it in a message of role ``system``, after "UserPromptSubmit hook
      additional context:"), successful
      ``memory_search`` results (any tool whose name ends in ``memory_search``, e.g. Claude Code's
      ``mcp__cockpit__memory_search``). If memory has lines relevant to the question
      (sharing a keyword), it answers with those lines ("Based on the project notes: …").
    - Otherwise, if ``obey_search_instruction`` and the system prompt tells it to call
      ``memory_search`` (or ``mcp__<server>__memory_search``) and it has not, it calls the memory
      search tool the request offers with the question.
    - Otherwise it reads the workspace ``README.md`` once — with the text editor tool
      (``str_replace_based_edit_tool``, ``view``), or with Claude Code's ``Read`` when the request
      offers that and not the editor — and answers from the relevant lines there
      ("Based on README.md: …"), or says it found nothing.
    Deterministic; no randomness.
    """

    def __init__(self, obey_search_instruction: bool = True, readme: str = "README.md"):
        self.obey_search_instruction = obey_search_instruction
        self.readme = readme

    @staticmethod
    def keywords(question: str) -> set[str]:
        words = re.findall(r"[a-z0-9][a-z0-9_-]*", question.lower())
        return {w for w in words if len(w) >= 4 and w not in _STOP}

    @staticmethod
    def relevant(texts: list[str], keys: set[str]) -> list[str]:
        out: list[str] = []
        for t in texts:
            for line in t.splitlines():
                s = line.strip()
                if s and any(k in s.lower() for k in keys) and s not in out:
                    out.append(s)
        return out[:10]

    def __call__(self, body: dict) -> Turn:
        msgs = body.get("messages", [])
        system = "\n".join(_texts(body.get("system"))) if not isinstance(body.get("system"), str) else body["system"]
        names: dict[str, str] = {}
        called: set[str] = set()
        for m in msgs:
            if m["role"] == "assistant" and isinstance(m["content"], list):
                for b in m["content"]:
                    if b.get("type") == "tool_use":
                        names[b["id"]] = b["name"]
                        called.add(b["name"])
        offered = [t.get("name", "") for t in body.get("tools") or []]
        search_tool = next((n for n in offered if n.endswith("__memory_search")), "memory_search")
        file_tool = READ if READ in offered and EDITOR not in offered else EDITOR
        question, memory, files = "", [], []
        for i, m in enumerate(msgs):
            if m["role"] == "system":  # Claude Code's context message: what a prompt hook added
                memory.extend(part for t in _texts(m["content"]) for part in _HOOK_CONTEXT.split(t)[1:])
                continue
            if m["role"] != "user":
                continue
            texts = _user_texts(m["content"])
            if texts:
                question = texts[-1]
                if i == 0:
                    memory.extend(texts[:-1])
            if isinstance(m["content"], list):
                for b in m["content"]:
                    if b.get("type") == "tool_result" and not b.get("is_error"):
                        tool = names.get(b.get("tool_use_id"), "")
                        if tool.endswith("memory_search"):
                            memory.append(_tool_result_text(b))
                        elif tool in (EDITOR, READ):
                            files.append(re.sub(r"(?m)^ *\d+\t", "", _tool_result_text(b)))
        keys = self.keywords(question)
        lines = self.relevant(memory, keys)
        if lines:
            return Reply("Based on the project notes:\n" + "\n".join(f"- {line}" for line in lines))
        if (self.obey_search_instruction and _SEARCH_FIRST.search(system.lower())
                and not any(n.endswith("memory_search") for n in called)):
            return Reply("Searching the notes first.", [ToolUse(search_tool, {"query": question})])
        if EDITOR not in called and READ not in called:
            view = {"file_path": self.readme} if file_tool == READ else {"command": "view", "path": self.readme}
            return Reply("Let me read the README.", [ToolUse(file_tool, view)])
        lines = self.relevant(files, keys)
        if lines:
            return Reply(f"Based on {self.readme}:\n" + "\n".join(f"- {line}" for line in lines))
        return Reply("I could not find that in the notes or the workspace.")


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------
def _tokens(obj) -> int:
    s = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, ensure_ascii=False)
    return max(1, len(s) // 4)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict
    body: Any


class StandIn:
    """The server. ``StandIn(responder=None, tokens_per_second=None, require_key=None,
    host="127.0.0.1", port=0)``; ``start()``/``stop()`` or use as a context manager.

    ``require_key``: when set, requests whose ``x-api-key`` / ``Authorization: Bearer`` differ get
    401. ``log_path``: append every POST as one JSON line (``{"path", "body"}``) to that file. Attributes: ``base_url``, ``requests`` (every :class:`RecordedRequest`),
    ``message_requests`` (JSON bodies of ``POST /v1/messages``), ``turns_served``.
    Thread-safe; handlers run in server threads.
    """

    def __init__(
        self,
        responder: Callable[[dict], Turn] | None = None,
        *,
        tokens_per_second: float | None = None,
        require_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: str | None = None,
        exact_paths: bool = False,
    ):
        self.exact_paths = exact_paths  # 404 for any path but /v1/messages (…/v1/v1/messages too)
        self.responder = responder or FactResponder()
        self.tokens_per_second = tokens_per_second
        self.require_key = require_key
        self.requests: list[RecordedRequest] = []
        self._script: list[Turn] = []
        self._lock = threading.Lock()
        self._cache: set[str] = set()
        self._release = threading.Event()
        self._ids = itertools.count(1)
        self._host, self._port = host, port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.turns_served = 0
        self.log_path = log_path

    # -- control ----------------------------------------------------------------------------
    def script(self, *turns: Turn) -> StandIn:
        """Append turns to the FIFO script (used before the responder)."""
        with self._lock:
            self._script.extend(turns)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def release(self) -> None:
        """Let stalled replies (``stall_after``) continue."""
        self._release.set()

    @property
    def message_requests(self) -> list[dict]:
        with self._lock:
            return [r.body for r in self.requests if r.path.rstrip("/").endswith("/v1/messages") and r.method == "POST"]

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> StandIn:
        standin = self

        class Handler(_Handler):
            owner = standin

        self._server = ThreadingHTTPServer((self._host, self._port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- internals --------------------------------------------------------------------------
    def _next_turn(self, body: dict) -> Turn:
        with self._lock:
            turn = self._script.pop(0) if self._script else None
            self.turns_served += 1
        return turn if turn is not None else self.responder(body)

    def _usage_for(self, body: dict) -> dict:
        """Input/caching numbers for a request, simulating prompt caching at breakpoints."""
        parts: list[tuple[Any, bool]] = []
        for t in body.get("tools") or []:
            parts.append((t, "cache_control" in t))
        system = body.get("system")
        if isinstance(system, str):
            parts.append((system, False))
        else:
            for b in system or []:
                parts.append((b, "cache_control" in b))
        for m in body.get("messages", []):
            content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
            for b in content:
                parts.append(({"role": m["role"], **b}, "cache_control" in b))
        h = hashlib.sha1(body.get("model", "").encode())
        total = 0
        breakpoints: list[tuple[str, int]] = []
        for obj, bp in parts:
            clean = {k: v for k, v in obj.items() if k != "cache_control"} if isinstance(obj, dict) else obj
            h.update(json.dumps(clean, sort_keys=True).encode())
            total += _tokens(clean)
            if bp:
                breakpoints.append((h.hexdigest(), total))
        read = write = 0
        with self._lock:
            hits = [tok for key, tok in breakpoints if key in self._cache]
            read = max(hits) if hits else 0
            if breakpoints and breakpoints[-1][0] not in self._cache:
                write = breakpoints[-1][1] - read
            for key, _ in breakpoints:
                self._cache.add(key)
        return {"input": total - read - write, "cache_write": write, "cache_read": read}


class _Handler(BaseHTTPRequestHandler):
    owner: StandIn
    protocol_version = "HTTP/1.0"  # SSE bodies end when the connection closes

    def log_message(self, *args) -> None:  # quiet
        pass

    def _json(self, status: int, obj: dict, headers: dict | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_standin_{next(self.owner._ids)}")
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.owner.requests.append(RecordedRequest("GET", self.path, dict(self.headers), None))
        if self.path.startswith("/v1/models"):
            self._json(200, {"data": [{"type": "model", "id": "standin-model", "display_name": "Stand-in"}],
                             "has_more": False, "first_id": "standin-model", "last_id": "standin-model"})
        else:
            self._json(404, HTTPError(404).body())

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        path = self.path.split("?")[0].rstrip("/")
        with self.owner._lock:
            self.owner.requests.append(RecordedRequest("POST", path, dict(self.headers), body))
            if self.owner.log_path:
                with open(self.owner.log_path, "a", encoding="utf-8") as log:
                    log.write(json.dumps({"path": path, "body": body}, ensure_ascii=False) + "\n")
        if self.owner.require_key is not None:
            key = self.headers.get("x-api-key") or (self.headers.get("authorization") or "").removeprefix("Bearer ")
            if key != self.owner.require_key:
                return self._json(401, HTTPError(401, message="invalid x-api-key").body())
        if body is None:
            return self._json(400, HTTPError(400, message="body is not JSON").body())
        if path.endswith("/v1/messages/count_tokens"):
            u = _tokens({k: body.get(k) for k in ("system", "tools", "messages")})
            return self._json(200, {"input_tokens": u})
        if not path.endswith("/v1/messages") or (self.owner.exact_paths and path != "/v1/messages"):
            return self._json(404, HTTPError(404).body())
        if "model" not in body or "messages" not in body or "max_tokens" not in body:
            return self._json(400, HTTPError(400, message="model, messages and max_tokens are required").body())
        turn = self.owner._next_turn(body)
        if isinstance(turn, HTTPError):
            headers = turn.headers
            if headers is None and (turn.status == 429 or turn.status >= 500):
                headers = {"retry-after-ms": "1", "retry-after": "0"}
            return self._json(turn.status, turn.body(), headers)
        if turn.delay:
            time.sleep(turn.delay)
        try:
            if body.get("stream"):
                self._stream(body, turn)
            else:
                self._json(200, self._message_json(body, turn))
        except (BrokenPipeError, ConnectionResetError):
            pass

    # -- responses --------------------------------------------------------------------------
    def _plan(self, body: dict, turn: Reply):
        """(usage dict, list of (event_name, data, is_text_delta))."""
        msg_id = f"msg_standin_{next(self.owner._ids)}"
        computed = self.owner._usage_for(body)
        events: list[tuple[str, dict, bool]] = []
        idx = 0
        out_tokens = 0
        blocks = []
        if turn.text:
            chunks = re.findall(r"\S+\s*|\s+", turn.text)
            out_tokens += len(chunks)
            events.append(("content_block_start", {"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}}, False))
            for c in chunks:
                events.append(("content_block_delta", {"type": "content_block_delta", "index": idx, "delta": {"type": "text_delta", "text": c}}, True))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": idx}, False))
            blocks.append({"type": "text", "text": turn.text})
            idx += 1
        for tu in turn.tool_uses:
            tid = tu.id or f"toolu_standin_{next(self.owner._ids)}"
            js = tu.raw_json if tu.raw_json is not None else json.dumps(tu.input)
            out_tokens += _tokens(js) + 5
            events.append(("content_block_start", {"type": "content_block_start", "index": idx, "content_block": {"type": "tool_use", "id": tid, "name": tu.name, "input": {}}}, False))
            step = max(1, len(js) // 3)
            for i in range(0, len(js), step):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": idx, "delta": {"type": "input_json_delta", "partial_json": js[i:i + step]}}, False))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": idx}, False))
            blocks.append({"type": "tool_use", "id": tid, "name": tu.name, "input": tu.input})
            idx += 1
        u = dict(computed, output=max(1, out_tokens))
        if turn.usage:
            u.update(turn.usage)
        stop = turn.stop_reason or ("tool_use" if turn.tool_uses else "end_turn")
        usage_start = {"input_tokens": u["input"], "output_tokens": 1,
                       "cache_creation_input_tokens": u["cache_write"], "cache_read_input_tokens": u["cache_read"]}
        start = {"type": "message_start", "message": {"id": msg_id, "type": "message", "role": "assistant",
                 "model": body["model"], "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage_start}}
        events.insert(0, ("message_start", start, False))
        events.insert(1, ("ping", {"type": "ping"}, False))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": u["output"], "input_tokens": u["input"],
                                                   "cache_creation_input_tokens": u["cache_write"],
                                                   "cache_read_input_tokens": u["cache_read"]}}, False))
        events.append(("message_stop", {"type": "message_stop"}, False))
        message = {"id": msg_id, "type": "message", "role": "assistant", "model": body["model"], "content": blocks,
                   "stop_reason": stop, "stop_sequence": None,
                   "usage": {**usage_start, "output_tokens": u["output"]}}
        return message, events

    def _message_json(self, body: dict, turn: Reply) -> dict:
        message, _ = self._plan(body, turn)
        return message

    def _stream(self, body: dict, turn: Reply) -> None:
        _, events = self._plan(body, turn)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", f"req_standin_{next(self.owner._ids)}")
        self.end_headers()
        tps = self.owner.tokens_per_second
        for n, (name, data, is_text) in enumerate(events):
            if turn.cut_after is not None and n >= turn.cut_after:
                break
            if turn.error_after is not None and n >= turn.error_after:
                err = {"type": "error", "error": {"type": turn.error_type, "message": f"{turn.error_type} (stand-in)"}}
                self.wfile.write(f"event: error\ndata: {json.dumps(err)}\n\n".encode())
                self.wfile.flush()
                break
            if turn.stall_after is not None and n >= turn.stall_after:
                self.owner._release.wait(timeout=60)
                turn.stall_after = None
            if is_text and tps:
                time.sleep(1.0 / tps)
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()


def load_script(path: str) -> list[Turn]:
    """Turns from a JSON file: a list of ``{"text", "tool_uses": [{"name", "input"}], "stop_reason",
    "usage"}`` (a reply) or ``{"status": 429, "message": "..."}`` (an HTTP error)."""
    with open(path, encoding="utf-8") as fh:
        items = json.load(fh)
    turns: list[Turn] = []
    for item in items:
        if "status" in item:
            turns.append(HTTPError(int(item["status"]), item.get("error_type"), item.get("message", "")))
        else:
            uses = [ToolUse(u["name"], u.get("input", {})) for u in item.get("tool_uses", [])]
            turns.append(Reply(item.get("text", ""), uses, item.get("stop_reason"), item.get("usage")))
    return turns


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Local Anthropic Messages API stand-in (FactResponder).")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--tokens-per-second", type=float, default=None)
    ap.add_argument("--require-key", default=None, help="answer 401 unless this API key is sent")
    ap.add_argument("--log", default=None, metavar="FILE",
                    help="append every request received (path and JSON body) to FILE, one JSON line each")
    ap.add_argument("--no-search-instruction", action="store_true",
                    help="ignore a system prompt's 'start by calling memory_search' (a lazy model)")
    ap.add_argument("--script", metavar="FILE", default=None,
                    help="a JSON list of turns served in order before the responder: "
                         '{"text": "...", "tool_uses": [{"name": "bash", "input": {...}}], "stop_reason": null}')
    args = ap.parse_args(argv)
    s = StandIn(FactResponder(obey_search_instruction=not args.no_search_instruction),
                tokens_per_second=args.tokens_per_second, require_key=args.require_key,
                host=args.host, port=args.port, log_path=args.log).start()
    if args.script:
        s.script(*load_script(args.script))
    print(f"stand-in listening on {s.base_url}  (Ctrl-C to stop)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        s.stop()


if __name__ == "__main__":
    main()
