"""The server and its session clients from the shell.

``cockpit server [run|start|status|stop] [--listen HOST:PORT] [--host NAME]``
    ``run`` serves in the foreground; ``start`` starts it in the background (clients do this
    themselves when none runs); ``status`` says whether one runs and what it holds; ``stop`` ends
    its sessions cleanly and stops it. With ``--host`` status, start and stop run on that host
    (the whole command, through ssh, as ``memory`` and ``worktrees`` do).
``cockpit ls [--json]``                      sessions: id, state, model, branch, tokens, USD, task
``cockpit send ID TEXT``                     a follow-up to a session (says: sent, queued, or held by its cap)
``cockpit kill ID``                          kill a session
``cockpit attach ID``                        follow one session's output until it waits or ends
``cockpit approve ID [--session]``           allow its pending tool call (once, or for the session)
``cockpit deny ID [--reason TEXT]``          deny it; the reason goes back to the model
``cockpit budget [ID | --server] [--usd X] [--tokens N] [--clear]``
                                             a session's spend cap, or the server's: shown, or
                                             set (a session paused in ``budget reached`` goes on)

``ID``: a session id, or a unique prefix/suffix of at least 4 characters. None of these start a
server (there would be no session to act on); they say so when none runs. Exit codes: 0, 1 when
the session ended in error (attach), 2 for usage errors (unknown id, no server).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Iterator

from cockpit.errors import CockpitError
from cockpit.host_cli import add_host_argument, host_name
from cockpit.textsafe import clean_tree, one_line

FINAL_STATES = {"done", "error", "killed", "interrupted"}  # a session in one of these has ended

ID_HELP = "session id, or a unique prefix or suffix of at least 4 characters (see cockpit ls)"


def add_parser(sub) -> None:
    p = sub.add_parser("server", help="the background server that owns the sessions",
                       description="The Cockpit server: one per user; clients start it when needed.")
    p.add_argument("action", nargs="?", default="status", choices=["run", "start", "status", "stop", "bridge"],
                   help="status (default); start in the background; stop (working sessions are killed); "
                        "run in the foreground; bridge: relay stdin/stdout to the server (what `--host` "
                        "runs on the remote host through ssh)")
    p.add_argument("--listen", metavar="HOST:PORT", default=None,
                   help="also listen on TCP (loopback); a token is printed once and required")
    p.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="status as JSON")
    p.add_argument("--force", action="store_true",
                   help="stop: kill a server that does not answer (SIGKILL; its sessions end interrupted)")
    add_host_argument(p)  # status, start, stop of that host's server: the command runs there, through ssh
    p.set_defaults(func=cmd_server)

    p = sub.add_parser("ls", help="list the server's sessions",
                       description="The server's sessions: id, state, model, branch, tokens, USD, task.")
    p.add_argument("--json", action="store_true", help="one JSON object with every session's row")
    add_host_argument(p)
    p.set_defaults(func=cmd_ls)

    p = sub.add_parser("send", help="send a follow-up message to a session",
                       description="Send a follow-up to a session spawned in the app that waits for you.")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("text", help="the message")
    add_host_argument(p)
    p.set_defaults(func=cmd_send)

    p = sub.add_parser("resume", help="resume a session that ended or was interrupted, in its worktree",
                       description="Resume a session the server lists as ended — interrupted (a server stopped while "
                                   "it ran), done, killed, error — from its transcript, in its worktree: a new "
                                   "session (a new id) that goes on with its whole conversation and then waits for "
                                   "you (`cockpit send`, `cockpit attach`). An interrupted one leaves the list; "
                                   "what the app's `r` then `o` does.")
    p.add_argument("id", help=ID_HELP)
    add_host_argument(p)
    p.set_defaults(func=cmd_resume)

    p = sub.add_parser("kill", help="kill a session")
    p.add_argument("id", help=ID_HELP)
    add_host_argument(p)
    p.set_defaults(func=cmd_kill)

    p = sub.add_parser("attach", help="follow a session's output until it waits for a follow-up, reaches its "
                                      "spend cap, or ends (an ask for approval is shown with the commands that "
                                      "answer it, and attach follows on)")
    p.add_argument("id", nargs="?", default=None,
                   help=ID_HELP + "; omitted: the one session that needs you, else the only one running")
    add_host_argument(p)
    p.set_defaults(func=cmd_attach)

    p = sub.add_parser("approve", help="allow a session's pending tool call",
                       description="Allow the tool call a session spawned in the app waits on (cockpit run "
                                   "sessions are headless: their asks are denied at once).")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("--session", action="store_true", help="allow such calls for the rest of the session")
    add_host_argument(p)
    p.set_defaults(func=cmd_approve)

    p = sub.add_parser("budget", help="show or raise a session's spend cap, or the server's",
                       description="A session's spend cap (ID), or the server's on the sum over every session "
                                   "(--server): shown, or set with --usd / --tokens. A session paused in "
                                   "'budget reached' goes on once no cap is reached.")
    p.add_argument("id", nargs="?", default=None, help=ID_HELP)
    p.add_argument("--server", action="store_true", help="the server's cap (all sessions together)")
    p.add_argument("--usd", default=None, metavar="USD", help="the new cap in USD, e.g. 5 or 2.50")
    p.add_argument("--tokens", default=None, metavar="N", help="the new cap in tokens")
    p.add_argument("--clear", action="store_true", help="no cap (then --usd / --tokens, if given, set one anew)")
    add_host_argument(p)
    p.set_defaults(func=cmd_budget)

    p = sub.add_parser("deny", help="deny a session's pending tool call")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("--reason", default="", help="why (goes back to the model)")
    add_host_argument(p)
    p.set_defaults(func=cmd_deny)


STATUS_TIMEOUT_S = 5.0  # server.status is a cheap call: a server that takes longer is stopped or hung


def _client(timeout: float | None = None, host: str | None = None):
    """A client of this machine's server (which must run), or of ``host``'s (its bridge starts it)."""
    from cockpit.host_cli import transport_named
    from cockpit.server.client import BlockingClient, ServerError, server_running

    if host is None and not server_running():
        raise CockpitError("no Cockpit server is running (start one with `cockpit server start`, or open `cockpit`)")
    try:
        if host is None:
            return BlockingClient(timeout=timeout)
        return BlockingClient.over(transport_named(host), timeout=timeout)
    except ServerError as exc:
        raise CockpitError(str(exc), code=1 if host else 2) from None


_OBJECT_RESULTS = {"server.status", "list", "get", "budget"}  # the methods whose answer is an object
_ANSWER_OBJECT_OR_NONE = {"answer"}


def _call(method: str, timeout: float | None = None, host: str | None = None, **params):
    from cockpit.server.client import RemoteError, ServerError
    from cockpit.server.rpc import NOT_FOUND

    client = _client(timeout, host)
    try:
        result = client.call(method, **params)
        if (method in _OBJECT_RESULTS and not isinstance(result, dict)) or (
                method in _ANSWER_OBJECT_OR_NONE and not isinstance(result, (dict, type(None)))):
            raise CockpitError(_malformed_text(method, host))
        return result
    except RemoteError as exc:
        raise CockpitError(exc.message, code=2 if exc.code in (NOT_FOUND,) or exc.code < 0 else 1) from None
    except ServerError as exc:
        raise CockpitError(str(exc)) from None
    finally:
        client.close()


def _malformed_text(method: str, host: str | None) -> str:
    return (f"{'host ' + host if host else 'the Cockpit server'} sent a malformed answer to {method!r} "
            "(is it the same Cockpit version?)")


@contextlib.contextmanager
def _answer_of(method: str, host: str | None) -> Iterator[None]:
    """Reading a server's answer: one that lacks a field or holds the wrong type (a broken or
    hostile peer, e.g. a host behind ssh) is one line, not a traceback."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        raise CockpitError(_malformed_text(method, host)) from None


