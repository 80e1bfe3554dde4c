"""``cockpit web``: the app in a browser, through textual-serve (``cockpit.webserve``).

Each browser tab runs the normal ``cockpit`` app (``python -m cockpit`` with the app flags given
here), attached to this user's server: the same sessions as the terminal app, and closing the tab
detaches. Bound to 127.0.0.1 on a free port (``--port``) by default, with a random token in the
URL it prints; ``--listen ADDR`` binds elsewhere and warns (the tunnels to prefer: ``ssh -L``, a
VPN). The app's flags are checked once here, so a bad one is one line now, not a dead page later.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shlex
import sys

from cockpit.errors import CockpitError

LOOPBACK = "127.0.0.1"


def add_parser(sub: argparse._SubParsersAction) -> None:
    from cockpit import tui_cli

    p = sub.add_parser(
        "web", help="the app in a browser (loopback, a token in the URL); a narrow layout for phones",
        description="Serve the cockpit app to a browser (textual-serve). Each tab runs the app attached to your\n"
                    "server: the same sessions as in the terminal. Bound to 127.0.0.1 unless --listen; every\n"
                    "request needs the token in the printed URL. From another machine, tunnel:\n"
                    "ssh -L PORT:127.0.0.1:PORT THIS_HOST, then open the URL there.")
    p.add_argument("--port", type=int, default=0, metavar="N", help="TCP port (default: a free one)")
    p.add_argument("--listen", metavar="ADDR", default=None,
                   help="bind to ADDR instead of 127.0.0.1 (e.g. a VPN address; 0.0.0.0: every interface); "
                        "warns: prefer loopback and a tunnel")
    tui_cli.add_arguments(p)  # the app's flags, passed to each tab's app
    app_dests = _app_dests()
    for action in p._actions:  # given before `web` (cockpit --notes X web) or after: both count
        if action.dest in app_dests:
            action.default = argparse.SUPPRESS
        if action.dest == "no_server":
            action.help = argparse.SUPPRESS  # refused: a tab's app is a client of the server
    p.set_defaults(func=cmd_web)


def _app_dests() -> dict[str, argparse.Action]:
    """The app's flags (``tui_cli.add_arguments``) by dest, with their defaults."""
    from cockpit import tui_cli

    probe = argparse.ArgumentParser(add_help=False)
    tui_cli.add_arguments(probe)
    return {a.dest: a for a in probe._actions if a.option_strings}


def app_argv(args: argparse.Namespace) -> list[str]:
    """The app flags that differ from their defaults, as ``cockpit``'s argv (``--no-server``
    never: a tab's app is a client of the server)."""
    out: list[str] = []
    for dest, action in _app_dests().items():
        value = getattr(args, dest, action.default)
        if dest == "no_server" or value == action.default:
            continue
        flag = action.option_strings[-1]
        if isinstance(action, argparse._StoreTrueAction):
            out.append(flag)
        elif isinstance(value, list):  # a repeatable flag (--host A --host B): once per value
            for item in value:
                out += [flag, str(item)]
        else:
            out += [flag, str(value)]
    return out


def is_loopback(addr: str) -> bool:
    if addr == "localhost":
        return True
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False


def tunnel(host: str, port: int, this_host: str) -> str:
    """The ``ssh -L`` that reaches a port bound to the loopback address ``host`` from another
    machine (``localhost`` binds 127.0.0.1 too; an IPv6 address goes in brackets)."""
    target = LOOPBACK if host == "localhost" else (f"[{host}]" if ":" in host else host)
    return f"ssh -L {port}:{target}:{port} {this_host}"


def _check_listen(addr: str) -> None:
    """``--listen`` is an address; ``ADDR:PORT`` (an IPv4 address or a name, then a port) is one
    line naming ``--port``, before any warning about where it would listen."""
    head, sep, tail = addr.rpartition(":")
    if sep and tail.isdigit() and head and ":" not in head.strip("[]"):
        raise CockpitError(f"--listen {addr}: an address without a port (give the port with --port {tail})")
    if not addr.isprintable() or any(c.isspace() for c in addr):
        raise CockpitError(f"--listen {addr!r}: an address has no spaces or control characters")


def url(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/{token}/"


def cmd_web(args: argparse.Namespace) -> int:
    from cockpit import tui_cli

    if getattr(args, "no_server", False) or os.environ.get("COCKPIT_NO_SERVER"):
        raise CockpitError("cockpit web serves the app attached to the server; drop --no-server "
                           "(COCKPIT_NO_SERVER)")
    if not 0 <= args.port <= 65535:
        raise CockpitError(f"--port {args.port}: a port is 0 (a free one) to 65535")
    if args.listen:
        _check_listen(args.listen)
    tui_cli.prepare(args)  # a bad flag or config: one line now
    try:
        import textual_serve  # noqa: F401
    except ImportError:
        raise CockpitError("cockpit web needs textual-serve: pip install textual-serve") from None
    from cockpit.server.client import ServerError, ensure_server, server_pid

    if server_pid() is None:
        print("cockpit web: starting the Cockpit server…", flush=True)
    try:
        ensure_server()  # the tabs attach to it: started once here, not by the first tab
    except ServerError as exc:
        raise CockpitError(str(exc)) from None

    import asyncio
    import socket

    from cockpit.webserve import TokenServer, new_token, serve

    host = args.listen or LOOPBACK
    if not is_loopback(host):
        print(f"cockpit web: warning: listening on {host}, beyond this machine: anyone who can reach it and "
              "learns the URL's token drives your sessions, and plain HTTP carries the token in clear. "
              "Prefer the default (127.0.0.1) and a tunnel: ssh -L PORT:127.0.0.1:PORT this-host, or a VPN.",
              file=sys.stderr)
    token = new_token()
    command = shlex.join([sys.executable, "-m", "cockpit", *app_argv(args)])

    def ready(port: int) -> None:
        shown = socket.gethostname() if host in ("0.0.0.0", "::") else host
        if is_loopback(host):
            print(f"cockpit web: from another machine: {tunnel(host, port, socket.gethostname())}, "
                  "then open the same URL there", flush=True)
        print(f"cockpit web: {url(shown, port, token)}", flush=True)
        print("cockpit web: ctrl+c stops serving (the sessions go on in the server)", flush=True)

    os.environ[tui_cli.WEB_TAB] = "1"  # (the tabs' apps inherit it: they detach without a word here)
    try:
        asyncio.run(serve(TokenServer(command, token), host, args.port, ready))
    except OSError as exc:
        raise CockpitError(f"cannot listen on {host}:{args.port}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        pass
    print("cockpit web: stopped (the sessions go on in the server: cockpit ls)", flush=True)
    return 0
