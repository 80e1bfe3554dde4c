"""Where the server's files live.

- The socket and the lock: the per-user runtime folder (``cockpit.places`` says where, e.g.
  ``/run/user/1000/cockpit``), created with mode 0700; the socket itself is made 0600. A path
  too long for a Unix socket moves to ``<tmp>/cockpit-<uid>/<hash>.sock`` (same modes).
- The log (``server.log``) and the live-session registry (``live.json``, which must survive a
  reboot): the data folder (``$COCKPIT_DATA_DIR`` or ``~/.local/share/cockpit``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cockpit import places

SOCKET_MAX = places.SOCKET_MAX


class UnsafeRuntimeDir(RuntimeError):
    """The runtime folder is owned by someone else or open to other users."""


def _data_root() -> Path:
    return Path(places.data_root())


def runtime_dir() -> Path:
    return Path(places.runtime_dir())


def socket_path() -> Path:
    return Path(places.socket_path())


def lock_path() -> Path:
    return runtime_dir() / "server.lock"


def log_path() -> Path:
    return _data_root() / "server.log"


def registry_path() -> Path:
    return _data_root() / "live.json"


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (mode 0700) or check an existing one: owned by this user, no access for
    group or others. Raises :class:`UnsafeRuntimeDir`."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = os.stat(path)
    if st.st_uid != os.getuid():
        raise UnsafeRuntimeDir(f"{path} belongs to another user (uid {st.st_uid})")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path