def cmd_server(args: argparse.Namespace) -> int:
    from cockpit.server import client as cl

    listen = None
    if args.listen:
        host, _, port = args.listen.rpartition(":")
        if not host or not port.isdigit():
            raise CockpitError("--listen takes HOST:PORT, e.g. 127.0.0.1:8765")
        listen = (host, int(port))
    if args.action == "bridge":
        from cockpit.server.bridge import run_bridge

        return run_bridge()
    if args.action == "run":
        from cockpit.server.daemon import run_server

        return run_server(listen, args.ready_fd)
    if args.action == "start":
        if cl.server_running():
            print("a Cockpit server is already running")
            return 0
        try:
            pid = cl.start_server(listen=args.listen)
        except cl.ServerError as exc:
            raise CockpitError(str(exc)) from None
        print(f"Cockpit server started (pid {pid})" if pid > 0 else "a Cockpit server is already running")
        return 0
    if args.action == "status":
        if not cl.server_running():
            starting = cl.server_pid()  # holds the data folder's lock, not listening yet (just started)
            if args.json:
                print(json.dumps({"running": False, **({"starting": starting} if starting else {})}))
            elif starting:
                print(f"the Cockpit server (pid {starting}) is starting: not listening yet")
            else:
                print("no Cockpit server is running")
            return 0
        st = _call("server.status", timeout=STATUS_TIMEOUT_S)
        if args.json:
            print(json.dumps({"running": True, **st}, indent=2))
            return 0
        sessions = ", ".join(f"{n} {k}" for k, n in st["sessions"].items()) or "no sessions"
        print(f"Cockpit server pid {st['pid']}, up {st['uptime_s']:.0f} s, {sessions}, "
              f"{st['clients'] - 1} other client{'' if st['clients'] == 2 else 's'}")
        print(f"socket {st['socket']} · log {st['log']}")
        prep = st.get("prepared") or {}
        if prep:
            print(f"for new sessions: embedding model {prep.get('model')}, session modules "
                  f"{'loaded' if prep.get('modules') else 'loading'}")
        for e in st["engines"]:
            print(f"memory: {e['notes']} ({'ready' if e['ready'] else 'warming'})")
        return 0
    # stop
    if getattr(args, "force", False):
        return _force_stop()
    if not cl.server_running():
        print("no Cockpit server is running")
        return 0
    status = _call("server.status", timeout=STATUS_TIMEOUT_S)
    pid = status["pid"]
    _call("server.stop")
    if not cl.wait_for_stop(pid, 60):
        raise CockpitError(f"the server (pid {pid}) did not stop within 60 s", code=1)
    print(f"Cockpit server stopped (pid {pid})")
    others = int(status.get("clients") or 0) - 1  # (this command was one of them)
    if others > 0:  # an open app starts one again at once; an MCP server at its next call
        print(f"{others} other client{'s were' if others != 1 else ' was'} connected (an open app, an agent's "
              f"MCP server): {'they start' if others != 1 else 'it starts'} a server again when needed — quit "
              f"{'them' if others != 1 else 'it'} to keep the server stopped")
    return 0


