"""JSON-RPC 2.0 over a byte stream, one message per line (``docs/PROTOCOL.md``).

Framing is newline-delimited JSON read with asyncio's ``StreamReader.readline`` and a line limit
(:data:`MAX_LINE`); the message shapes are JSON-RPC 2.0's (request ``{"jsonrpc", "id", "method",
"params"}``, response ``{"jsonrpc", "id", "result" | "error": {"code", "message"}}``, and server
notifications ``{"jsonrpc", "method": "event", "params": {"type", "data"}}``). No library adds
anything here that asyncio's streams do not already give (they frame by length or speak HTTP).
"""

from __future__ import annotations

import json
import math
from typing import Any

PROTOCOL_VERSION = 1
MAX_LINE = 16 * 1024 * 1024  # bytes of one request line
# events queued for a reader that is not keeping up: past either bound the connection is closed
# (the server's for a client that stopped reading; a client's for a server that floods it)
MAX_PENDING_EVENTS = 200_000
MAX_PENDING_BYTES = 512 * 1024 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# application errors
NOT_FOUND = 1  # unknown session / approval
REFUSED = 2  # a request the current state does not allow
UNAUTHORIZED = 3
UNAVAILABLE = 4  # e.g. no notes folder


class RpcError(Exception):
    """An error reply: ``code`` (JSON-RPC or application), ``message`` (one line)."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


def encode(obj: dict) -> bytes:
    """One line of JSON. Text with a lone surrogate (an undecodable file name or argument) goes as
    ``\\u`` escapes instead of failing: a notification that cannot be encoded would stop a client's events."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(obj, separators=(",", ":"), default=str) + "\n").encode("ascii")


def request(msg_id: int, method: str, params: dict | None = None) -> bytes:
    return encode({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}})


def response(msg_id: Any, result: Any) -> bytes:
    return encode({"jsonrpc": "2.0", "id": msg_id, "result": result})


def error(msg_id: Any, err: RpcError) -> bytes:
    return encode({"jsonrpc": "2.0", "id": msg_id, "error": err.to_json()})


def notification(method: str, params: Any) -> bytes:
    return encode({"jsonrpc": "2.0", "method": method, "params": params})


# methods a server answers at once (no model call, no waiting on a session): a client gives up on
# one after twice its read timeout even while keepalives come — a handler stuck, or a hostile host
# that says "still working" forever, holds no command
QUICK_METHODS = frozenset({"hello", "subscribe", "server.status", "list", "get", "send", "kill", "answer", "budget"})

# sent by the server every KEEPALIVE_S on a connection with a request in flight or a
# subscription: a client's read that sees nothing for a few of these knows the server is hung
KEEPALIVE_S = 1.0
KEEPALIVE = b'{"jsonrpc":"2.0","method":"keepalive","params":{}}\n'


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_request(line: bytes) -> tuple[Any, str, dict]:
    """(id, method, params) of one request line. Raises RpcError (PARSE_ERROR / INVALID_REQUEST)."""
    try:
        msg = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise RpcError(PARSE_ERROR, f"not a JSON line: {exc}") from None
    except RecursionError:
        raise RpcError(PARSE_ERROR, "not a JSON line: nested too deeply") from None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
        raise RpcError(INVALID_REQUEST, "expected a JSON-RPC 2.0 request object with a method")
    params = msg.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object")
    if "id" not in msg:
        raise RpcError(INVALID_REQUEST, "requests need an id (the server sends no replies to notifications)")
    msg_id = msg["id"]
    if not (msg_id is None or isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool))
            or (isinstance(msg_id, float) and math.isfinite(msg_id))):
        # JSON-RPC: a string, a number or null; 1e400 reads as inf, which no JSON can carry back
        raise RpcError(INVALID_REQUEST, "id must be a string, a finite number or null")
    return msg_id, msg["method"], params
