"""The session backends, as one registry: a new backend is one entry here, not edits in six places.

A :class:`BackendSpec` says what a backend is called, what it is (one line for ``--help``, the
spawn dialog and ``cockpit doctor``), whether it can run here (and if not, how to make it),
which session class runs it (imported only when a session starts), whose figure its cost is,
and the sandbox it brings of its own, if any.

- ``cockpit``: this package's own loop (:mod:`cockpit.runtime.session`).
- ``claude-code``: Claude Code through the ``claude-agent-sdk`` extra (:mod:`cockpit.runtime.claude_code`).
- ``acp:NAME``: any agent of the ACP registry (:mod:`cockpit.runtime.acp.agents`; built in:
  ``acp:claude``, ``acp:codex``, ``acp:gemini``, ``acp:opencode``, ``acp:goose``, and
  ``[agents.NAME]`` from ``config.toml``), through :mod:`cockpit.runtime.acp`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.config import RuntimeConfig


@dataclass(frozen=True)
class BackendSpec:
    """One session backend. ``load()``: its session class; ``unavailable(cfg)``: why it cannot
    run here (one line saying how to fix it), or None; ``own_sandbox(cfg)``: the line saying
    which sandbox of its own confines it, or None when Cockpit's does (``own_sandbox_missing()``:
    what that sandbox lacks on this machine — the session is then unconfined —, or None); ``needs_api_key``: it
    calls the model through Cockpit's key (Claude Code may use its own login)."""

    name: str
    help: str
    cost_source: str
    load: Callable[[], Any]
    unavailable: Callable[[RuntimeConfig], str | None]
    own_sandbox: Callable[[RuntimeConfig], str] | None = None
    own_sandbox_missing: Callable[[], str | None] = lambda: None  # what its own sandbox lacks here
    needs_api_key: bool = True
    confined: str = ""  # what Cockpit's sandbox allows it, when not the default line


def _cockpit_class() -> Any:
    from cockpit.runtime.session import Session

    return Session


def _claude_class() -> Any:
    from cockpit.runtime import claude_code

    return claude_code.session_class()


def _claude_missing(cfg: RuntimeConfig) -> str | None:
    from cockpit.runtime import claude_code

    return None if claude_code.available() else claude_code.INSTALL_HINT


def _claude_sandbox_missing() -> str | None:
    """What Claude Code's own sandbox lacks here, or None: on Linux it needs bubblewrap (working)
    and socat, or Claude Code runs every command unsandboxed (it only warns on stderr)."""
    import shutil
    import sys

    if not sys.platform.startswith("linux"):
        return None  # macOS: Seatbelt, built in
    gone = [pkg for exe, pkg in (("bwrap", "bubblewrap"), ("socat", "socat")) if shutil.which(exe) is None]
    if gone:
        return f"Claude Code's own sandbox needs {' and '.join(gone)} (e.g. apt install {' '.join(gone)})"
    from cockpit.runtime.sandbox import detect

    found = detect()
    return None if found.backend is not None else f"Claude Code's own sandbox needs bubblewrap to work: {found.reason}"


BUILTIN: dict[str, BackendSpec] = {
    "cockpit": BackendSpec("cockpit", "Cockpit's own agent loop (tools run in Cockpit's sandbox)", "pricing",
                           _cockpit_class, lambda cfg: None),
    "claude-code": BackendSpec("claude-code", "Claude Code through the claude-agent-sdk extra", "claude-code",
                               _claude_class, _claude_missing,
                               own_sandbox=lambda cfg: f"sandboxed by Claude Code's own sandbox, network {cfg.network}",
                               own_sandbox_missing=_claude_sandbox_missing, needs_api_key=False),
}


def _acp(name: str, cfg: RuntimeConfig | None) -> BackendSpec:
    from cockpit.runtime import acp
    from cockpit.runtime.acp.agents import find

    agent = find(name, cfg.agents if cfg is not None else ())

    def why(c: RuntimeConfig) -> str | None:
        return (None if acp.sdk_available() else acp.INSTALL_HINT) or agent.unavailable()

    also = f"; {agent.own_sandbox} inside it" if agent.own_sandbox else ""
    return BackendSpec(agent.backend, f"{agent.title} over ACP", agent.backend, acp.session_class, why,
                       confined=f"{agent.title} runs inside it: writes only in the worktree and its own folders, "
                                f"network only to its model endpoint (Cockpit's relay holds the key){also}")


def resolve(name: str, cfg: RuntimeConfig | None = None) -> BackendSpec:
    """The backend called ``name``. Raises ValueError for an unknown one (naming the known ones)."""
    if name in BUILTIN:
        return BUILTIN[name]
    if name.startswith("acp:"):
        return _acp(name[4:], cfg)
    raise ValueError(f"unknown session backend {name!r}; use one of: {', '.join(known(cfg))}")


def known(cfg: RuntimeConfig | None = None) -> list[str]:
    """Every backend name, runnable here or not."""
    from cockpit.runtime.acp.agents import registry

    return [*BUILTIN, *(f"acp:{n}" for n in registry(cfg.agents if cfg is not None else ()))]


def available(cfg: RuntimeConfig | None = None) -> tuple[str, ...]:
    """The backends that can run here, ``cockpit`` first."""
    from cockpit.runtime.config import RuntimeConfig

    c = cfg or RuntimeConfig()
    return tuple(n for n in known(c) if resolve(n, c).unavailable(c) is None)


def session_class(name: str, cfg: RuntimeConfig | None = None) -> Any:
    """The session class of backend ``name``. Raises ValueError (unknown, or why it cannot run)."""
    from cockpit.runtime.config import RuntimeConfig

    c = cfg or RuntimeConfig()
    spec = resolve(name, c)
    why = spec.unavailable(c)
    if why:
        raise ValueError(why)
    return spec.load()


__all__ = ["BUILTIN", "BackendSpec", "available", "known", "resolve", "session_class"]
