"""Where Cockpit keeps its files, as plain strings: the data folder, the runtime folder (the
server's socket and lock) and the socket itself. The one definition: ``cockpit.server.paths``
wraps these in ``Path``\\s, the Claude Code hook's hot path (``cockpit.hook_fast``) uses them as
they are. Imports nothing beyond ``os`` and ``sys``: the hook runs before every first prompt, and
``platformdirs`` alone costs it ≈ 20 ms of start-up.

- Data: ``$COCKPIT_DATA_DIR``, else ``$XDG_DATA_HOME/cockpit`` (when absolute), else
  ``~/.local/share/cockpit`` — what ``platformdirs.user_data_path("cockpit")`` gives on Linux.
  Elsewhere (macOS) platformdirs itself.
- Runtime: ``$COCKPIT_DATA_DIR/run``, else ``$XDG_RUNTIME_DIR/cockpit`` (an absolute folder that
  exists), else ``/run/user/<uid>/cockpit`` (when that folder exists), else
  ``<tmp>/cockpit-<uid>`` (``<tmp>``: ``$TMPDIR``, ``$TEMP`` or ``$TMP`` when a folder, else
  ``/tmp``). The server creates it 0700 and checks its owner (``paths.ensure_private_dir``).
- Socket: ``<runtime>/server.sock``; a path too long for a Unix socket (over
  :data:`SOCKET_MAX` bytes) moves to ``<tmp>/cockpit-<uid>/<hash>.sock``.
"""

from __future__ import annotations

import os
import sys

SOCKET_MAX = 100
APP = "cockpit"


def temp_root() -> str:
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = os.environ.get(name)
        if value and os.path.isdir(value):
            return value
    return "/tmp"


def data_root() -> str:
    env = os.environ.get("COCKPIT_DATA_DIR")
    if env:
        return os.path.expanduser(env)
    if not sys.platform.startswith("linux"):
        import platformdirs

        return str(platformdirs.user_data_path(APP))
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, APP)


def runtime_dir() -> str:
    env = os.environ.get("COCKPIT_DATA_DIR")
    if env:
        return os.path.join(os.path.expanduser(env), "run")
    if not sys.platform.startswith("linux"):
        import platformdirs

        return str(platformdirs.user_runtime_path(APP))
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(xdg) and os.path.isdir(xdg):
        return os.path.join(xdg, APP)
    user = f"/run/user/{os.getuid()}"
    if os.path.isdir(user):
        return os.path.join(user, APP)
    return user_temp_dir()


def user_temp_dir() -> str:
    """``<tmp>/cockpit-<uid>``: the runtime folder without a better one, and the place of a socket
    whose path would be too long elsewhere (hidden in every sandbox)."""
    return os.path.join(temp_root(), f"{APP}-{os.getuid()}")


def socket_path() -> str:
    sock = os.path.join(runtime_dir(), "server.sock")
    if len(os.fsencode(sock)) <= SOCKET_MAX:
        return sock
    import hashlib

    digest = hashlib.sha1(sock.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(user_temp_dir(), f"{digest}.sock")
