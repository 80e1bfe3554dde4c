"""``api_key_helper`` (config.toml): a shell command that prints the API key, as Claude Code's
``apiKeyHelper`` setting does. The process that runs a session (the server, or ``--no-server``)
runs it when the spawn brought no key — e.g. a remote host with ``api_keys = "host"`` whose
server was started by the ssh bridge, with no key in its environment. Its first non-empty line of
output is the key; it is held in memory for that session only, never logged, never put in an
environment. A failure is one line: the command's exit and its last line of stderr — never its
output, nor the command itself (it may hold a secret)."""

from __future__ import annotations

import os
import subprocess

HELPER_TIMEOUT_S = 15.0


class KeyHelperError(ValueError):
    """``api_key_helper`` gave no key (one line)."""


def run(command: str, timeout: float = HELPER_TIMEOUT_S) -> str:
    """The key ``command`` prints (``/bin/sh -c``; its first non-empty line). Raises KeyHelperError."""
    from cockpit.runtime.keyguard import KEY_VARS

    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    try:
        proc = subprocess.run(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, errors="replace", timeout=timeout, env=env, cwd=os.path.expanduser("~"),
                              start_new_session=True)
    except subprocess.TimeoutExpired:
        raise KeyHelperError(f"api_key_helper gave no key within {timeout:g} s") from None
    except OSError as exc:
        raise KeyHelperError(f"api_key_helper cannot run: {exc}") from None
    if proc.returncode != 0:
        why = next((ln.strip() for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "")
        raise KeyHelperError(f"api_key_helper exited {proc.returncode}" + (f": {why[:200]}" if why else ""))
    key = next((ln.strip() for ln in proc.stdout.splitlines() if ln.strip()), "")
    if not key:
        raise KeyHelperError("api_key_helper printed no key")
    return key