def _force_stop() -> int:
    """``cockpit server stop --force``: ask nicely (a short wait), else SIGKILL the pid that holds
    the data folder's lock — what a stopped (SIGSTOP) or hung server needs. The next start marks
    its live sessions ``interrupted``, as after a crash."""
    import signal

    from cockpit.server import client as cl

    pid = cl.server_pid()
    if pid is None:
        print("no Cockpit server is running")
        return 0
    try:
        with cl.BlockingClient(timeout=2.0) as c:
            c.call("server.stop")
        if cl.wait_for_stop(pid, 10):
            print(f"Cockpit server stopped (pid {pid})")
            return 0
    except cl.ServerError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if not cl.wait_for_stop(pid, 10):
        raise CockpitError(f"the server (pid {pid}) did not die after SIGKILL", code=1)
    print(f"Cockpit server killed (pid {pid}); its live sessions will show as interrupted")
    return 0


# what `ls` shows in the branch column once a review action ended the worktree
REVIEW_ENDS = {"merge": "merged into {base}", "discard": "discarded", "keep": "kept: {branch}"}


def _fmt_row(r: dict) -> str:
    from cockpit.tui import format as fmt

    usage = r.get("usage") or {}
    w = r.get("worktree") or {}
    branch = w.get("branch") or r.get("placement") or ""
    if w and w.get("removed"):  # the session changed nothing: its worktree and branch are gone
        branch = "(no changes, worktree removed)"
    done = r.get("reviewed") or {}
    if done.get("ok") and done.get("action") in REVIEW_ENDS:  # the branch is gone or kept as a branch only
        branch = REVIEW_ENDS[done["action"]].format(base=(w or {}).get("base_branch") or "the base", branch=branch)
    from cockpit.textsafe import short

    prefix = f"cockpit/{r['id']}/"  # the id is its own column: the branch shows what follows it
    branch = "…/" + branch[len(prefix):] if branch.startswith(prefix) else branch
    agent, model = short(str(r.get("backend") or "cockpit"), 13), short(str(r.get("model", "")), 22)
    return (f"{r['id']:<13}{r['status']:<16}{agent:<14}{model:<23}{short(branch, 34):<35}"
            f"{fmt.tokens(usage.get('total')):>7} {fmt.usd(r.get('cost_usd')):>9}  {short(r.get('task', ''), 60)}")


