"""``cockpit server bridge``: the remote end of a connection through ssh.

A client on another machine runs ``ssh HOST cockpit server bridge``; this relays bytes between
its stdin/stdout (the SSH channel) and this user's server's Unix socket, starting that server
when none runs. Before relaying it writes one hello line (JSON)::

    {"cockpit_bridge": 1, "version": "0.1.0", "protocol": 1, "home": "/home/me", "server_pid": 4242}

(or ``{"cockpit_bridge": 1, "version": …, "protocol": …, "error": "…"}`` when the server cannot
be started or reached), so the client can say "version mismatch" or what went wrong in one line.
Then the protocol flows unchanged in both directions until either side closes: the client's end
(stdin at EOF: the ssh connection ended) closes the server connection, and the server's end
closes stdout. Nothing listens; the connection to the server is an ordinary local client's (the
server checks the peer's uid as for any other).
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys

CHUNK = 256 * 1024


def hello(**extra: object) -> bytes:
    from cockpit import __version__
    from cockpit.server.rpc import PROTOCOL_VERSION
    from cockpit.server.ssh import HELLO_KEY

    return (json.dumps({HELLO_KEY: 1, "version": __version__, "protocol": PROTOCOL_VERSION, **extra}) + "\n").encode()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def relay(inp: int, out: int, sock: socket.socket) -> None:
    """Copy ``inp`` → ``sock`` and ``sock`` → ``out`` until either ends (the caller closes the
    socket: the server sees its client leave)."""
    sfd = sock.fileno()
    while True:
        ready, _, _ = select.select([inp, sfd], [], [])
        if sfd in ready:
            try:
                data = sock.recv(CHUNK)
            except ConnectionError:
                data = b""
            if not data:
                return
            try:
                _write_all(out, data)
            except (BrokenPipeError, OSError):  # the channel is gone
                return
        if inp in ready:
            data = os.read(inp, CHUNK)
            if not data:  # the client left (the ssh connection ended): nobody reads any more
                return
            try:
                sock.sendall(data)
            except OSError:
                return


def run_bridge() -> int:
    """The bridge's main: start or find the server, say hello, relay. Exit 0 when either side
    closed; 1 when the server cannot be reached (after a hello that says why)."""
    from cockpit.server import client

    out = sys.stdout.fileno()
    try:
        path = client.ensure_server()
        sock = client._connect(path, client.CONNECT_TIMEOUT_S)
    except (client.ServerError, OSError) as exc:
        # a stopped server's pid goes as a fact: the client names the host in what to do about it
        stopped = client.stopped_pid()
        _write_all(out, hello(error=f"the Cockpit server there cannot be reached: {exc}",
                              **({"stopped_pid": stopped} if stopped is not None else {})))
        return 1
    sock.settimeout(None)
    _write_all(out, hello(home=os.path.expanduser("~"), server_pid=client.server_pid()))
    try:
        relay(sys.stdin.fileno(), out, sock)
    finally:
        sock.close()
    return 0


__all__ = ["run_bridge", "relay", "hello"]
