"""Where the server's files live.

- The socket and the lock: the per-user runtime folder (``$COCKPIT_DATA_DIR/run`` when that is
  set, else ``platformdirs.user_runtime_path("cockpit")``, e.g. ``/run/user/1000/cockpit``),
  created with mode 0700; the socket itself is made 0600. A path too long for a Unix socket
  (108 bytes) moves to ``/tmp/cockpit-<uid>/<hash>.sock`` (same modes).
- The log (``server.log``) and the live-session registry (``live.json``, which must survive a
  reboot): the data folder (``$COCKPIT_DATA_DIR`` or ``platformdirs.user_data_path("cockpit")``).
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import warnings
from pathlib import Path

SOCKET_MAX = 100


class UnsafeRuntimeDir(RuntimeError):
    """The runtime folder is owned by someone else or open to other users."""


def _data_root() -> Path:
    env = os.environ.get("COCKPIT_DATA_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("cockpit")


def runtime_dir() -> Path:
    env = os.environ.get("COCKPIT_DATA_DIR")
    if env:
        return Path(env).expanduser() / "run"
    import platformdirs

    # no XDG_RUNTIME_DIR (ssh, containers): take platformdirs' fallback without its warning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = platformdirs.user_runtime_path("cockpit")
    if not os.environ.get("XDG_RUNTIME_DIR") and not path.parent.exists():
        path = Path(tempfile.gettempdir()) / f"cockpit-{os.getuid()}"
    return path


def socket_path() -> Path:
    sock = runtime_dir() / "server.sock"
    if len(os.fsencode(str(sock))) <= SOCKET_MAX:
        return sock
    digest = hashlib.sha1(str(sock).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"cockpit-{os.getuid()}" / f"{digest}.sock"


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