def cmd_ls(args: argparse.Namespace) -> int:
    host = host_name(args)
    answer = _call("list", host=host)
    with _answer_of("list", host):
        rows = answer["sessions"]
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise TypeError("sessions is a list of objects")
        lines = [_fmt_row(clean_tree(r)) for r in rows]  # a host's text never drives this terminal
    if args.json:
        print(json.dumps({"sessions": rows}, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("no sessions")
        return 0
    print(f"{'ID':<13}{'STATE':<16}{'AGENT':<14}{'MODEL':<23}{'BRANCH':<35}{'TOKENS':>7} {'COST':>9}  TASK")
    for line in lines:
        print(line)
    return 0


def cmd_send(args: argparse.Namespace) -> int:
    """Send, then one line: sent (it was waiting), queued (it is working), or queued behind its
    spend cap (``budget reached``: the message waits until the cap is raised)."""
    from cockpit.headless import _clean  # undecodable argument bytes: U+FFFD, with a warning
    from cockpit.host_cli import hint

    text = _clean(args.text, "the follow-up")
    if not text.strip():
        raise CockpitError("give the message to send: cockpit send ID \"TEXT\" (it was empty)")
    host = host_name(args)
    row = _call("get", host=host, id=args.id)
    sid, status = row["id"], row.get("status", "")
    _call("send", host=host, id=sid, text=text)
    # its own cap or the server's (the sum over every session): either pauses it before the model
    held_by = None
    if status in ("waiting for you", "budget reached"):
        held_by = (_call("budget", host=host, id=sid) or {}).get("held_by")
    if status == "budget reached" or held_by:  # at a cap: it takes the message, then pauses before the model
        if held_by == "server":
            print(f"{sid}: message queued; the server's spend cap (all sessions together) is reached, so it waits "
                  f"in 'budget reached' until that cap is raised: cockpit budget{hint(host)} --server --usd …")
        else:
            print(f"{sid}: message queued; the session is at its spend cap, so it waits in 'budget reached' "
                  f"until the cap is raised: cockpit budget{hint(host)} {sid} --usd …")
    elif status == "waiting for you":
        print(f"{sid}: sent")
    else:
        print(f"{sid}: queued ({status}): it takes the message when it next waits for you")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    """Resume an ended session through the server (its ``resume``, with this terminal's settings and
    keys, as a spawn), then one line: the new id and how to follow it."""
    from cockpit.headless import _sends_keys
    from cockpit.host_cli import hint
    from cockpit.runtime import ConfigError, load_config
    from cockpit.server.remote import client_payload

    host = host_name(args)
    row = _row_or_transcript(host, args.id)
    sid, status = one_line(row["id"]), str(row.get("status", ""))
    try:
        config = client_payload(load_config(), send_keys=_sends_keys(host))
    except ConfigError as exc:
        raise CockpitError(str(exc)) from None
    if status == "interrupted" and row.get("listed", True):
        new = _call("resume", host=host, id=sid, config=config)
    elif status in ("done", "killed", "error", "interrupted"):  # (from its transcript)
        if not row.get("transcript"):
            raise CockpitError(f"session {sid} has no transcript to resume from")
        new = _call("resume", host=host, path=row["transcript"], config=config)
    else:
        how = ("it is headless (cockpit run): resume it once it has ended at its last answer"
               if row.get("interactive") is False else
               f"it takes a follow-up as it is: cockpit send{hint(host)} {sid} \"…\" when it waits for you")
        raise CockpitError(f"session {sid} is {status}: it has not ended, nothing to resume ({how})", code=1)
    nid = one_line(new["id"])
    print(f"{sid} resumed as {nid} ({one_line(new.get('status', ''))}): cockpit attach{hint(host)} {nid} follows it; "
          f"cockpit send{hint(host)} {nid} \"…\" when it waits for you")
    before, now = ((x.get("worktree") or {}).get("path") for x in (row, new))
    if before and now and before != now:  # its own is gone: say where its earlier change is
        print(f"  it goes on in a new worktree from HEAD, {now}: {_where_its_change_went(row)}")
    if (row.get("error") or {}).get("kind") == "budget":
        print(f"  it ended at its spend cap, which it keeps: cockpit budget{hint(host)} {nid} --usd N / --tokens N "
              f"raises it")
    return 0


def _row_or_transcript(host: str | None, query: str) -> dict:
    """The server's row of session ``query``; for one it no longer lists (it ended with nothing
    left to review before a restart, or was closed), its transcript's: ``id``, ``status``,
    ``transcript`` from the server's ``transcripts``. Raises CockpitError when neither names one."""
    from cockpit.runtime import ids

    try:
        return _call("get", host=host, id=query)
    except CockpitError as exc:
        if "no session" not in str(exc):
            raise
        listed = (_call("transcripts", host=host) or {}).get("transcripts", [])
        found = {t["session_id"]: t for t in listed if isinstance(t, dict) and t.get("session_id")
                 and ids.matches(query, str(t["session_id"]))}
        if len(found) != 1:
            raise CockpitError(ids.not_one(query, [(k, str(v.get("task", ""))) for k, v in found.items()]),
                               code=2) from None
        (t,) = found.values()
        return {"id": t["session_id"], "status": t.get("status") or "interrupted", "transcript": t["path"],
                "worktree": None, "listed": False}


def _where_its_change_went(row: dict) -> str:
    """Where the change of a session whose worktree is gone is (for the new worktree it resumes in)."""
    reviewed = row.get("reviewed") or {}
    branch = (row.get("worktree") or {}).get("branch") or "its branch"
    if (row.get("worktree") or {}).get("removed"):
        return "it had changed nothing (its worktree was removed when it ended)"
    if reviewed.get("ok") and reviewed.get("action") == "merge":
        return "its change was merged, so HEAD has it"
    if reviewed.get("ok") and reviewed.get("action") == "keep":
        return f"its change is on the kept branch {branch}, not in this worktree"
    if reviewed.get("ok") and reviewed.get("action") == "discard":
        return "its change was discarded: what it changed before is not there"
    return "its worktree is gone: what it changed before is not there"


def cmd_kill(args: argparse.Namespace) -> int:
    before = _call("get", host=host_name(args), id=args.id)
    with _answer_of("get", host_name(args)):
        sid, status = one_line(before["id"]), one_line(before.get("status"))
    if status in FINAL_STATES:
        print(f"{sid} already ended ({status}): nothing to kill")
        return 0
    _call("kill", host=host_name(args), id=args.id)
    print(f"{sid} killed")
    return 0


def _answered(info: dict, query: str) -> tuple[str, str]:
    """(session id, what was asked) from an ``answer`` reply, safe for a terminal."""
    from cockpit.textsafe import one_line

    what = one_line(str(info.get("summary") or "")) or "its pending tool call"
    return one_line(info.get("id") or query), what[:200]


def cmd_approve(args: argparse.Namespace) -> int:
    info = _call("answer", host=host_name(args), id=args.id, request_id=None, allow=True,
                 scope="session" if args.session else "once")
    sid, what = _answered(info or {}, args.id)
    rule = (info or {}).get("suggestion") or ""
    scope = f" (and for the rest of the session{': ' + rule if rule else ''})" if args.session else " (once)"
    print(f"{sid}: approved {what}{scope}")
    return 0


def cmd_deny(args: argparse.Namespace) -> int:
    info = _call("answer", host=host_name(args), id=args.id, request_id=None, allow=False, reason=args.reason)
    sid, what = _answered(info or {}, args.id)
    print(f"{sid}: denied {what}{' (' + args.reason + ')' if args.reason else ''}")
    return 0


def cmd_budget(args: argparse.Namespace) -> int:
    from cockpit.runtime.budget import BudgetError, parse_tokens, parse_usd

    if args.server and args.id is not None:
        raise CockpitError(f"give a session ID or --server (the cap of all sessions together), not both "
                           f"(got {args.id} and --server)")
    if not args.server and args.id is None:
        raise CockpitError("give a session ID or --server (the cap of all sessions together)")
    try:
        usd = None if args.usd is None else parse_usd(args.usd, "--usd")
        tokens = None if args.tokens is None else parse_tokens(args.tokens, "--tokens")
    except BudgetError as exc:
        raise CockpitError(str(exc)) from None
    where = {"server": True} if args.server else {"id": args.id}
    info = _call("budget", host=host_name(args), **where, usd=usd, tokens=tokens, clear=args.clear)
    with _answer_of("budget", host_name(args)):
        _print_budget(clean_tree(info))
    return 0


def _print_budget(info: dict) -> None:
    from cockpit.tui import format as fmt

    caps = [f"{fmt.usd(info['usd'])}" if info["usd"] is not None else "",
            f"{info['tokens']:,} tokens" if info["tokens"] is not None else ""]
    cap = " or ".join(c for c in caps if c) or "none"
    spent = f"{fmt.usd(info['spent_usd'])} · {info['spent_tokens']:,} tokens"
    going_on = info.get("going_on") or []
    status = "going on" if info["id"] in going_on else info["status"]
    who = "server (all sessions)" if info["scope"] == "server" else f"{info['id']} ({status})"
    print(f"{who}: cap {cap} · spent {spent}{' · reached' if info['reached'] else ''}")
    if info["paused"]:
        print(f"paused in 'budget reached': {', '.join(info['paused'])}")
    if info["scope"] == "session" and info.get("held_by") == "server":
        print(f"{info['id']} is held by the server's cap (all sessions together): cockpit budget --server --usd …")
    if going_on and info["scope"] == "server":
        print(f"going on (no longer at a cap): {', '.join(going_on)}")


def cmd_attach(args: argparse.Namespace) -> int:
    from cockpit.attach_cli import attach

    return attach(args)
