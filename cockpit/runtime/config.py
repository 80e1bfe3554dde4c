"""Runtime configuration: where values come from and the paths of per-user state.

Precedence (highest first):

1. CLI flags (passed to :func:`load_config` as ``overrides``; ``None`` values are ignored),
2. environment: ``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``, ``ANTHROPIC_BASE_URL``, ``COCKPIT_MODEL``,
   ``COCKPIT_MAX_TOKENS``, ``COCKPIT_MAX_TURNS``, ``COCKPIT_CONCURRENCY``, ``COCKPIT_TOP_K``,
   ``COCKPIT_MAX_RETRIES``, ``COCKPIT_TIMEOUT``, ``COCKPIT_PRICING`` (path of a pricing override file),
   ``COCKPIT_PERMISSION_MODE``, ``COCKPIT_TOOLS``, ``COCKPIT_BASH_TIMEOUT``, ``COCKPIT_BACKEND``,
   ``COCKPIT_CLAUDE_SETTING_SOURCES`` (comma-separated ``user,project,local``; ``none`` = none),
   ``COCKPIT_SELECTOR`` (``embedded`` | ``model``), ``COCKPIT_SELECTOR_MODEL``, ``COCKPIT_SELECTOR_TIMEOUT``,
   ``COCKPIT_MAX_BUDGET_USD``, ``COCKPIT_MAX_BUDGET_TOKENS``, ``COCKPIT_SERVER_BUDGET_USD``,
   ``COCKPIT_SERVER_BUDGET_TOKENS``,
3. the config file ``config.toml`` (``$COCKPIT_DATA_DIR/config.toml`` when that variable is set,
   else ``platformdirs.user_config_path("cockpit")/config.toml``), read with ``tomllib``. Keys
   at top level or under ``[runtime]``: ``model``, ``base_url``, ``max_tokens``, ``max_turns``,
   ``concurrency``, ``top_k``, ``preseed``, ``max_retries``, ``timeout``, ``pricing``,
   ``permission_mode``, ``tools``, ``worktrees``, ``bash_timeout``, ``context_management``,
   ``notify_os``, ``backend``, ``claude_setting_sources`` (a list, e.g. ``["project"]``),
   ``selector``, ``selector_model``, ``selector_timeout``, ``max_budget_usd``, ``max_budget_tokens``,
   ``server_budget_usd``, ``server_budget_tokens`` (spend caps, :mod:`cockpit.runtime.budget`).
   A ``[permissions]`` table takes Claude
   Code's ``allow`` / ``deny`` rule lists and ``defaultMode``; a ``[preseed]`` table takes
   ``selector``, ``model`` and ``timeout`` (the selector's), e.g.::

       [preseed]
       selector = "model"        # a small model picks the notes (default "embedded")
       model = "claude-haiku-5-5"

   The API key is never read from the config file (environment or flag only),
4. the defaults of :class:`RuntimeConfig`.

Nothing here prints or logs the API key; ``repr(RuntimeConfig)`` masks it (and the auth token). A
process that took the key variables out of its environment (:mod:`cockpit.runtime.keyguard`)
still finds them here.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.sandbox import SandboxSettings

DEFAULT_MODEL = "claude-sonnet-5-5"
CLAUDE_SETTING_SOURCES = ("user", "project", "local")


def data_dir() -> Path | None:
    """``$COCKPIT_DATA_DIR`` as a Path, or None when unset."""
    value = os.environ.get("COCKPIT_DATA_DIR")
    return Path(value).expanduser() if value else None


def sessions_dir() -> Path:
    """Folder of session transcripts (``<data>/sessions``); not created here."""
    root = data_dir()
    if root is not None:
        return root / "sessions"
    import platformdirs

    return platformdirs.user_data_path("cockpit") / "sessions"


def config_dir() -> Path:
    """Folder of ``config.toml`` and a user ``pricing.json``/``pricing.toml``."""
    root = data_dir()
    if root is not None:
        return root
    import platformdirs

    return platformdirs.user_config_path("cockpit")


def config_path() -> Path:
    return config_dir() / "config.toml"


def worktrees_dir() -> Path:
    """Folder of the sessions' git worktrees (``<data>/worktrees``); not created here."""
    root = data_dir()
    if root is not None:
        return root / "worktrees"
    import platformdirs

    return platformdirs.user_data_path("cockpit") / "worktrees"


