"""``cockpit attach ID [--host NAME]``: follow one session's output until it waits or ends.

The output so far comes first (the ``subscribe`` reply replays it), then the live events. On
another host a dropped connection (the ssh child gone, or no line — not even a keepalive — for
the read timeout) is not the end: the session goes on in that host's server, so attach says so,
reconnects with back-off (1 s, 2 s, 4 s … 15 s; for :data:`RECONNECT_S` seconds in all,
``$COCKPIT_RECONNECT_S``) and shows every event since the drop, none twice
(:mod:`cockpit.server.replay`).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, TextIO

from cockpit.errors import CockpitError

if TYPE_CHECKING:  # pragma: no cover
    from cockpit import events as ev
    from cockpit.runtime.sessionlog import SessionLog
    from cockpit.server.client import AsyncClient
    from cockpit.server.transport import Transport

RECONNECT_S = 120.0
BACKOFF_MAX_S = 15.0


def reconnect_window() -> float:
    try:
        value = float(os.environ.get("COCKPIT_RECONNECT_S") or RECONNECT_S)
    except ValueError:
        return RECONNECT_S
    return value if value > 0 else RECONNECT_S


def attach(args: argparse.Namespace) -> int:
    from cockpit.host_cli import host_name, transport

    tr = transport(args)
    if not tr.remote:
        from cockpit.server.client import server_running

        if not server_running():
            raise CockpitError("no Cockpit server is running")
    import asyncio

    return asyncio.run(_attach(args.id, tr, host_name(args)))


class _Shower:
    """Writes one session's events to a terminal; :meth:`show` returns an exit code once the
    session waits for the user or ends, else None."""

    def __init__(self, sid: str, out: TextIO, host: str | None = None):
        from cockpit.host_cli import hint

        self.sid = sid
        self.out = out
        self.on = hint(host)  # the hints name the host of a remote session: they work as copied
        self._asked: str | None = None  # an ask whose answer hint waits for the next event

    def show(self, e: ev.Event) -> int | None:
        from cockpit import events as ev
        from cockpit.textsafe import clean_event
        from cockpit.tui import format as fmt

        out, sid, on = self.out, self.sid, self.on
        if e.session_id != sid:
            return None
        e = clean_event(e)  # model and tool text never reach the terminal raw
        if self._asked is not None:
            # the keys to answer an ask, unless it was answered at once (a headless session's asks
            # are denied as they come: `cockpit approve` could only fail)
            if not (isinstance(e, ev.ApprovalResolved) and e.request_id == self._asked):
                out.write(f"  cockpit approve{on} {sid} [--session]  ·  cockpit deny{on} {sid} --reason '…'\n")
            self._asked = None
        if isinstance(e, ev.TextDelta):
            out.write(e.text)
        elif isinstance(e, ev.ToolCall):
            out.write(f"\n⚙ {e.name}({fmt.tool_args(e.input, 100)})\n")
        elif isinstance(e, ev.ToolResult):
            outside = "ran outside the sandbox: " if fmt.ran_outside(e.content) else ""
            out.write(f"  → {outside}{fmt.tool_result(e.content, e.is_error, 100)}\n")
        elif isinstance(e, ev.ApprovalRequested):
            detail = e.detail.strip()  # (a command's ask: its summary is the command)
            shown = "" if not detail or detail == e.summary.strip() else f"{e.detail}\n"
            out.write(f"\n! needs approval: {e.summary}\n{shown}")
            self._asked = e.request_id
        elif isinstance(e, ev.Preseeded) and (e.memory or e.error):  # the notes given, before its first turn
            lines = [n.name for n in e.notes if n.kind == "line"]
            listed = [n.name for n in e.notes if n.kind != "line"]
            if e.error:
                out.write(f"[preseed failed: {e.error}]\n")
            elif not e.notes:
                out.write("[notes given: none qualified]\n")
            else:
                out.write(f"[notes given: {', '.join(lines) or 'no line'}"
                          + (f"; index: {', '.join(listed)}" if listed else "") + "]\n")
        elif isinstance(e, ev.ApprovalResolved):  # how the ask was answered (and by what)
            how = ("allowed" + (" for the session" if e.scope == "session" else "")) if e.allowed else "denied"
            out.write(f"  [{how}{': ' + e.reason if e.reason else ''}]\n")
        elif isinstance(e, ev.UserMessage):
            out.write(f"\n› {e.text}\n")
        elif isinstance(e, ev.SessionErrorEvent):
            out.write(f"\n✗ {e.kind}: {e.message}\n")
        elif isinstance(e, ev.StatusChanged):
            if e.status is ev.SessionStatus.WAITING:
                out.write(f"\n[{sid} is waiting for you: cockpit send{on} {sid} '…']\n")
                out.flush()
                return 0
            if e.status is ev.SessionStatus.BUDGET_REACHED:
                server = e.detail.startswith("server")
                out.write(f"\n[{sid}: {e.detail.split(' — ')[0]} — raise it: "
                          f"cockpit budget{on} {'--server' if server else sid} --usd …]\n")
                out.flush()
                return 0
            if e.status.is_final:
                out.write(f"\n[{sid} {e.status.value}{': ' + e.detail if e.detail else ''}]\n")
                out.flush()
                return 1 if e.status is ev.SessionStatus.ERROR else 0
        out.flush()
        return None


async def _subscribe(client: AsyncClient, sid: str) -> list[ev.Event]:
    from cockpit import wire

    reply = await client.call("subscribe")  # (a quick method: given up on in time, keepalives or not)
    payloads = reply.get("events") if isinstance(reply, dict) else None
    if not isinstance(payloads, list):
        raise CockpitError(f"{client.path} sent a malformed answer to 'subscribe' (is it the same Cockpit version?)")
    events = []
    for payload in payloads:
        try:
            events.append(wire.event_from_json(payload))
        except wire.WireError:
            continue  # an event this client does not know (as in the stream): skipped
    return [e for e in events if e.session_id == sid]


def _only(listed: dict) -> str:
    """``attach`` without an id: the one session that needs the user, else the only one not
    ended; several or none is a one-line error naming them."""
    from cockpit.events import SessionStatus
    from cockpit.textsafe import short

    live = []
    for row in listed.get("sessions") or []:
        try:
            status = SessionStatus(row.get("status"))
        except ValueError:
            continue
        if not status.is_final:
            live.append((row, status))
    for group in ([r for r, st in live if st.needs_user], [r for r, _ in live]):
        if len(group) == 1:
            return str(group[0]["id"])
        if group:
            names = ", ".join(f"{r['id']} ({r.get('status')}: {short(str(r.get('task', '')), 40)})"
                              for r in group[:6])
            raise CockpitError(f"{len(group)} sessions could be meant: give an id — {names}")
    raise CockpitError("no session is running (cockpit ls lists the ended ones: attach ID shows one)")


async def _attach(query: str | None, tr: Transport, host: str | None = None) -> int:
    from cockpit import events as ev
    from cockpit import wire
    from cockpit.runtime.sessionlog import SessionLog
    from cockpit.server.client import AsyncClient, RemoteError

    client = await AsyncClient.over(tr)
    try:
        try:
            row = await client.call("get", id=query or _only(await client.call("list")))
        except RemoteError as exc:
            raise CockpitError(exc.message) from None
        sid = row.get("id") if isinstance(row, dict) else None
        if not isinstance(sid, str) or not sid:
            raise CockpitError(f"{client.path} sent a malformed answer to 'get' (is it the same Cockpit version?)")
        shower = _Shower(sid, sys.stdout, host)
        seen = SessionLog()  # this session's events shown so far, as the server logs them
        last: ev.Event | None = None
        for e in await _subscribe(client, sid):  # the output so far, then where it stands now
            seen.add(e)
            if isinstance(e, ev.StatusChanged):
                last = e
            else:
                shower.show(e)
        if last is not None:
            result = shower.show(last)
            if result is not None:
                return result
        while True:
            payload = await client.events.get()
            if payload is None:
                if not tr.remote:
                    if client.error is not None:  # stopped answering: say so, with the way out
                        sys.stdout.flush()
                        raise CockpitError(str(client.error), code=1)
                    sys.stdout.write("\n[the server closed the connection]\n")
                    return 1
                await client.close()
                client, result = await _reconnect(tr, sid, seen, shower, client.error)
                if result is not None:
                    return result
                continue
            try:
                e = wire.event_from_json(payload)
            except wire.WireError:
                continue
            if e.session_id == sid:
                seen.add(e)
            result = shower.show(e)
            if result is not None:
                return result
    finally:
        await client.close()


async def _reconnect(tr: Transport, sid: str, seen: SessionLog, shower: _Shower,
                     why: Exception | None) -> tuple[AsyncClient, int | None]:
    """Connect again (with back-off) and show what happened since the drop. Returns the new
    client and an exit code when the session meanwhile waits or ended (else None). Raises
    CockpitError once the reconnect window is over."""
    import asyncio

    from cockpit.server.client import AsyncClient, ServerError
    from cockpit.server.replay import since

    out = shower.out
    out.write(f"\n[connection to host {tr.label} lost ({why or 'the ssh connection ended'}); "
              f"{sid} goes on there — reconnecting]\n")
    out.flush()
    loop = asyncio.get_running_loop()
    end = loop.time() + reconnect_window()
    pause = 1.0
    while True:
        client = None
        try:
            client = await AsyncClient.over(tr)
            snapshot = await _subscribe(client, sid)
            break
        except ServerError as exc:
            if client is not None:
                await client.close()
            if loop.time() + pause >= end:
                raise CockpitError(f"lost host {tr.label} and could not reconnect within "
                                   f"{reconnect_window():.0f} s: {exc}", code=1) from None
            out.write(f"[reconnecting to host {tr.label} failed: {exc}; next try in {pause:.0f} s]\n")
            out.flush()
            await asyncio.sleep(pause)
            pause = min(pause * 2, BACKOFF_MAX_S)
    new = since(seen, snapshot)
    out.write(f"[reconnected to host {tr.label}: {len(new)} event{'' if len(new) == 1 else 's'} since the drop]\n")
    out.flush()
    for e in new:
        seen.add(e)
        result = shower.show(e)
        if result is not None:
            return client, result
    return client, None


__all__ = ["attach", "reconnect_window"]
