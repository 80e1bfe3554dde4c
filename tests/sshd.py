"""A test-owned OpenSSH server on a loopback port: a "remote host" that is this machine.

:class:`SshHost` writes everything into one temporary folder — a host key, a user key (and a
second, unauthorized one), ``authorized_keys``, ``sshd_config`` (``UsePAM no``, keys only, its
own ``PidFile``, ``StrictModes no``: the folder's parents are pytest's temporary folders, not a
home) and a client config for ``ssh -F`` naming the hosts — then runs ``/usr/sbin/sshd -D -f``
(where ``/run/sshd``, its privilege-separation folder, is missing — no service made it — in a
mount namespace of its own with a private ``/run``, rather than creating it system-wide).
Nothing system-wide is read or changed: the client config sets its own known-hosts file (with
the host key in it) and keys, and ``COCKPIT_SSH_COMMAND="ssh -F <config>"`` makes Cockpit use it.

Client host aliases: ``remote`` (the user key), ``wrongkey`` (a key the server does not know),
``closed`` (a loopback port where nothing listens).
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"
PRIVSEP = "/run/sshd"  # sshd refuses to start without it; the OS package's service unit makes it


def available() -> str | None:
    """Why this machine cannot run the test sshd (None: it can)."""
    if not os.path.exists(SSHD):
        return f"{SSHD} is not installed (apt install openssh-server)"
    if not os.path.isdir(PRIVSEP) and (shutil.which("unshare") is None or os.geteuid() != 0):
        return f"{PRIVSEP} is missing and no mount namespace can stand in for it (needs root and unshare)"
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt install openssh-client)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "cockpit-test", "-f", str(path)],
                   check=True, capture_output=True)


class SshHost:
    """``with SshHost(folder) as host:`` — ``host.env`` holds ``COCKPIT_SSH_COMMAND``."""

    def __init__(self, folder: Path):
        self.dir = Path(folder)
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def ssh_command(self) -> str:
        return f"ssh -F {self.dir / 'ssh_config'}"

    def start(self) -> SshHost:
        """Write the keys and configs (the first time), run sshd, return once it listens. After
        :meth:`stop`, starts it again on the same port (a host coming back)."""
        if not (self.dir / "sshd_config").exists():
            self._setup()
        self._launch()
        return self

    def _setup(self) -> None:
        d = self.dir
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o700)
        for name in ("host_key", "user_key", "other_key"):
            _keygen(d / name)
        (d / "authorized_keys").write_text((d / "user_key.pub").read_text())
        os.chmod(d / "authorized_keys", 0o600)
        user = getpass.getuser()
        (d / "sshd_config").write_text(f"""\
Port {self.port}
ListenAddress 127.0.0.1
HostKey {d / 'host_key'}
PidFile {d / 'sshd.pid'}
AuthorizedKeysFile {d / 'authorized_keys'}
StrictModes no
UsePAM no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers {user}
AllowTcpForwarding no
X11Forwarding no
PrintMotd no
LogLevel VERBOSE
""")
        host_pub = (d / "host_key.pub").read_text().split()
        (d / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {host_pub[0]} {host_pub[1]}\n")
        common = f"""\
  HostName 127.0.0.1
  User {user}
  IdentitiesOnly yes
  UserKnownHostsFile {d / 'known_hosts'}
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  LogLevel ERROR
"""
        (d / "ssh_config").write_text(
            f"Host remote\n  Port {self.port}\n  IdentityFile {d / 'user_key'}\n{common}\n"
            f"Host wrongkey\n  Port {self.port}\n  IdentityFile {d / 'other_key'}\n{common}\n"
            f"Host closed\n  Port {_free_port()}\n  IdentityFile {d / 'user_key'}\n{common}")

    def _launch(self) -> None:
        d = self.dir
        argv = [SSHD, "-D", "-e", "-f", str(d / "sshd_config")]
        if not os.path.isdir(PRIVSEP):  # sshd's compiled-in folder; made in a mount namespace of its own
            argv = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                    f"mount -t tmpfs -o mode=755 tmpfs /run && mkdir -m 755 {PRIVSEP} && exec \"$@\"", "sh", *argv]
        with open(d / "sshd.log", "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 30  # a failure guard: it listens within milliseconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {(d / 'sshd.log').read_text()[-2000:]}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.02)
        raise RuntimeError("sshd did not listen within 30 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> SshHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