_SECRET_FIELDS = ("api_key", "auth_token", "provider_keys")  # never shown (repr), never logged


@dataclass
class RuntimeConfig:
    """Settings of a :class:`~cockpit.runtime.SessionManager`.

    ``max_tokens``: output tokens per model response. ``max_turns``: model responses allowed for
    one user message (the turn cap). ``concurrency``: sessions talking to the model at once
    (spawns past it are ``queued``). ``interactive``: after ``end_turn`` wait for a follow-up
    (TUI) instead of ending ``done`` (headless). ``max_retries``/``timeout`` (seconds) go to the
    SDK client; ``interrupted_retries``: re-sends of a turn whose stream ended without
    ``message_stop``. ``sessions_dir`` None → :func:`sessions_dir`. ``pricing_path`` None →
    ``COCKPIT_PRICING`` or the user's config dir (see :mod:`cockpit.runtime.pricing`).
    ``permission_mode``: default | acceptEdits | plan | bypassPermissions; ``allow``/``deny``:
    permission rules (:mod:`cockpit.runtime.permissions`). ``tools``: anthropic | portable.
    ``worktrees``: a git worktree per session when the workspace is a repository.
    ``bash_timeout``: seconds per shell command. ``context_management``: auto (use the API's
    context management near the window's end when the endpoint supports it) | off.
    ``notify_os``: desktop notifications when a session needs you and the app is not focused.
    ``backend``: ``cockpit`` (this package's own loop) | ``claude-code`` (Claude Code through the
    ``claude-agent-sdk`` extra). ``claude_setting_sources``: which of the user's Claude Code
    settings a ``claude-code`` session reads (None: all, as Claude Code does by default;
    ``()``: none; else any of ``user``, ``project``, ``local`` — ``project`` brings CLAUDE.md).
    ``top_k``: at most this many notes in the preseed block (None: as many as its token budget
    holds, up to ``memory.preseed.MAX_LINES``); also the default hit count of ``memory_search``
    (5 when None). ``selector``: ``"embedded"`` (ranking + calibrated gate) or ``"model"``
    (:mod:`cockpit.runtime.selector`: ``selector_model`` picks from the shortlist, falling back
    to the embedded selection after ``selector_timeout`` seconds or on any failure).
    ``max_budget_usd`` / ``max_budget_tokens``: a session's spend cap (USD / tokens; None = none);
    ``server_budget_usd`` / ``server_budget_tokens``: the cap on the sum over every session of the
    manager (the server's own, like ``concurrency``); see :mod:`cockpit.runtime.budget`.
    """

    api_key: str | None = field(default=None, repr=False)
    auth_token: str | None = field(default=None, repr=False)  # ANTHROPIC_AUTH_TOKEN (a bearer token)
    base_url: str | None = None
    model: str = DEFAULT_MODEL
    max_tokens: int = 4096
    max_turns: int = 25
    concurrency: int = 9
    top_k: int | None = None
    preseed: bool = True
    selector: str = "embedded"
    selector_model: str = "claude-haiku-5-5"
    selector_timeout: float = 5.0
    interactive: bool = True
    max_retries: int = 2
    timeout: float = 600.0
    interrupted_retries: int = 1
    sessions_dir: Path | None = None
    pricing_path: Path | None = None
    permission_mode: str = "default"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    tools: str = "anthropic"
    worktrees: bool = True
    worktrees_dir: Path | None = None
    bash_timeout: float = 120.0
    context_management: str = "auto"
    notify_os: bool = True
    backend: str = "cockpit"
    claude_setting_sources: tuple[str, ...] | None = None
    sandbox: bool = True
    network: str = "off"
    allow_hosts: tuple[str, ...] = ()
    sandbox_hide: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()
    max_budget_usd: float | None = None
    max_budget_tokens: int | None = None
    server_budget_usd: float | None = None
    server_budget_tokens: int | None = None
    check_command: str | None = None  # tests before merge: `check_command` or [worktrees] check_command
    api_key_helper: str | None = None  # a command printing the API key when a spawn brings none (keyhelper)
    agents: tuple[Any, ...] = ()  # [agents.NAME] tables: cockpit.runtime.acp.agents.AgentDef
    acp_timeout: float = 60.0  # seconds an ACP agent has to answer initialize / session/new
    # other providers' keys from the environment (OPENAI_API_KEY…): an ACP agent's relay puts its
    # provider's on its requests (cockpit.runtime.acp.agents.AgentDef.upstream_key_env)
    provider_keys: dict[str, str] = field(default_factory=dict, repr=False)

    def sandbox_settings(self) -> SandboxSettings:
        """The ``[sandbox]`` settings as the sandbox module takes them."""
        from cockpit.runtime.sandbox import SandboxSettings

        return SandboxSettings(self.sandbox, self.network, tuple(self.allow_hosts), tuple(self.sandbox_hide),
                               tuple(self.protected))

    def __repr__(self) -> str:  # never show the key
        parts = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.name not in _SECRET_FIELDS]
        parts[:0] = [f"{name}={'***' if getattr(self, name) else None}" for name in _SECRET_FIELDS]
        return f"RuntimeConfig({', '.join(parts)})"

    def resolved_sessions_dir(self) -> Path:
        return Path(self.sessions_dir) if self.sessions_dir else sessions_dir()

    def resolved_worktrees_dir(self) -> Path:
        return Path(self.worktrees_dir) if self.worktrees_dir else worktrees_dir()


