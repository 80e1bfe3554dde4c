"""``cockpit agents``: the ACP agents a session can run (``--backend acp:NAME``), and installing them.

``cockpit agents`` lists every agent of the registry (built in and ``[agents.NAME]`` from
``config.toml``): its backend name, whether it is installed (and where), and how to install it.
``cockpit agents install NAME…`` installs npm agents into Cockpit's own agents folder
(``<data>/agents``, found by sessions without touching ``PATH``), with the user's ``npm``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from typing import TYPE_CHECKING

from cockpit.errors import CockpitError

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.config import RuntimeConfig


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("agents", help="the ACP agents sessions can run (--backend acp:NAME); install them")
    p.set_defaults(func=_list)
    asub = p.add_subparsers(dest="agents_command", metavar="{list,install}")
    listing = asub.add_parser("list", help="every agent: backend name, installed or not, how to install it")
    listing.set_defaults(func=_list)
    inst = asub.add_parser("install", help="install npm agents into Cockpit's agents folder (needs npm)")
    inst.add_argument("names", nargs="+", metavar="NAME", help="agent names (claude, codex, gemini, opencode)")
    inst.set_defaults(func=_install)


def _config() -> RuntimeConfig:
    from cockpit.runtime import ConfigError, load_config

    try:
        return load_config()
    except ConfigError as exc:
        raise CockpitError(str(exc)) from None


def _list(args: argparse.Namespace) -> int:
    from cockpit.runtime.acp.agents import registry

    cfg = _config()
    for agent in registry(cfg.agents).values():
        argv = agent.command()
        where = f"installed: {argv[0]}" if argv else f"not installed: {agent.unavailable()}"
        print(f"acp:{agent.name:<10} {agent.title:<12} {where}")
    return 0


def _install(args: argparse.Namespace) -> int:
    from cockpit.runtime.acp.agents import agents_dir, find

    cfg = _config()
    try:
        agents = [find(n, cfg.agents) for n in args.names]
    except ValueError as exc:
        raise CockpitError(str(exc)) from None
    manual = [a for a in agents if not a.npm]
    if manual:
        raise CockpitError(f"{manual[0].title} is not an npm package: {manual[0].install}")
    npm = shutil.which("npm")
    if npm is None:
        raise CockpitError("npm is not installed (install Node.js 20 or later), or install the agent yourself: "
                           + "; ".join(a.install for a in agents))
    folder = agents_dir()
    folder.mkdir(parents=True, exist_ok=True)
    packages = [a.npm for a in agents if a.npm]
    print(f"installing {', '.join(packages)} into {folder}")
    done = subprocess.run([npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", *packages])
    if done.returncode != 0:
        raise CockpitError(f"npm install failed (exit {done.returncode})")
    for a in agents:
        print(f"acp:{a.name}: " + ("ready" if a.command() else f"still not found: {a.unavailable()}"))
    return 0


__all__ = ["add_parser"]
