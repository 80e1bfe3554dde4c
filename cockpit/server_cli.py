"""The server and its session clients from the shell.

``cockpit server [run|start|status|stop] [--listen HOST:PORT]``
    ``run`` serves in the foreground; ``start`` starts it in the background (clients do this
    themselves when none runs); ``status`` says whether one runs and what it holds; ``stop`` ends
    its sessions cleanly and stops it.
``cockpit ls [--json]``                      sessions: id, state, model, branch, tokens, USD, task
``cockpit send ID TEXT``                     a follow-up to a session
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
import json
import os
import sys

from cockpit.errors import CockpitError

FINAL_STATES = {"done", "error", "killed", "interrupted"}  # a session in one of these has ended

ID_HELP = "session id, or a unique prefix or suffix of at least 4 characters (see cockpit ls)"


def add_parser(sub) -> None:
    p = sub.add_parser("server", help="the background server that owns the sessions",
                       description="The Cockpit server: one per user; clients start it when needed.")
    p.add_argument("action", nargs="?", default="status", choices=["run", "start", "status", "stop"],
                   help="status (default); start in the background; stop (working sessions are killed); "
                        "run in the foreground")
    p.add_argument("--listen", metavar="HOST:PORT", default=None,
                   help="also listen on TCP (loopback); a token is printed once and required")
    p.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="status as JSON")
    p.add_argument("--force", action="store_true",
                   help="stop: kill a server that does not answer (SIGKILL; its sessions end interrupted)")
    p.set_defaults(func=cmd_server)

    p = sub.add_parser("ls", help="list the server's sessions",
                       description="The server's sessions: id, state, model, branch, tokens, USD, task.")
    p.add_argument("--json", action="store_true", help="one JSON object with every session's row")
    p.set_defaults(func=cmd_ls)

    p = sub.add_parser("send", help="send a follow-up message to a session",
                       description="Send a follow-up to a session spawned in the app that waits for you.")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("text", help="the message")
    p.set_defaults(func=cmd_send)

    p = sub.add_parser("kill", help="kill a session")
    p.add_argument("id", help=ID_HELP)
    p.set_defaults(func=cmd_kill)

    p = sub.add_parser("attach", help="follow a session's output until it waits for you or ends")
    p.add_argument("id", help=ID_HELP)
    p.set_defaults(func=cmd_attach)

    p = sub.add_parser("approve", help="allow a session's pending tool call",
                       description="Allow the tool call a session spawned in the app waits on (cockpit run "
                                   "sessions are headless: their asks are denied at once).")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("--session", action="store_true", help="allow such calls for the rest of the session")
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
    p.set_defaults(func=cmd_budget)

    p = sub.add_parser("deny", help="deny a session's pending tool call")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("--reason", default="", help="why (goes back to the model)")
    p.set_defaults(func=cmd_deny)


STATUS_TIMEOUT_S = 5.0  # server.status is a cheap call: a server that takes longer is stopped or hung


def _client(timeout: float | None = None):
    from cockpit.server.client import BlockingClient, ServerError, server_running

    if not server_running():
        raise CockpitError("no Cockpit server is running (start one with `cockpit server start`, or open `cockpit`)")
    try:
        return BlockingClient(timeout=timeout)
    except ServerError as exc:
        raise CockpitError(str(exc)) from None


def _call(method: str, timeout: float | None = None, **params):
    from cockpit.server.client import RemoteError, ServerError
    from cockpit.server.rpc import NOT_FOUND

    client = _client(timeout)
    try:
        return client.call(method, **params)
    except RemoteError as exc:
        raise CockpitError(exc.message, code=2 if exc.code in (NOT_FOUND,) or exc.code < 0 else 1) from None
    except ServerError as exc:
        raise CockpitError(str(exc)) from None
    finally:
        client.close()


def cmd_server(args: argparse.Namespace) -> int:
    from cockpit.server import client as cl

    listen = None
    if args.listen:
        host, _, port = args.listen.rpartition(":")
        if not host or not port.isdigit():
            raise CockpitError("--listen takes HOST:PORT, e.g. 127.0.0.1:8765")
        listen = (host, int(port))
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
            if args.json:
                print(json.dumps({"running": False}))
            else:
                print("no Cockpit server is running")
            return 0
        st = _call("server.status", timeout=STATUS_TIMEOUT_S)
        if args.json:
            print(json.dumps({"running": True, **st}, indent=2))
            return 0
        sessions = ", ".join(f"{n} {k}" for k, n in st["sessions"].items()) or "no sessions"
        print(f"Cockpit server pid {st['pid']}, up {st['uptime_s']:.0f} s, {sessions}, "
              f"{st['clients'] - 1} other clients")
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
    pid = _call("server.status", timeout=STATUS_TIMEOUT_S)["pid"]
    _call("server.stop")
    if not cl.wait_for_stop(pid, 60):
        raise CockpitError(f"the server (pid {pid}) did not stop within 60 s", code=1)
    print(f"Cockpit server stopped (pid {pid})")
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


def _fmt_row(r: dict) -> str:
    from cockpit.tui import format as fmt

    usage = r.get("usage") or {}
    w = r.get("worktree") or {}
    branch = w.get("branch") or r.get("placement") or ""
    if w and w.get("removed"):  # the session changed nothing: its worktree and branch are gone
        branch = "(no changes, worktree removed)"
    from cockpit.textsafe import one_line

    task = one_line(r.get("task", ""))
    branch = one_line(branch)
    agent = one_line(str(r.get("backend") or "cockpit"))
    return (f"{r['id']:<13}{r['status']:<16}{agent[:13]:<14}{str(r.get('model', ''))[:22]:<23}{branch[:34]:<35}"
            f"{fmt.tokens(usage.get('total')):>7} {fmt.usd(r.get('cost_usd')):>9}  {task[:60]}")


def cmd_ls(args: argparse.Namespace) -> int:
    rows = _call("list")["sessions"]
    if args.json:
        print(json.dumps({"sessions": rows}, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("no sessions")
        return 0
    print(f"{'ID':<13}{'STATE':<16}{'AGENT':<14}{'MODEL':<23}{'BRANCH':<35}{'TOKENS':>7} {'COST':>9}  TASK")
    for r in rows:
        print(_fmt_row(r))
    return 0


def cmd_send(args: argparse.Namespace) -> int:
    from cockpit.headless import _clean  # undecodable argument bytes: U+FFFD, with a warning

    _call("send", id=args.id, text=_clean(args.text, "the follow-up"))
    return 0


def cmd_kill(args: argparse.Namespace) -> int:
    before = _call("get", id=args.id)
    if before.get("status") in FINAL_STATES:
        print(f"{before['id']} already ended ({before['status']}): nothing to kill")
        return 0
    _call("kill", id=args.id)
    print(f"{before['id']} killed")
    return 0


def _answered(info: dict, query: str) -> tuple[str, str]:
    """(session id, what was asked) from an ``answer`` reply, safe for a terminal."""
    from cockpit.textsafe import one_line

    what = one_line(str(info.get("summary") or "")) or "its pending tool call"
    return str(info.get("id") or query), what[:200]


def cmd_approve(args: argparse.Namespace) -> int:
    info = _call("answer", id=args.id, request_id=None, allow=True, scope="session" if args.session else "once")
    sid, what = _answered(info or {}, args.id)
    rule = (info or {}).get("suggestion") or ""
    scope = f" (and for the rest of the session{': ' + rule if rule else ''})" if args.session else " (once)"
    print(f"{sid}: approved {what}{scope}")
    return 0


def cmd_deny(args: argparse.Namespace) -> int:
    info = _call("answer", id=args.id, request_id=None, allow=False, reason=args.reason)
    sid, what = _answered(info or {}, args.id)
    print(f"{sid}: denied {what}{' (' + args.reason + ')' if args.reason else ''}")
    return 0


def cmd_budget(args: argparse.Namespace) -> int:
    from cockpit.runtime.budget import BudgetError, parse_tokens, parse_usd
    from cockpit.tui import format as fmt

    if args.server == (args.id is not None):
        raise CockpitError("give a session ID or --server (the cap of all sessions together)")
    try:
        usd = None if args.usd is None else parse_usd(args.usd, "--usd")
        tokens = None if args.tokens is None else parse_tokens(args.tokens, "--tokens")
    except BudgetError as exc:
        raise CockpitError(str(exc)) from None
    where = {"server": True} if args.server else {"id": args.id}
    info = _call("budget", **where, usd=usd, tokens=tokens, clear=args.clear)
    caps = [f"{fmt.usd(info['usd'])}" if info["usd"] is not None else "",
            f"{info['tokens']:,} tokens" if info["tokens"] is not None else ""]
    cap = " or ".join(c for c in caps if c) or "none"
    spent = f"{fmt.usd(info['spent_usd'])} · {info['spent_tokens']:,} tokens"
    who = "server (all sessions)" if info["scope"] == "server" else f"{info['id']} ({info['status']})"
    print(f"{who}: cap {cap} · spent {spent}{' · reached' if info['reached'] else ''}")
    if info["paused"]:
        print(f"paused in 'budget reached': {', '.join(info['paused'])}")
    return 0


def cmd_attach(args: argparse.Namespace) -> int:
    from cockpit.server.client import server_running

    if not server_running():
        raise CockpitError("no Cockpit server is running")
    import asyncio

    return asyncio.run(_attach(args.id))


async def _attach(query: str) -> int:
    from cockpit import events as ev
    from cockpit import wire
    from cockpit.server.client import AsyncClient, RemoteError
    from cockpit.textsafe import clean_event
    from cockpit.tui import format as fmt

    client = await AsyncClient.connect()
    try:
        try:
            row = await client.call("get", id=query)
        except RemoteError as exc:
            raise CockpitError(exc.message) from None
        sid = row["id"]
        reply = await client.call("subscribe")
        out = sys.stdout

        def show(e: ev.Event) -> int | None:
            if e.session_id != sid:
                return None
            e = clean_event(e)  # model and tool text never reach the terminal raw
            if isinstance(e, ev.TextDelta):
                out.write(e.text)
            elif isinstance(e, ev.ToolCall):
                out.write(f"\n⚙ {e.name}({fmt.tool_args(e.input, 100)})\n")
            elif isinstance(e, ev.ToolResult):
                out.write(f"  → {fmt.tool_result(e.content, e.is_error, 100)}\n")
            elif isinstance(e, ev.ApprovalRequested):
                out.write(f"\n! needs approval: {e.summary}\n{e.detail}\n"
                          f"  cockpit approve {sid} [--session]  ·  cockpit deny {sid} --reason '…'\n")
            elif isinstance(e, ev.ApprovalResolved):  # how the ask was answered (and by what)
                how = ("allowed" + (" for the session" if e.scope == "session" else "")) if e.allowed else "denied"
                out.write(f"  [{how}{': ' + e.reason if e.reason else ''}]\n")
            elif isinstance(e, ev.UserMessage):
                out.write(f"\n› {e.text}\n")
            elif isinstance(e, ev.SessionErrorEvent):
                out.write(f"\n✗ {e.kind}: {e.message}\n")
            elif isinstance(e, ev.StatusChanged):
                if e.status is ev.SessionStatus.WAITING:
                    out.write(f"\n[{sid} is waiting for you: cockpit send {sid} '…']\n")
                    out.flush()
                    return 0
                if e.status is ev.SessionStatus.BUDGET_REACHED:
                    server = e.detail.startswith("server")
                    out.write(f"\n[{sid}: {e.detail.split(' — ')[0]} — raise it: "
                              f"cockpit budget {'--server' if server else sid} --usd …]\n")
                    out.flush()
                    return 0
                if e.status.is_final:
                    out.write(f"\n[{sid} {e.status.value}{': ' + e.detail if e.detail else ''}]\n")
                    out.flush()
                    return 1 if e.status is ev.SessionStatus.ERROR else 0
            out.flush()
            return None

        last: ev.Event | None = None
        replay = [wire.event_from_json(p) for p in reply.get("events", [])]
        for e in replay:  # the output so far, then where it stands now
            if e.session_id == sid and not isinstance(e, ev.StatusChanged):
                show(e)
            elif e.session_id == sid:
                last = e
        if last is not None:
            result = show(last)
            if result is not None:
                return result
        while True:
            payload = await client.events.get()
            if payload is None:
                if client.error is not None:  # stopped answering: say so, with the way out
                    out.flush()
                    raise CockpitError(str(client.error), code=1)
                out.write("\n[the server closed the connection]\n")
                return 1
            try:
                e = wire.event_from_json(payload)
            except wire.WireError:
                continue
            result = show(e)
            if result is not None:
                return result
    finally:
        await client.close()