_ENV: dict[str, tuple[str, Any]] = {
    "ANTHROPIC_API_KEY": ("api_key", str),
    "ANTHROPIC_AUTH_TOKEN": ("auth_token", str),
    "ANTHROPIC_BASE_URL": ("base_url", str),
    "COCKPIT_MODEL": ("model", str),
    "COCKPIT_MAX_TOKENS": ("max_tokens", int),
    "COCKPIT_MAX_TURNS": ("max_turns", int),
    "COCKPIT_CONCURRENCY": ("concurrency", int),
    "COCKPIT_TOP_K": ("top_k", int),
    "COCKPIT_MAX_RETRIES": ("max_retries", int),
    "COCKPIT_TIMEOUT": ("timeout", float),
    "COCKPIT_PRICING": ("pricing_path", Path),
    "COCKPIT_PERMISSION_MODE": ("permission_mode", str),
    "COCKPIT_TOOLS": ("tools", str),
    "COCKPIT_BASH_TIMEOUT": ("bash_timeout", float),
    "COCKPIT_BACKEND": ("backend", str),
    "COCKPIT_CLAUDE_SETTING_SOURCES": ("claude_setting_sources", "sources"),
    "COCKPIT_SELECTOR": ("selector", str),
    "COCKPIT_SELECTOR_MODEL": ("selector_model", str),
    "COCKPIT_SELECTOR_TIMEOUT": ("selector_timeout", float),
    "COCKPIT_NETWORK": ("network", str),
    "COCKPIT_MAX_BUDGET_USD": ("max_budget_usd", float),
    "COCKPIT_MAX_BUDGET_TOKENS": ("max_budget_tokens", int),
    "COCKPIT_SERVER_BUDGET_USD": ("server_budget_usd", float),
    "COCKPIT_SERVER_BUDGET_TOKENS": ("server_budget_tokens", int),
}
_FILE_KEYS: dict[str, Any] = {
    "model": str, "base_url": str, "max_tokens": int, "max_turns": int, "concurrency": int,
    "top_k": int, "preseed": bool, "max_retries": int, "timeout": float, "pricing": Path,
    "permission_mode": str, "tools": str, "worktrees": bool, "bash_timeout": float,
    "context_management": str, "notify_os": bool, "backend": str, "claude_setting_sources": "sources",
    "selector": str, "selector_model": str, "selector_timeout": float,
    "max_budget_usd": float, "max_budget_tokens": int, "server_budget_usd": float, "server_budget_tokens": int,
    "check_command": str, "acp_timeout": float, "api_key_helper": str,
}
_WORKTREES_TABLE = {"enabled": "worktrees", "check_command": "check_command"}  # [worktrees] (a table, not the bool)
_PRESEED_TABLE = {"selector": "selector", "model": "selector_model", "timeout": "selector_timeout"}
SELECTORS = ("embedded", "model")


