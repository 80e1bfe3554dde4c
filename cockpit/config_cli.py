"""``cockpit config path`` (where the config file is), ``cockpit config check`` (does it parse),
and the config keys each command reads, for its ``--help``."""

from __future__ import annotations

import argparse

from cockpit.errors import CockpitError

# the session settings (top level or [runtime]); every command that starts or runs sessions reads them
SESSION_KEYS = ("model, base_url, max_tokens, max_turns, concurrency, top_k, preseed, selector, selector_model, "
                "selector_timeout, max_retries, timeout, pricing, permission_mode, tools, worktrees, bash_timeout, "
                "context_management, notify_os, backend, claude_setting_sources, max_budget_usd, "
                "max_budget_tokens, server_budget_usd, server_budget_tokens; [permissions] allow, deny, "
                "defaultMode; [sandbox] enabled, network, allow_hosts, hide, protected, pass_env; "
                "[preseed] selector, model, timeout; [agents.NAME] (ACP agents), acp_timeout; api_key_helper")
KEYS_READ: dict[str | None, str] = {
    None: SESSION_KEYS + "; check_command (the diff screen's check); [keymap] (the app's key bindings); theme; "
                         "[grid] hosts",
    "run": SESSION_KEYS,
    "server": SESSION_KEYS + " (when the server starts; api_key_helper at each spawn)",
    "memory": "top_k, selector, selector_model, selector_timeout, [preseed] (preseed and hook)",
    "worktrees": "worktrees, check_command, [worktrees] enabled, check_command",
    "doctor": "base_url (checked; ANTHROPIC_BASE_URL first), api_key_helper (run), and the whole file (does it "
              "parse)",
    "budget": "max_budget_usd, max_budget_tokens, server_budget_usd, server_budget_tokens (the server's)",
    "agents": "[agents.NAME] (agents added to the built-in ones, or fields of a built-in one replaced)",
}
KEYS_READ["web"] = KEYS_READ[None] + " (each browser tab's app)"
HOSTS = "[hosts.NAME] (with --host)"
for _command in (None, "run", "memory", "worktrees", "doctor", "budget"):
    KEYS_READ[_command] = f"{KEYS_READ[_command]}; {HOSTS}"
for _command in ("ls", "send", "kill", "attach", "approve", "deny", "shell"):
    KEYS_READ[_command] = HOSTS
KEYS_READ["resume"] = f"base_url, api_key_helper (the resumed session's key and endpoint); {HOSTS}"


def epilog(command: str | None) -> str:
    """The ``--help`` footer of ``command`` (None: the app): the config file and the keys it reads."""
    from cockpit.runtime.config import config_path

    keys = KEYS_READ.get(command)
    if keys is None:
        return f"config file: {config_path()} (this command reads no config keys)"
    return f"config file: {config_path()}\nconfig keys read: {keys}"


def problem(path: object, exc: Exception) -> str:
    """A config error as one line naming the file once (most errors already start with it)."""
    return str(exc) if str(path) in str(exc) else f"{path}: {exc}"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="where the config file is (path) and whether it parses (check)")
    csub = p.add_subparsers(dest="config_command", required=True, metavar="{path,check}")
    csub.add_parser("path", help="print the config file's path (it may not exist yet)").set_defaults(func=_path)
    csub.add_parser("check", help="parse the config file; print the problem if any").set_defaults(func=_check)


def _path(args: argparse.Namespace) -> int:
    from cockpit.runtime.config import config_path

    print(config_path())
    return 0


def _check(args: argparse.Namespace) -> int:
    from cockpit.runtime import ConfigError, load_config
    from cockpit.runtime.config import config_path

    path = config_path()
    try:
        load_config()
    except ConfigError as exc:
        raise CockpitError(problem(path, exc)) from None
    from cockpit.tui.keymap import keymap_problem

    bad_keys = keymap_problem()  # the app would refuse to start with it
    if bad_keys:
        raise CockpitError(f"{path}: {bad_keys}")
    print(f"{path}: {'ok' if path.exists() else 'does not exist (defaults apply)'}")
    return 0
