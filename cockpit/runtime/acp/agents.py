"""The agents Cockpit can run over ACP (Zed's Agent Client Protocol): data, not code.

An :class:`AgentDef` says how to start one agent (its command, with alternatives), how to tell it
is installed (the command is found on ``PATH`` or in Cockpit's own agents folder), how to install
it (one line), which environment variables carry the API key, the base URL and the model, and
any environment it needs to run unattended (no auto-update, no telemetry). :data:`BUILTIN` holds
Claude Code, Codex, Gemini CLI, OpenCode and goose; ``[agents.NAME]`` tables in ``config.toml``
add agents or override fields of a built-in one::

    [agents.myagent]
    command = ["my-agent", "--acp"]          # required for a new agent
    title = "My agent"
    install = "npm install -g my-agent"
    key_env = ["MY_AGENT_API_KEY"]            # gets a placeholder: the real key stays with Cockpit
    base_url_env = ["MY_AGENT_BASE_URL"]      # gets the address of Cockpit's model relay
    model_env = ["MY_AGENT_MODEL"]
    env = { MY_AGENT_TELEMETRY = "0" }

``cockpit agents`` lists them; ``--backend acp:NAME`` runs one as a session.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


class AgentConfigError(ValueError):
    """A bad ``[agents.NAME]`` table (one line naming the key)."""


@dataclass(frozen=True)
class AgentDef:
    """One ACP agent. ``commands``: alternatives, the first whose program is found is run.
    ``npm``: the npm package ``cockpit agents install`` installs (None: ``install`` is a hint only).
    ``provider``: how the agent is pointed at the model relay — ``anthropic`` (the ``*_env``
    variables) or ``opencode`` (its ``OPENCODE_CONFIG_CONTENT``). ``model_prefix``: put before the
    model id where the agent names models by provider (``anthropic/``)."""

    name: str
    title: str
    commands: tuple[tuple[str, ...], ...]
    install: str = ""
    npm: str | None = None
    key_env: tuple[str, ...] = ()
    base_url_env: tuple[str, ...] = ()
    model_env: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    provider: str = "anthropic"
    model_prefix: str = ""
    own_sandbox: str = ""  # the agent's own sandbox, named in the pane when it has one
    upstream: str = ""  # its provider's API base URL ("": Cockpit's base_url, the Anthropic Messages API)
    upstream_key_env: str = ""  # the variable of Cockpit's environment holding that provider's key
    auth: str = "x-api-key"  # how the relay sends that key: x-api-key | bearer | x-goog-api-key

    def to_wire(self) -> dict[str, Any]:
        """As JSON (a client sends its config's agents with a spawn)."""
        from dataclasses import asdict

        return asdict(self)

    @classmethod
    def from_wire(cls, data: Any) -> AgentDef:
        """From :meth:`to_wire`'s JSON. Raises :class:`AgentConfigError` on a malformed one."""
        try:
            d = dict(data)
            d["commands"] = tuple(tuple(str(a) for a in argv) for argv in d["commands"])
            for key in ("key_env", "base_url_env", "model_env"):
                d[key] = tuple(str(v) for v in d.get(key, ()))
            d["env"] = {str(k): str(v) for k, v in dict(d.get("env", {})).items()}
            agent = cls(**d)
        except (TypeError, KeyError, ValueError) as exc:
            raise AgentConfigError(f"a malformed agent definition: {exc}") from None
        if not agent.commands or not all(agent.commands):
            raise AgentConfigError(f"agent {agent.name!r} has no command")
        return agent

    @property
    def backend(self) -> str:
        return f"acp:{self.name}"

    def command(self) -> list[str] | None:
        """The argv to run (its program resolved to a path), or None when none is installed."""
        for argv in self.commands:
            found = find_program(argv[0])
            if found:
                return [found, *argv[1:]]
        return None

    def unavailable(self) -> str | None:
        """Why it cannot run here (one line with the way to install it), or None."""
        if self.command() is not None:
            return None
        names = " or ".join(f"`{a[0]}`" for a in self.commands)
        how = f"cockpit agents install {self.name}" if self.npm else self.install
        return f"{self.title} is not installed ({names} not found on PATH): {how or 'install it'}"


def agents_dir() -> Path:
    """Where ``cockpit agents install`` puts npm agents (``<data>/agents``)."""
    from cockpit.runtime.config import data_dir

    root = data_dir()
    if root is None:
        import platformdirs

        root = platformdirs.user_data_path("cockpit")
    return root / "agents"


def find_program(name: str) -> str | None:
    """``name`` on ``PATH``, else in Cockpit's agents folder (``node_modules/.bin``)."""
    if os.sep in name:
        return name if os.access(name, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    local = agents_dir() / "node_modules" / ".bin" / name
    return str(local) if os.access(local, os.X_OK) else None


_QUIET = {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
          "ENABLE_TOOL_SEARCH": "false"}

BUILTIN: dict[str, AgentDef] = {a.name: a for a in (
    AgentDef("claude", "Claude Code", (("claude-agent-acp",), ("claude-code-acp",)),
             install="npm install -g @agentclientprotocol/claude-agent-acp",
             npm="@agentclientprotocol/claude-agent-acp",
             key_env=("ANTHROPIC_API_KEY",), base_url_env=("ANTHROPIC_BASE_URL",), model_env=("ANTHROPIC_MODEL",),
             env=dict(_QUIET)),
    AgentDef("codex", "Codex", (("codex-acp",),), install="npm install -g @zed-industries/codex-acp",
             npm="@zed-industries/codex-acp", key_env=("OPENAI_API_KEY",), base_url_env=("OPENAI_BASE_URL",),
             own_sandbox="Codex's own sandbox (workspace-write)", upstream="https://api.openai.com/v1",
             upstream_key_env="OPENAI_API_KEY", auth="bearer"),
    AgentDef("gemini", "Gemini CLI", (("gemini", "--experimental-acp"),), install="npm install -g @google/gemini-cli",
             npm="@google/gemini-cli", key_env=("GEMINI_API_KEY",), base_url_env=("GOOGLE_GEMINI_BASE_URL",),
             model_env=("GEMINI_MODEL",), env={"GEMINI_CLI_NO_RELAUNCH": "true"},
             upstream="https://generativelanguage.googleapis.com", upstream_key_env="GEMINI_API_KEY",
             auth="x-goog-api-key"),
    AgentDef("opencode", "OpenCode", (("opencode", "acp"),), install="npm install -g opencode-ai", npm="opencode-ai",
             provider="opencode", model_prefix="anthropic/",
             env={"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                  "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_SHARE": "1"}),
    AgentDef("goose", "goose", (("goose", "acp"),),
             install="see https://block.github.io/goose/docs/getting-started/installation",
             key_env=("ANTHROPIC_API_KEY",), base_url_env=("ANTHROPIC_HOST",), model_env=("GOOSE_MODEL",),
             env={"GOOSE_PROVIDER": "anthropic"}),
)}

_STR_LISTS = ("key_env", "base_url_env", "model_env")
AUTH_STYLES = ("x-api-key", "bearer", "x-goog-api-key")
_KEYS = {"command", "title", "install", "npm", "env", "provider", "model_prefix", "upstream", "upstream_key_env",
         "auth", *_STR_LISTS}


def _str_list(where: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise AgentConfigError(f"{where}.{key} must be a list of strings, got {value!r}")
    return tuple(v.strip() for v in value)


def parse_agents(table: Any, source: str = "config.toml") -> tuple[AgentDef, ...]:
    """The ``[agents]`` table of ``config.toml`` as agent definitions: new agents, and built-in
    ones with some fields replaced. Raises :class:`AgentConfigError` naming the bad key."""
    if table is None:
        return ()
    if not isinstance(table, dict):
        raise AgentConfigError(f"{source}: [agents] must hold tables ([agents.NAME])")
    out = []
    for name, spec in table.items():
        where = f"{source}: agents.{name}"
        if not isinstance(spec, dict):
            raise AgentConfigError(f"{where} must be a table ([agents.{name}])")
        if not name or not all(c.isalnum() or c in "-_." for c in name):
            raise AgentConfigError(f"{where}: an agent name is letters, digits, '-', '_' or '.'")
        unknown = sorted(set(spec) - _KEYS)
        if unknown:
            raise AgentConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
        base = BUILTIN.get(name)
        changes: dict[str, Any] = {}
        if "command" in spec:
            changes["commands"] = (_str_list(where, "command", spec["command"]),)
        elif base is None:
            raise AgentConfigError(f"{where}: a new agent needs command = [\"program\", \"arg\"…]")
        for key in ("title", "install", "npm", "provider", "model_prefix", "upstream", "upstream_key_env", "auth"):
            if key in spec:
                if not isinstance(spec[key], str):
                    raise AgentConfigError(f"{where}.{key} must be a string, got {spec[key]!r}")
                changes[key] = spec[key]
        if changes.get("provider", "anthropic") not in ("anthropic", "opencode"):
            raise AgentConfigError(f"{where}.provider must be anthropic or opencode")
        if changes.get("auth", "x-api-key") not in AUTH_STYLES:
            raise AgentConfigError(f"{where}.auth must be one of {', '.join(AUTH_STYLES)}")
        if changes.get("upstream") and not str(changes["upstream"]).startswith(("http://", "https://")):
            raise AgentConfigError(f"{where}.upstream must be an http(s) URL")
        for key in _STR_LISTS:
            if key in spec:
                changes[key] = _str_list(where, key, spec[key])
        if "env" in spec:
            env = spec["env"]
            if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
                raise AgentConfigError(f"{where}.env must be a table of strings, e.g. {{ NAME = \"value\" }}")
            changes["env"] = {**(base.env if base else {}), **env}
        if base is not None:
            out.append(replace(base, **changes))
        else:
            changes.setdefault("title", name)
            out.append(AgentDef(name=name, **changes))
    return tuple(out)


def registry(extra: tuple[AgentDef, ...] = ()) -> dict[str, AgentDef]:
    """Every agent: the built-in ones, replaced or joined by ``extra`` (from config)."""
    out = dict(BUILTIN)
    for agent in extra:
        out[agent.name] = agent
    return out


def find(name: str, extra: tuple[AgentDef, ...] = ()) -> AgentDef:
    """The agent called ``name``. Raises ValueError naming the known ones."""
    agents = registry(extra)
    if name not in agents:
        raise ValueError(f"unknown ACP agent {name!r}; known: {', '.join(sorted(agents))} "
                         "(add one with an [agents.NAME] table in config.toml)")
    return agents[name]


__all__ = ["AgentDef", "AgentConfigError", "BUILTIN", "agents_dir", "find", "find_program", "parse_agents", "registry"]
