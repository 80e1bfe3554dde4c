"""``ClaudeAgentOptions`` for one session, and how the API key reaches Claude Code.

What is passed (the SDK turns it into ``claude`` command-line flags):

- ``cwd`` = the session's working tree; ``model``; ``permission_mode`` as given (the four modes
  are Claude Code's own names); ``max_turns`` = the config's turn cap (per user message);
  ``max_budget_usd`` = the session's USD spend cap (what is left of it when Claude Code is
  restarted after a raise; :mod:`cockpit.runtime.budget`) — Claude Code stops at it itself
  (an ``error_max_budget_usd`` result).
- ``system_prompt``: Claude Code's own (``preset: claude_code``) with
  :func:`cockpit.runtime.prompts.claude_code_append` appended.
- ``setting_sources``: the config's ``claude_setting_sources`` (None = all of the user's settings
  and CLAUDE.md files, Claude Code's default; ``()`` = none).
- ``settings`` (JSON, Claude Code's highest user-controlled layer): ``permissions.allow`` /
  ``permissions.deny`` from our config's rules (see :func:`permission_rules`) and, when Cockpit
  holds an API key, ``apiKeyHelper``.
- ``mcp_servers``: our in-process memory server; ``include_partial_messages`` (text deltas and
  live usage); hooks and ``can_use_tool`` from the session.
- ``disallowed_tools``: ``AskUserQuestion`` (a pane or a headless run cannot answer its form; the
  model asks in its answer instead and the session waits for you).
- ``env`` (merged over this process's environment by the SDK): ``ANTHROPIC_BASE_URL`` when
  configured, ``COCKPIT_SESSION_ID``, and ``ANTHROPIC_API_KEY``/``ANTHROPIC_AUTH_TOKEN`` set to the
  empty string when Cockpit holds a key (``api_key``, else ``auth_token``: it goes through the helper).

**The key.** Claude Code hands its environment to its Bash tool, hooks and MCP servers. So
Cockpit does not pass ``ANTHROPIC_API_KEY`` (it is blanked in Claude Code's environment): the
key is written to a 0600 file in a fresh 0700 folder (:class:`KeyFile`) and Claude Code reads it
through its documented ``apiKeyHelper`` setting (a command that prints the key: here ``cat`` of
that file), sending it as ``x-api-key`` / ``Authorization``. The file is removed when the session
ends. Limit: a command run by the session as the same OS user can still read that file while the
session lives (as it can read ``~/.claude`` credentials); the key is out of the environment, the
transcript and the logs, not out of reach of the user's own account. Claude Code's
``CLAUDE_CODE_SUBPROCESS_ENV_SCRUB`` needs bubblewrap on Linux (Claude Code refuses to start
without it), so it is not used. Without a key in Cockpit's config, nothing is set: Claude Code uses
its own login (e.g. a subscription).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claude_agent_sdk import ClaudeAgentOptions

from cockpit.runtime import prompts
from cockpit.runtime.permissions import PermissionMode

from .approvals import claude_rule
from .memory_server import GET_TOOL, SAVE_TOOL, SEARCH_TOOL, SERVER_NAME

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.config import RuntimeConfig
    from cockpit.runtime.session_base import SessionSpec


DISALLOWED = ("AskUserQuestion",)


class KeyFile:
    """The API key in a 0600 file inside a private 0700 folder; :attr:`helper` is the
    ``apiKeyHelper`` command that prints it. :meth:`remove` deletes both (idempotent)."""

    def __init__(self, key: str):
        self.folder = Path(tempfile.mkdtemp(prefix="cockpit-key-"))  # 0700
        self.path = self.folder / "key"
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(key)

    @property
    def helper(self) -> str:
        return f"cat {shlex.quote(str(self.path))}"

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def permission_rules(cfg: RuntimeConfig, mode: PermissionMode) -> dict[str, list[str]]:
    """Claude Code ``permissions`` for a session: the config's rules, ``memory_search`` always
    allowed, ``memory_save`` allowed in ``bypassPermissions`` and denied in ``plan``; elsewhere it asks
    (it writes outside the worktree, into every later session's first message)."""
    allow = [SEARCH_TOOL, GET_TOOL] + [claude_rule(r) for r in cfg.allow]
    deny = [claude_rule(r) for r in cfg.deny]
    if mode is PermissionMode.BYPASS:  # memory_save writes outside the tree: it asks in acceptEdits/auto
        allow.append(SAVE_TOOL)
    elif mode is PermissionMode.PLAN:
        deny.append(SAVE_TOOL)
    return {"allow": list(dict.fromkeys(allow)), "deny": list(dict.fromkeys(deny))}


def sandbox_settings(spec: SessionSpec, cfg: RuntimeConfig) -> dict[str, Any] | None:
    """Claude Code's own sandbox (``settings.sandbox``) with Cockpit's policy: on unless the session
    is unconfined; bash auto-allowed inside it only in ``auto``; a command that wants out asks
    through our approval UI (``can_use_tool``); network off, on (every domain) or the allowlist."""
    if spec.sandbox != "claude-code":
        return None
    domains = {"off": [], "on": ["*"], "allow": list(cfg.allow_hosts)}.get(spec.network, [])
    return {"enabled": True, "autoAllowBashIfSandboxed": spec.permission_mode is PermissionMode.AUTO,
            "allowUnsandboxedCommands": True, "network": {"allowedDomains": domains}}


def hidden_read_rules(cfg: RuntimeConfig, tree: str) -> list[str]:
    """Read deny rules for what a Cockpit sandbox hides: the user's secrets and Cockpit's folders.
    A folder holding the session's own worktree (the data folder) is denied entry by entry, less
    the entries on the way to the worktree (rules cannot subtract)."""
    from cockpit.runtime.sandbox import cockpit_folders, secret_paths

    home = str(Path.home()).rstrip("/") + "/"
    tree = os.path.realpath(tree).rstrip("/") + "/"
    paths: list[str] = []
    for path in secret_paths(cfg.sandbox_hide) + cockpit_folders():
        paths += _around(os.path.realpath(path), tree)
    rules = []
    for path in paths:
        spelled = "~/" + path[len(home):] if path.startswith(home) else "/" + path
        rules += [f"Read({spelled}/**)", f"Read({spelled})"]
    return list(dict.fromkeys(rules))


def _around(path: str, tree: str, depth: int = 4) -> list[str]:
    """``path``, or — when the tree lies inside it — its entries that do not lead to the tree."""
    if not tree.startswith(path.rstrip("/") + "/"):
        return [path]
    if depth == 0 or not os.path.isdir(path):
        return []
    out: list[str] = []
    try:
        entries = sorted(os.listdir(path))
    except OSError:
        return []
    for name in entries:
        child = os.path.join(path, name)
        if tree.startswith(child.rstrip("/") + "/"):
            out += _around(child, tree, depth - 1) if child.rstrip("/") + "/" != tree else []
        else:
            out.append(child)
    return out


def protected_ask_rules(cfg: RuntimeConfig) -> list[str]:
    """Edit ask rules for the protected paths, so Claude Code asks through our UI in every mode."""
    from cockpit.runtime.protected import PROTECTED_DIRS, PROTECTED_FILES

    rules = [f"Edit(**/{d}/**)" for d in PROTECTED_DIRS if d != ".git"]
    rules += [f"Edit(**/{f})" for f in PROTECTED_FILES]
    rules += [f"Edit({p})" for p in cfg.protected]
    return rules


def process_env(cfg: RuntimeConfig, session_id: str, key_file: KeyFile | None) -> dict[str, str]:
    """Variables set for the ``claude`` process (over this process's own environment)."""
    env = {"COCKPIT_SESSION_ID": session_id, "COCKPIT_SERVER_TOKEN": ""}
    if cfg.base_url:
        env["ANTHROPIC_BASE_URL"] = cfg.base_url
    if key_file is not None:
        env["ANTHROPIC_API_KEY"] = env["ANTHROPIC_AUTH_TOKEN"] = ""
    return env


def agent_options(spec: SessionSpec, cfg: RuntimeConfig, *, session_id: str, key_file: KeyFile | None,
                  mcp_server: Any, can_use_tool: Callable, hooks: dict, stderr: Callable[[str], None],
                  resume: str | None = None, max_budget_usd: float | None = None) -> ClaudeAgentOptions:
    """The options of one session's ``ClaudeSDKClient``."""
    settings: dict[str, Any] = {"permissions": permission_rules(cfg, spec.permission_mode)}
    if key_file is not None:
        settings["apiKeyHelper"] = key_file.helper
    sandbox = sandbox_settings(spec, cfg)
    if sandbox is not None:
        settings["sandbox"] = sandbox
        tree = spec.worktree.path if spec.worktree is not None else str(spec.cwd)
        settings["permissions"]["deny"] += hidden_read_rules(cfg, tree)
    settings["permissions"]["ask"] = protected_ask_rules(cfg)
    sources = cfg.claude_setting_sources
    # Claude Code has no "auto": its acceptEdits with the sandbox's auto-allow for bash is the same
    mode = "acceptEdits" if spec.permission_mode is PermissionMode.AUTO else spec.permission_mode.value
    return ClaudeAgentOptions(
        cwd=str(spec.cwd),
        model=spec.model,
        permission_mode=mode,  # type: ignore[arg-type]
        max_turns=cfg.max_turns,
        max_budget_usd=max_budget_usd,
        system_prompt={"type": "preset", "preset": "claude_code",
                       "append": prompts.claude_code_append(spec.preseed_enabled)},
        setting_sources=None if sources is None else list(sources),  # type: ignore[arg-type]
        settings=json.dumps(settings),
        mcp_servers={SERVER_NAME: mcp_server},
        include_partial_messages=True,
        disallowed_tools=list(DISALLOWED),
        can_use_tool=can_use_tool,
        hooks=hooks,
        env=process_env(cfg, session_id, key_file),
        stderr=stderr,
        resume=resume,
    )