def parse_setting_sources(value: Any) -> tuple[str, ...]:
    """Claude Code setting sources from a comma-separated string (``none`` or ``""`` = none) or a
    list of strings. Raises :class:`ConfigError` naming the valid values."""
    if isinstance(value, str):
        items = [] if value.strip().lower() in ("", "none") else [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value]
    else:
        raise ConfigError(f"claude setting sources must be a list of {', '.join(CLAUDE_SETTING_SOURCES)}, "
                          f"got {value!r}")
    bad = [v for v in items if v not in CLAUDE_SETTING_SOURCES]
    if bad:
        raise ConfigError(f"unknown Claude Code setting source {bad[0]!r}; use any of "
                          f"{', '.join(CLAUDE_SETTING_SOURCES)} (comma-separated) or none")
    return tuple(dict.fromkeys(items))


class ConfigError(ValueError):
    """A config value cannot be used (bad TOML, wrong type). One-line message."""


_SANDBOX_TABLE = {"enabled": "sandbox", "network": "network", "allow_hosts": "allow_hosts", "hide": "sandbox_hide",
                  "protected": "protected", "pass_env": "pass_env"}
_TABLES = {"runtime": set(_FILE_KEYS), "permissions": {"allow", "deny", "defaultMode"}, "sandbox": set(_SANDBOX_TABLE),
           "preseed": set(_PRESEED_TABLE), "keymap": None,
           "agents": None, "hosts": None, "grid": {"hosts"}}
# keymap: binding ids, checked by the app; agents: by acp.agents.parse_agents; hosts and grid: by
# cockpit.server.host_config (the app's hosts)


def _refuse_unknown(path: Path, data: dict) -> None:
    """A key this file cannot mean (a typo such as ``modle``) is an error naming it, never ignored."""
    import difflib

    for key, value in data.items():
        if key in _TABLES:
            known = _TABLES[key]
            if known is None or not isinstance(value, dict):
                continue
            for sub in value:
                if sub not in known:
                    hint = difflib.get_close_matches(sub, sorted(known), n=1)
                    raise ConfigError(f"{path}: unknown key {sub!r} in [{key}]"
                                      + (f" (did you mean {hint[0]!r}?)" if hint else ""))
        elif key not in _FILE_KEYS:
            hint = difflib.get_close_matches(key, sorted(set(_FILE_KEYS) | set(_TABLES)), n=1)
            raise ConfigError(f"{path}: unknown key {key!r}" + (f" (did you mean {hint[0]!r}?)" if hint else ""))


def _sandbox_table(path: Path, box: Any) -> dict[str, Any]:
    """``[sandbox]``: enabled, network, allow_hosts, hide, protected (type-checked)."""
    out: dict[str, Any] = {}
    if box is None:
        return out
    if not isinstance(box, dict):
        raise ConfigError(f"{path}: [sandbox] must be a table")
    for key, name in _SANDBOX_TABLE.items():
        if key not in box:
            continue
        value = box[key]
        if key == "enabled":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: sandbox.enabled must be true or false, got {value!r}")
            out[name] = value
        elif key == "network":
            if not isinstance(value, str):
                raise ConfigError(f"{path}: sandbox.network must be off, on or allow, got {value!r}")
            out[name] = value
        else:
            if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
                raise ConfigError(f"{path}: sandbox.{key} must be a list of strings, got {value!r}")
            out[name] = tuple(v.strip() for v in value)
    return out


