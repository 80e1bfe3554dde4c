"""Which hosts the app's grid shows, and how to reach each (``cockpit --host A --host B``,
``[grid] hosts = [...]``, ``[hosts.NAME]`` in config.toml).

A name is ``local`` (this machine's server, started when none runs), a ``[hosts.NAME]`` table,
or — not in the config — an ssh destination itself. A table with ``socket = "/path/server.sock"``
is a server reached over that Unix socket (a second server on this machine, e.g. another data
folder); any other is an SSH host (``ssh = "user@box"``, default the NAME), reached through the
SSH transport's connector: :func:`ssh_connector_for` is the one place that resolves it. Each
table may say ``notes`` and ``workspace`` (folders on that host: the notes its sessions get, the
spawn dialog's default workspace), ``command`` and ``timeout`` (for the SSH transport).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from cockpit import hostids
from cockpit.errors import CockpitError
from cockpit.runtime.config import ConfigError, HostEntry, parse_grid, parse_hosts
from cockpit.server.hosts import Connector, Host, ShellOpener

GridHost = HostEntry  # one host as configured: ``socket`` set → a Unix socket; else ``ssh``


def _read(config_file: Path) -> dict[str, Any]:
    if not config_file.is_file():
        return {}
    try:
        return tomllib.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CockpitError(f"cannot read {config_file}: {exc}") from None


def grid_hosts(names: list[str] | None, config_file: Path) -> list[GridHost]:
    """The hosts of the grid: ``names`` (``--host``, in order), else ``[grid] hosts``; [] when
    neither says any (the app of one local server). Raises CockpitError."""
    data = _read(config_file)
    where = str(config_file)
    try:  # [hosts.NAME] and [grid]: read by the config's own parsers, the one definition of each
        table = parse_hosts(data.get("hosts", {}), where)
        if not names:
            names = parse_grid(data.get("grid", {}), where)
    except ConfigError as exc:
        raise CockpitError(str(exc)) from None
    out: list[GridHost] = []
    for name in names:
        try:
            hostids.check_name(name)
        except ValueError as exc:
            raise CockpitError(f"--host {name!r}: {exc}") from None
        if name in (h.name for h in out):
            raise CockpitError(f"host {name} is named twice")
        if name == hostids.LOCAL:
            out.append(GridHost(name))
        elif name in table:
            out.append(table[name])
        elif name.startswith("-"):
            raise CockpitError(f"--host needs a host name or an ssh destination, got {name!r}")
        else:
            out.append(GridHost(name, ssh=name))  # not configured: the name is the ssh destination
        _one_name_each(out)
    return out


def _one_name_each(hosts: list[GridHost]) -> None:
    """Refuse the last of ``hosts`` when it is an earlier one under another name (the same ssh
    destination and command, or the same socket): its server's sessions would show twice."""
    new = hosts[-1]
    for old in hosts[:-1]:
        same = (old.socket == new.socket if new.socket else
                not old.socket and new.ssh == old.ssh and new.command == old.command)
        if same and new.name != hostids.LOCAL and old.name != hostids.LOCAL:
            where = f"socket {new.socket}" if new.socket else f"ssh destination {new.ssh}"
            raise CockpitError(f"hosts {old.name} and {new.name} are the same {where}: name it once")


def ssh_connector_for(host: GridHost, config: Any) -> Connector:
    """The SSH transport's connector for ``host`` — the one seam to ``cockpit.server.ssh``
    (``await ssh_connector(NAME, config, notes=…)``: a connected, subscribed ``RemoteRuntime``;
    NAME is looked up in ``[hosts.NAME]`` there, else taken as the ssh destination)."""
    from cockpit.server.ssh import ssh_connector

    async def over_ssh() -> Any:
        return await ssh_connector(host.name, config, notes=host.notes)

    return over_ssh


def ssh_shell_for(host: GridHost) -> ShellOpener:
    """How the app opens a shell in a folder of the SSH host ``host``: the user's own ``ssh -t``
    there, built as the transport builds its own (``cockpit.server.ssh.open_shell``)."""
    def open_there(folder: str, edit: str | None = None) -> int:
        from cockpit.server.ssh import open_shell

        return open_shell(host, folder, edit)

    return open_there


def connector_for(host: GridHost, config: Any, local_notes: str | None = None) -> Connector:
    """How the grid reaches ``host``: the local server (started when none runs), a Unix socket,
    or SSH (:func:`ssh_connector_for`)."""
    from cockpit.server.remote import RemoteRuntime

    if host.name == hostids.LOCAL:
        async def local() -> RemoteRuntime:
            import asyncio

            from cockpit.server.client import ensure_server

            path = await asyncio.to_thread(ensure_server)
            return await RemoteRuntime.attach(config, notes=local_notes, path=path)

        return local
    if host.socket:
        path = Path(host.socket).expanduser()

        async def over_socket() -> RemoteRuntime:
            return await RemoteRuntime.attach(config, notes=host.notes, path=path, send_keys=host.sends_keys)

        return over_socket
    return ssh_connector_for(host, config)


def hosts_for_app(hosts: list[GridHost], config: Any, local_notes: str | None = None) -> list[Host]:
    """The :class:`~cockpit.server.hosts.Host`\\s of the grid (every SSH host resolved now: a
    missing transport is said before the app starts)."""
    out = []
    for h in hosts:
        same_machine = h.name == hostids.LOCAL or bool(h.socket)
        out.append(Host(h.name, connector_for(h, config, local_notes), workspace=h.workspace,
                        notes=local_notes if h.name == hostids.LOCAL else h.notes, same_machine=same_machine,
                        shell=None if same_machine else ssh_shell_for(h)))
    return out
