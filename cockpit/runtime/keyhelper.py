"""``api_key_helper`` (config.toml): a shell command that prints the API key, as Claude Code's
``apiKeyHelper`` setting does. The process that runs a session (the server, or ``--no-server``)
runs it when the spawn brought no key — e.g. a remote host with ``api_keys = "host"`` whose
server was started by the ssh bridge, with no key in its environment. Its first non-empty line of
output is the key; it is held in memory (for :data:`TTL_S`, so nine spawns at once run it once, as
Claude Code keeps its helper's key), never logged, never put in an environment. A failure is one
line: the command's exit — never its output or stderr, nor the command itself (any may hold the
key)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.config import RuntimeConfig

HELPER_TIMEOUT_S = 15.0
TTL_S = 300.0  # a key the helper printed is used again for this long (a failure is not kept)

_kept: dict[str, tuple[float, str]] = {}  # command → (when, key)
_lock = threading.Lock()  # one run at a time: spawns at once wait for the first run's key


class KeyHelperError(ValueError):
    """``api_key_helper`` gave no key (one line)."""


def wanted(config: RuntimeConfig) -> bool:
    """Whether ``config`` has no key or token of its own but an ``api_key_helper``."""
    return not (config.api_key or config.auth_token) and bool(config.api_key_helper)


def keyed(config: RuntimeConfig, whose: str) -> RuntimeConfig:
    """``config`` with the key its ``api_key_helper`` prints (:func:`key_for`) when it has no key
    or token of its own; a helper that fails is a KeyHelperError ending in ``whose`` (whose
    helper it was: the user may have two config files, here and on a host). Blocking."""
    if not wanted(config):
        return config
    from dataclasses import replace

    try:
        return replace(config, api_key=key_for(config.api_key_helper or ""))
    except KeyHelperError as exc:
        raise KeyHelperError(f"{exc} — {whose}") from None


def key_for(command: str) -> str:
    """The key ``command`` printed less than :data:`TTL_S` ago, else :func:`run`'s."""
    with _lock:
        kept = _kept.get(command)
        if kept is not None and time.monotonic() - kept[0] < TTL_S:
            return kept[1]
        key = run(command)
        _kept[command] = (time.monotonic(), key)
        return key


def run(command: str, timeout: float | None = None) -> str:
    """The key ``command`` prints (``/bin/sh -c``; its first non-empty line). Raises KeyHelperError.
    A helper still running after ``timeout`` (default :data:`HELPER_TIMEOUT_S`) is killed with
    everything it started."""
    if timeout is None:
        timeout = HELPER_TIMEOUT_S
    from cockpit.runtime.keyguard import KEY_VARS

    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    try:
        proc = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace", env=env,
                                cwd=os.path.expanduser("~"), start_new_session=True)
    except OSError as exc:
        raise KeyHelperError(f"api_key_helper cannot run: {exc}") from None
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its own group (start_new_session): the helper and its children
        except ProcessLookupError:
            pass
        proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        raise KeyHelperError(f"api_key_helper gave no key within {timeout:g} s") from None
    if proc.returncode != 0:  # neither its output nor its stderr shown: either may hold the key
        raise KeyHelperError(f"api_key_helper exited {proc.returncode} (run it yourself to see why)")
    key = next((ln.strip() for ln in out.splitlines() if ln.strip()), "")
    if not key:
        raise KeyHelperError("api_key_helper printed no key")
    return key
