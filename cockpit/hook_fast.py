"""The prompt hook's hot path: ``cockpit memory hook`` with a running server, in a process that
imports nothing but ``os``, ``sys`` and C modules (``_json``, ``_socket``, ``_signal``,
``fcntl``) — no ``json``, ``socket`` or ``signal`` wrappers (their ``re`` and ``enum`` cost more
than the rest of the hook), no ``pathlib``, ``typing`` or ``platformdirs``.

What the hook does is documented in ``cockpit.memory_hook``; this module is the common case of
it (a prompt event, a notes folder given or relative, a server that answers). Everything else —
``--install``, no server yet, a server that does not answer in time, ``COCKPIT_NO_SERVER``, the
``auto`` notes folder, a ``PostToolUse`` that read a note — goes to ``cockpit.memory_hook``,
which loads what it needs. Whatever happens the hook prints nothing and exits 0 rather than block
the user's prompt.
"""

from __future__ import annotations

import _json
import _socket
import os
import sys

from cockpit import places
from memory.bounds import bound_query

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

SEEN_MAX = 1000
PROMPT_EVENTS = ("UserPromptSubmit", "SessionStart", "BeforeAgent")  # Claude Code and Codex; Gemini CLI
BUDGET_S = 1.2  # the whole hook, server round trip included (Claude Code waits for it)
WATCHDOG_S = 1.6  # past this the process ends silently, whatever it was waiting for
CONNECT_S = 0.3
MAX_LINE = 16 * 1024 * 1024


# -- JSON without the json package (its decoder imports re) -----------------------------------------
class _Scanner:
    strict = False
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float
    memo: dict = {}


_scan = _json.make_scanner(_Scanner())  # type: ignore[arg-type]  # it reads these attributes


def loads(text: str) -> Any:
    """One JSON value (``json.loads``; ValueError when ``text`` is not one)."""
    text = text.strip()
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