def read_config_file(path: Path | None = None) -> dict[str, Any]:
    """The runtime keys of ``config.toml`` (``{}`` when the file does not exist).

    Raises :class:`ConfigError` on invalid TOML or a value of the wrong type.
    """
    path = path or config_path()
    if not path.exists():
        return {}
    if path.is_dir():  # not silently "no config": the user meant to configure something
        raise ConfigError(f"cannot read {path}: it is a folder, not a file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    _refuse_unknown(path, data)
    for name in ("runtime", "keymap"):  # (preseed is both: `preseed = false` and a [preseed] table)
        if name in data and not isinstance(data[name], dict):
            raise ConfigError(f"{path}: {name} must be a table ([{name}]), got {data[name]!r}")
    table = dict(data.get("runtime", {})) if isinstance(data.get("runtime"), dict) else {}
    for key in _FILE_KEYS:
        if key in data and not isinstance(data[key], dict):
            table.setdefault(key, data[key])
    if isinstance(data.get("worktrees"), dict):  # [worktrees] enabled = true, check_command = "pytest -q"
        for key, value in data["worktrees"].items():
            if key not in _WORKTREES_TABLE:
                raise ConfigError(f"{path}: unknown key {key!r} in [worktrees] (known: enabled, check_command)")
            table[_WORKTREES_TABLE[key]] = value
    if isinstance(data.get("preseed"), dict):  # [preseed] selector = "model", model, timeout
        for key, name in _PRESEED_TABLE.items():
            if key in data["preseed"]:
                table[name] = data["preseed"][key]
    out: dict[str, Any] = {}
    for key, typ in _FILE_KEYS.items():
        if key not in table:
            continue
        value = table[key]
        try:
            # TOML has types: a value of another type is a mistake, never coerced
            # (model = ["a", "b"] became the model "['a', 'b']", max_tokens = true became 1)
            if typ is bool:
                if not isinstance(value, bool):
                    raise TypeError
                out[key] = value
            elif typ is Path:
                if not isinstance(value, str):
                    raise TypeError
                out["pricing_path"] = Path(value).expanduser()
            elif typ == "sources":
                out[key] = parse_setting_sources(value)
            elif typ is int:
                if isinstance(value, bool) or not isinstance(value, int):  # 1e99 or 2.5: not a count
                    raise TypeError
                out[key] = value
            elif typ is float:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise TypeError
                out[key] = float(value)
            else:
                if not isinstance(value, str):
                    raise TypeError
                out[key] = value
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
        except (TypeError, ValueError):
            what = {str: "a string", int: "a whole number", float: "a number", bool: "true or false",
                    Path: "a path string"}.get(typ, getattr(typ, "__name__", str(typ)))
            raise ConfigError(f"{path}: '{key}' must be {what}, got {value!r}") from None
    out.update(_sandbox_table(path, data.get("sandbox")))
    if "agents" in data:
        from cockpit.runtime.acp.agents import AgentConfigError, parse_agents

        try:
            out["agents"] = parse_agents(data["agents"], str(path))
        except AgentConfigError as exc:
            raise ConfigError(str(exc)) from None
    if "hosts" in data:
        parse_hosts(data["hosts"], str(path))  # checked here: `cockpit config check` names a bad [hosts.NAME]
    if "grid" in data:
        parse_grid(data["grid"], str(path))
    perms = data.get("permissions")
    if perms is not None:
        if not isinstance(perms, dict):
            raise ConfigError(f"{path}: [permissions] must be a table")
        for key in ("allow", "deny"):
            rules = perms.get(key, [])
            if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
                raise ConfigError(f"{path}: permissions.{key} must be a list of rule strings, "
                                  'e.g. ["Bash(pytest *)"]')
            if rules:
                out[key] = tuple(rules)
        mode = perms.get("defaultMode")
        if mode is not None:
            out.setdefault("permission_mode", str(mode))
    return out


@dataclass(frozen=True)
class HostEntry:
    """A remote host sessions can run on (``[hosts.NAME]`` in config.toml; see
    :mod:`cockpit.server.ssh`). ``ssh``: the destination handed to the user's own ``ssh``
    (``user@box`` or a Host alias of ``~/.ssh/config``); ``command``: the remote ``cockpit``
    (a path, or a shell command line such as ``env COCKPIT_DATA_DIR=… cockpit``); ``notes`` and
    ``workspace``: folders *on that host* (the notes of its sessions, the default workspace of a
    spawn there); ``timeout``: seconds for ssh to connect and the remote bridge to say hello.
    ``socket``: instead of ssh, a server's Unix socket on this machine (another data folder).
    ``api_keys``: ``send`` (this machine's API key, auth token and provider keys go with each
    spawn, as to the local server) or ``host`` (none of them goes there: that host's server uses
    its own, from its environment or its config)."""

    name: str
    ssh: str = ""
    socket: str | None = None
    command: str = "cockpit"
    notes: str | None = None
    workspace: str | None = None
    timeout: float = 20.0
    api_keys: str = "send"

    @property
    def sends_keys(self) -> bool:
        return self.api_keys == "send"


_HOST_KEYS = {"ssh": str, "socket": str, "command": str, "notes": str, "workspace": str, "timeout": float,
              "api_keys": str}
API_KEYS_MODES = ("send", "host")


def check_host_name(name: Any, where: str = "config.toml") -> str:
    """``name`` when it can name a host (in a grid a session id is ``HOST:ID``), else ConfigError."""
    if not isinstance(name, str) or not name or ":" in name or not _destination_chars(name):
        raise ConfigError(f"{where}: a host name is a word without ':' or spaces, got {name!r}")
    return name


def parse_grid(table: Any, where: str = "config.toml") -> list[str]:
    """``[grid] hosts = ["local", "box"]``: the hosts the app shows without ``--host``. Raises ConfigError."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [grid] must be a table (hosts = [\"local\", \"box\"])")
    unknown = sorted(set(table) - {"hosts"})
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} in [grid] (known: hosts)")
    names = table.get("hosts", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{where}: grid.hosts must be a list of host names, e.g. [\"local\", \"box\"]")
    for name in names:
        check_host_name(name, where)
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: grid.hosts names a host twice")
    return names


def parse_hosts(table: Any, where: str = "config.toml") -> dict[str, HostEntry]:
    """The ``[hosts.NAME]`` tables as :class:`HostEntry`\\s by name. Raises ConfigError."""
    import difflib

    if not isinstance(table, dict):
        raise ConfigError(f"{where}: hosts must be tables ([hosts.NAME] with ssh = \"user@box\")")
    out: dict[str, HostEntry] = {}
    for name, entry in table.items():
        check_host_name(name, where)
        if name == "local":  # (cockpit.hostids.LOCAL)
            raise ConfigError(f"{where}: [hosts.local] cannot be configured: 'local' is always this machine's "
                              "server (in a grid and for --host); give that host another name")
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: [hosts.{name}] must be a table with ssh = \"user@box\"")
        values: dict[str, Any] = {}
        for key, value in entry.items():
            typ = _HOST_KEYS.get(key)
            if typ is None:
                hint = difflib.get_close_matches(key, sorted(_HOST_KEYS), n=1)
                raise ConfigError(f"{where}: unknown key {key!r} in [hosts.{name}]"
                                  + (f" (did you mean {hint[0]!r}?)" if hint else ""))
            if typ is float:
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                    raise ConfigError(f"{where}: hosts.{name}.{key} must be a number of seconds > 0, got {value!r}")
                value = float(value)
            elif not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where}: hosts.{name}.{key} must be a non-empty string, got {value!r}")
            elif key == "api_keys" and value.strip() not in API_KEYS_MODES:
                raise ConfigError(f"{where}: hosts.{name}.api_keys must be \"send\" (this machine's keys go with "
                                  f"each spawn) or \"host\" (the host's own), got {value!r}")
            values[key] = value.strip() if isinstance(value, str) else value
        if "socket" in values:
            if "ssh" in values:
                raise ConfigError(f"{where}: [hosts.{name}] has both ssh and socket: say one")
            out[name] = HostEntry(name=name, **values)
            continue
        if "ssh" not in values:
            values["ssh"] = name  # the NAME itself (a Host alias of ~/.ssh/config)
        if values["ssh"].startswith("-"):
            raise ConfigError(f"{where}: hosts.{name}.ssh must be a destination, not an option: {values['ssh']!r}")
        if not _destination_chars(values["ssh"]):
            raise ConfigError(f"{where}: hosts.{name}.ssh must be a destination without spaces or control "
                              f"characters, got {values['ssh']!r}")
        out[name] = HostEntry(name=name, **values)
    return out


def _destination_chars(text: str) -> bool:
    """Whether ``text`` can be an ssh destination: printable, no whitespace (ssh would refuse it
    anyway, in a message that repeats it — newlines and escape sequences included)."""
    return text.isprintable() and not any(c.isspace() for c in text)


def host_entry(name: str, config_file: Path | None = None) -> HostEntry:
    """The host ``name`` of ``[hosts.NAME]``, or — not in the config — ``name`` itself as the ssh
    destination (``cockpit ls --host user@box``). Raises ConfigError."""
    if not name or name.startswith("-") or not _destination_chars(name):
        raise ConfigError(f"--host needs a host name or an ssh destination (no spaces or control characters), "
                          f"got {name!r}")
    path = config_file or config_path()
    hosts: dict[str, HostEntry] = {}
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from None
        hosts = parse_hosts(data.get("hosts", {}), str(path))
    return hosts.get(name) or HostEntry(name=name, ssh=name)


def load_config(
    overrides: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
    base: RuntimeConfig | None = None,
) -> RuntimeConfig:
    """Build a :class:`RuntimeConfig`: ``overrides`` (CLI) > ``env`` > config file > defaults.

    ``overrides`` keys are RuntimeConfig field names; ``None`` values mean "not given".
    Raises :class:`ConfigError` for a bad config file or a non-numeric numeric env value.
    """
    if env is None:  # with the key variables this process took out of its environment (keyguard)
        from cockpit.runtime import keyguard

        env = {**keyguard.taken(), **os.environ}
    values: dict[str, Any] = {}
    values.update(read_config_file(config_file))
    for var, (name, typ) in _ENV.items():
        raw = env.get(var)
        if raw is None or raw == "":
            continue
        try:
            values[name] = parse_setting_sources(raw) if typ == "sources" else typ(raw)
        except ConfigError as exc:
            raise ConfigError(f"{var}: {exc}") from None
        except ValueError:
            raise ConfigError(f"{var} must be {typ.__name__}") from None  # value not echoed
    from cockpit.runtime.keyguard import PROVIDER_KEY_VARS

    found = {var: env[var] for var in PROVIDER_KEY_VARS if env.get(var)}
    if found:
        values["provider_keys"] = found
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = value
    known = {f.name for f in fields(RuntimeConfig)}
    unknown = set(values) - known
    if unknown:
        raise ConfigError(f"unknown config keys: {', '.join(sorted(unknown))}")
    config = replace(base or RuntimeConfig(), **values)
    _validate(config)
    return config


_POSITIVE = ("max_tokens", "max_turns", "concurrency", "top_k")
_NON_NEGATIVE = ("max_retries", "interrupted_retries")
_OPTIONAL = ("top_k",)


def _validate(config: RuntimeConfig) -> None:
    """Raise :class:`ConfigError` for values no flag would accept, wherever they came from
    (flag, environment or config file)."""
    for name in _POSITIVE + _NON_NEGATIVE:
        value = getattr(config, name)
        if value is None and name in _OPTIONAL:
            continue
        low = 1 if name in _POSITIVE else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(f"{name} must be a whole number ≥ {low}, got {value!r}")
    for name in ("max_budget_usd", "server_budget_usd"):  # spend caps: None = no cap
        value = getattr(config, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not 0 < value < math.inf):
            raise ConfigError(f"{name} must be a number of dollars > 0, got {value!r}")
    for name in ("max_budget_tokens", "server_budget_tokens"):
        value = getattr(config, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"{name} must be a whole number of tokens ≥ 1, got {value!r}")
    for name in ("timeout", "bash_timeout", "selector_timeout", "acp_timeout"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise ConfigError(f"{name} must be a number of seconds > 0, got {value!r}")  # nan, inf too
    from cockpit.runtime.permissions import PermissionMode, Rule, RuleError

    try:
        PermissionMode.parse(config.permission_mode)
        for rule in config.allow:
            Rule.parse_allow(rule)
        for rule in config.deny:
            Rule.parse(rule)
    except (ValueError, RuleError) as exc:
        raise ConfigError(str(exc)) from None
    if config.network not in ("off", "on", "allow"):
        raise ConfigError(f"network must be off, on or allow, got {config.network!r}")
    if config.network == "allow" and not config.allow_hosts:
        raise ConfigError('network "allow" needs [sandbox] allow_hosts, e.g. ["pypi.org", "*.npmjs.org"]')
    for host in config.allow_hosts:
        if not re.fullmatch(r"(\*\.)?[A-Za-z0-9.-]+(:\d+)?", host):
            raise ConfigError(f"sandbox.allow_hosts: {host!r} is not a host name (e.g. pypi.org, *.npmjs.org)")
    if config.tools not in ("anthropic", "portable"):
        raise ConfigError(f"tools must be 'anthropic' or 'portable', got {config.tools!r}")
    from cockpit.runtime import backends

    try:
        backends.resolve(config.backend, config)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if config.claude_setting_sources is not None:
        config.claude_setting_sources = parse_setting_sources(list(config.claude_setting_sources))
    if config.context_management not in ("auto", "off"):
        raise ConfigError(f"context_management must be 'auto' or 'off', got {config.context_management!r}")
    if config.selector not in SELECTORS:
        raise ConfigError(f"selector must be one of {', '.join(SELECTORS)}, got {config.selector!r}")
    if not isinstance(config.selector_model, str) or not config.selector_model.strip():
        raise ConfigError("selector_model must be a model id")
    if not isinstance(config.model, str) or not config.model.strip():
        raise ConfigError(f"model must be a model id, got {config.model!r}")
    if config.base_url is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(config.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"base_url must be an http(s) URL, got {config.base_url!r}")
