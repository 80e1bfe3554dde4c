"""Small helpers the tests share: a git repository to work in, waiting for a process to be gone,
and stopping a Cockpit server a test started. (``tests/`` is on ``sys.path`` under pytest.)"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

CALC = "def add(a, b):\n    return a - b\n"


def git(cwd: Path | str, *args: str) -> str:
    """Run git in ``cwd``; its stdout. Raises CalledProcessError when it fails."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_repo(path: Path, files: dict[str, str] | None = None, untracked: dict[str, str] | None = None) -> Path:
    """A git repository at ``path`` (branch ``main``, a local identity) with ``files`` committed
    (default: a ``calc.py`` whose ``add`` subtracts) and ``untracked`` files written, not added."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "dev@example.com")
    git(path, "config", "user.name", "Dev")
    for name, text in (files if files is not None else {"calc.py": CALC}).items():
        (path / name).write_text(text)
        git(path, "add", name)
    for name, text in (untracked or {}).items():
        (path / name).write_text(text)
    git(path, "commit", "-q", "-m", "init")
    return path


async def wait_gone(pid: int, what: str, tries: int = 100) -> None:
    """Wait (up to ~5 s) until process ``pid`` no longer exists; fail the test naming ``what``."""
    for _ in range(tries):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} (pid {pid}) is still running")


def stop_server() -> None:
    """Stop the Cockpit server of this test's data folder, if one runs (SIGKILL if it hangs)."""
    from cockpit.server.client import BlockingClient, server_running, wait_for_stop

    if not server_running():
        return
    with BlockingClient() as c:
        pid = c.call("server.status")["pid"]
        try:
            c.call("server.stop")
        except Exception:
            pass
    if not wait_for_stop(pid, 30):
        os.kill(pid, signal.SIGKILL)