def dumps(value: Any, ascii: bool = False) -> str:
    """``json.dumps(value, ensure_ascii=ascii, separators=(",", ":"))`` for str, int, float, bool,
    None, list, tuple and dict with str keys (TypeError for anything else)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _json.encode_basestring_ascii(value) if ascii else _json.encode_basestring(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("NaN and infinities are not JSON")
        return float.__repr__(value)
    if isinstance(value, dict):
        return "{" + ",".join(dumps(str(k), ascii) + ":" + dumps(v, ascii) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v, ascii) for v in value) + "]"
    raise TypeError(f"{type(value).__name__} is not JSON")


def utf8_line(value: Any) -> bytes:
    """One line of JSON in UTF-8 (text with a lone surrogate goes as ``\\u`` escapes)."""
    try:
        return (dumps(value) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (dumps(value, ascii=True) + "\n").encode("ascii")


# -- the sessions already preseeded, and what each was given ------------------------------------------
def hooks_dir() -> str:
    return os.path.join(places.data_root(), "hooks")


def seen(session_id: str, record: bool) -> bool:
    """Whether a session id was already preseeded; ``record``: remember it (under a file lock)."""
    import fcntl

    folder = hooks_dir()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "seen.json")
    with open(os.path.join(folder, "seen.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path, encoding="utf-8") as fh:
                ids = loads(fh.read())
            if not isinstance(ids, list):
                ids = []
        except (OSError, ValueError):
            ids = []
        if session_id in ids or not record:
            return session_id in ids
        ids = (ids + [session_id])[-SEEN_MAX:]
        tmp = os.path.join(folder, "seen.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(dumps(ids, ascii=True))
        os.replace(tmp, path)
        return False


def given_path(session: str) -> str:
    try:
        from _sha1 import sha1  # hashlib's own module for SHA-1, without hashlib's start-up
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import sha1
    return os.path.join(hooks_dir(), "given", f"{sha1(session.encode()).hexdigest()[:16]}.json")


def block_names(text: str) -> tuple[list[str], list[str]]:
    """The note names a block gives as lines (``[name] …``, ``★ [name] …``) and lists in its
    index (``- [name] …``)."""
    lines: list[str] = []
    index: list[str] = []
    for row in text.splitlines():
        into = lines
        if row.startswith("★ "):
            row = row[2:]
        elif row.startswith("- "):
            row, into = row[2:], index
        if row.startswith("["):
            end = row.find("]", 1)
            if end > 1:
                into.append(row[1:end])
    return lines, index


def remember_given(session: str, text: str, prompt: str, notes: str, paths: dict[str, str] | None = None) -> None:
    """The block's lines and index entries, for the session's later ``PostToolUse`` calls;
    ``paths``: file → note name of the notes it names (a note read by its file is known by the
    name the index gives it)."""
    lines, index = block_names(text)
    path = given_path(session)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(dumps({"session": session, "lines": lines, "index": index, "task": prompt,
                        "notes": os.path.realpath(notes), "paths": paths or {}}))


DEFAULT_NOTES = "notes"  # every command's --notes default


def default_notes(cwd: str) -> str:
    """The notes folder when none is named: ``<cwd>/notes``, else, in a subfolder of a git work
    tree, the ``notes`` folder at its root (the nearest ``.git`` above: no git to run); when
    neither exists, ``<cwd>/notes`` (absolute: what an error names)."""
    here = os.path.realpath(os.path.join(cwd, DEFAULT_NOTES))
    if os.path.isdir(here):
        return here
    folder = os.path.realpath(cwd)
    while True:
        if os.path.exists(os.path.join(folder, ".git")):  # (a file in a linked worktree)
            top = os.path.join(folder, DEFAULT_NOTES)
            return top if os.path.isdir(top) else here
        parent = os.path.dirname(folder)
        if parent == folder:
            return here
        folder = parent


def notes_folder(value: str | None, cwd: str) -> str | None:
    """The notes folder for a ``--notes`` value (none, or the default ``notes``:
    :func:`default_notes`); None for ``auto`` (``cockpit.notes_location`` finds Claude Code's
    folder: it runs git)."""
    if value is None or value in ("", DEFAULT_NOTES):
        return default_notes(cwd)
    if value == "auto":
        return None
    return os.path.realpath(os.path.join(cwd, os.path.expanduser(value)))


# -- one request to the server ---------------------------------------------------------------------------
class NoServer(OSError):
    """Nothing listens on the socket (none runs, or one is still starting)."""


class Late(OSError):
    """The server did not answer by the deadline (busy, stopped or hung)."""


def call(sock_path: str, method: str, params: dict, deadline: float, clock: Any) -> Any:
    """``method``'s result from the server at ``sock_path`` (JSON-RPC, one line each way, as
    ``cockpit.server.rpc``; keepalives and events skipped). Raises :class:`NoServer`,
    :class:`Late`, or OSError (the connection lost, an error reply)."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(min(CONNECT_S, max(0.01, deadline - clock())))
        try:
            sock.connect(sock_path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise NoServer(str(exc)) from None
        except TimeoutError:
            raise Late("connect") from None
        sock.sendall(utf8_line({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        buf = b""
        while True:
            left = deadline - clock()
            if left <= 0:
                raise Late("no answer")
            sock.settimeout(left)
            try:
                chunk = sock.recv(1 << 16)
            except TimeoutError:
                raise Late("no answer") from None
            if not chunk:
                raise OSError("the Cockpit server closed the connection")
            buf += chunk
            while b"\n" in buf:
                line, _, buf = buf.partition(b"\n")
                msg = loads(line.decode("utf-8", "replace"))
                if isinstance(msg, dict) and msg.get("id") == 1:
                    if "error" in msg:
                        raise OSError(str((msg.get("error") or {}).get("message")))
                    return msg.get("result")
            if len(buf) > MAX_LINE:
                raise OSError("a line from the server is too long")
    finally:
        sock.close()


# -- the hook -------------------------------------------------------------------------------------
def quick_args(argv: list[str]) -> dict | None:
    """The hook's own flags (``--notes``, ``--index``, ``--top-k``, as ``--flag value`` or
    ``--flag=value``) without argparse, or None when anything else is given (the full parser)."""
    out: dict = {"notes": None, "index": None, "top_k": None}
    names = {"--notes": "notes", "--index": "index", "--top-k": "top_k"}
    i = 0
    while i < len(argv):
        flag, eq, value = argv[i].partition("=")
        if flag not in names:
            return None
        if not eq:
            if i + 1 >= len(argv):
                return None
            value = argv[i + 1]
            i += 1
        i += 1
        out[names[flag]] = value
    if out["top_k"] is not None:
        try:
            out["top_k"] = int(out["top_k"])
        except ValueError:
            return None
    return out


def _watchdog(seconds: float) -> None:
    """End this process silently (exit 0, nothing printed) after ``seconds``, whatever it waits
    for (a lock, a file system, the server)."""
    import _signal

    def expire(_sig: int, _frame: Any) -> None:
        os._exit(0)

    _signal.signal(_signal.SIGALRM, expire)
    _signal.setitimer(_signal.ITIMER_REAL, seconds)


def _disarm() -> None:
    import _signal

    _signal.setitimer(_signal.ITIMER_REAL, 0)


def main(argv: list[str]) -> int:
    """``cockpit memory hook [--notes N] [--index I] [--top-k K]`` (anything else: the full
    parser in ``cockpit.memory_hook``)."""
    args = quick_args(argv)
    if args is None:
        from cockpit import memory_hook

        return memory_hook.full_main(argv)
    return run(args)


def run(args: dict) -> int:
    """The hook with its flags read (``notes``, ``index``, ``top_k``): stdin in, the block out."""
    watched = not os.environ.get("COCKPIT_NO_SERVER")  # in-process: the model loads here (seconds)
    try:
        if watched:
            _watchdog(WATCHDOG_S)
        raw = sys.stdin.buffer.read(4 * 1024 * 1024)
        out = handle(loads(raw.decode("utf-8", "replace")), args["notes"], args["index"], args["top_k"])
        if out is not None:
            text = dumps(out)
            if watched:
                _disarm()  # never cut the answer half-written
            sys.stdout.write(text)
            sys.stdout.flush()
    except BaseException:  # never block the user's prompt, whatever happened
        pass
    return 0


def handle(payload: Any, notes_arg: str | None, index: str | None, top_k: int | None) -> dict | None:
    """The hook output for one input (None: print nothing)."""
    if not isinstance(payload, dict):
        return None
    if os.environ.get("COCKPIT_SESSION_ID"):  # a Cockpit claude-code session: already preseeded
        return None
    event = payload.get("hook_event_name")
    if event == "PostToolUse":
        session = str(payload.get("session_id") or "")
        if session and os.path.exists(given_path(session)):  # a session this hook preseeded
            from cockpit import memory_hook

            memory_hook.record_miss(payload)
        return None
    prompt = payload.get("prompt")
    if event not in PROMPT_EVENTS or not isinstance(prompt, str) or not prompt.strip():
        return None
    session = str(payload.get("session_id") or "")
    cwd = str(payload.get("cwd") or os.getcwd())
    notes = notes_folder(notes_arg, cwd)
    if notes is None:
        from cockpit.notes_location import resolve_notes

        notes = str(resolve_notes(notes_arg, cwd))
    if not os.path.isdir(notes) or (session and seen(session, record=False)):
        return None
    got = block_for(prompt, notes, index, top_k)
    if got is None:  # no answer in time: this session's next prompt tries again
        return None
    text, paths = got
    if session and seen(session, record=True):  # a concurrent hook of the same session got there first
        return None
    if not text:
        return None
    if session:
        try:
            remember_given(session, text, prompt, notes, paths)
        except OSError:
            pass
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def block_for(prompt: str, notes: str, index: str | None,
              top_k: int | None) -> tuple[str, dict[str, str]] | None:
    """The preseed block for ``prompt`` from the server ("" when none qualifies) and the files of
    the notes it names (real path → name); None when it could not be had within :data:`BUDGET_S`
    (``cockpit.memory_hook`` says why on stderr, and starts a server when none runs)."""
    from time import monotonic

    deadline = monotonic() + BUDGET_S
    index = os.path.realpath(os.path.expanduser(index)) if index else None  # not the server's cwd
    if os.environ.get("COCKPIT_NO_SERVER"):
        from cockpit import memory_hook

        return memory_hook.block_in_process(bound_query(prompt), notes, index, top_k), {}
    sock = places.socket_path()
    try:
        reply = call(sock, "memory.preseed",
                     {"notes": notes, "index": index, "query": bound_query(prompt), "top_k": top_k,
                      "ready_timeout": max(0.0, deadline - monotonic() - 0.4)}, deadline, monotonic)
    except NoServer:
        from cockpit import memory_hook

        memory_hook.no_server(notes, index, sock)
        return None
    except Late:
        from cockpit import memory_hook

        memory_hook.late(sock)
        return None
    if not isinstance(reply, dict):
        return None
    if reply.get("warming"):
        _note("the Cockpit server is loading the notes' engine; the project notes come with a later prompt")
        return None
    text = reply.get("text")
    if not isinstance(text, str):
        return None
    paths: dict[str, str] = {}
    for key in ("hits", "index"):
        for hit in reply.get(key) or ():
            if isinstance(hit, dict) and isinstance(hit.get("path"), str) and isinstance(hit.get("name"), str):
                paths[os.path.realpath(hit["path"])] = hit["name"]
    return text, paths


def _note(text: str) -> None:
    """One line on stderr (Claude Code shows a hook's stderr in its transcript view)."""
    try:
        sys.stderr.write(f"cockpit memory hook: {text}\n")
        sys.stderr.flush()
    except Exception:
        pass
