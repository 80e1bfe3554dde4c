"""How a client reaches a Cockpit server: the typed seam between the clients and the wire.

A :class:`Transport` opens a :class:`Connection` — a connected stream socket that speaks the
protocol of ``docs/PROTOCOL.md`` unchanged — plus whatever the transport learnt on the way (the
remote bridge's hello) and how to let go of it (an ``ssh`` child to end). Both clients of
:mod:`cockpit.server.client` take a transport (``BlockingClient.over``, ``AsyncClient.over``),
so every command and the app reach a local server and a remote one the same way.

- :class:`UnixTransport`: this user's server on its Unix socket (started when none runs and
  ``start`` is true, as tmux does).
- :class:`cockpit.server.ssh.SshTransport`: a server on another host, through the user's own
  ``ssh`` and ``cockpit server bridge`` there (its child's stdio is one end of a socket pair).

:func:`transport_for` picks one: no host is this machine's server.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.config import HostEntry


@dataclass
class Connection:
    """A connected stream to a server. ``where``: how messages name it (a socket path, or
    ``host NAME``); ``hello``: the remote bridge's first line (``{}`` for a local socket);
    ``release``: called once by :meth:`close` after the socket is closed (ends an ssh child)."""

    sock: socket.socket
    where: str
    hello: dict[str, Any] = field(default_factory=dict)
    release: Callable[[], None] | None = None
    _closed: bool = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.sock.close()
        except OSError:
            pass
        if self.release is not None:
            self.release()


@runtime_checkable
class Transport(Protocol):
    """Opens connections to one server. ``label``: the server's name for the user (``local``
    or the host's name); ``remote``: paths on the server's side are not this machine's."""

    label: str
    remote: bool

    def connect(self, timeout: float) -> Connection:
        """A new connection within ``timeout`` seconds. Raises ``ServerError`` (one line for the
        user) or ``ServerHung``."""
        ...


class UnixTransport:
    """This machine's server on its Unix socket."""

    label = "local"
    remote = False

    def __init__(self, path: Path | str | None = None, start: bool = False):
        from cockpit.server import paths

        self.path = Path(path) if path is not None else paths.socket_path()
        self.start = start

    def connect(self, timeout: float) -> Connection:
        from cockpit.server import client

        if self.start:
            client.ensure_server()
        return Connection(client._connect(self.path, timeout), str(self.path))


def transport_for(host: HostEntry | None, start: bool = False) -> Transport:
    """The transport to ``host`` (a :class:`~cockpit.runtime.config.HostEntry`): its ``socket``
    on this machine, else ssh; None: this machine's server (started when ``start``; a remote
    bridge always starts its server)."""
    if host is None:
        return UnixTransport(start=start)
    if host.socket:  # a server of this machine (another data folder), not through ssh
        return UnixTransport(Path(host.socket).expanduser())
    from cockpit.server.ssh import SshTransport

    return SshTransport(host)


__all__ = ["Connection", "Transport", "UnixTransport", "transport_for"]
