"""A server on another host, reached through the user's own OpenSSH — no port, no token.

:class:`SshTransport` runs ``ssh -T -o BatchMode=yes -o ConnectTimeout=N DEST 'COMMAND server
bridge'`` (``DEST`` and ``COMMAND`` from ``[hosts.NAME]``, see
:class:`cockpit.runtime.config.HostEntry`), with the child's stdin and stdout on one end of a
socket pair: the other end is a plain stream socket, so both clients speak the unchanged protocol
over it. The user's ssh config, keys, agent and jump hosts apply; ``$COCKPIT_SSH_COMMAND``
replaces ``ssh`` (like git's ``GIT_SSH_COMMAND``, e.g. ``ssh -F ~/.ssh/work_config``).

The bridge (:mod:`cockpit.server.bridge`) first says hello — its version and protocol — and the
transport checks it; every way this fails is one :class:`HostError` line: ssh missing, the host
unreachable or unknown, the key refused, no ``cockpit`` there (exit 127), a version mismatch, a
hung peer (no hello within the host's ``timeout``).

:func:`ssh_connector` is the async connector the app uses for a host (a connected, subscribed
``RemoteRuntime``); :func:`run_remote` runs a whole ``cockpit`` command there (``memory``,
``worktrees``: they work on that host's files).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import IO, TYPE_CHECKING, Any

from cockpit.server.client import ServerError, ServerHung
from cockpit.server.transport import Connection

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.config import HostEntry, RuntimeConfig
    from cockpit.server.remote import RemoteRuntime

HELLO_KEY = "cockpit_bridge"  # the bridge's hello line is a JSON object with this key
HELLO_MAX = 64 * 1024  # bytes read while looking for the hello (a login banner on stdout comes first)
NOT_FOUND_EXIT = 127  # a POSIX shell's "command not found"
SSH_FAILED_EXIT = 255  # ssh's own failure


class HostError(ServerError):
    """A remote host cannot be used (one line for the user)."""


def ssh_program() -> list[str]:
    """``ssh`` (or ``$COCKPIT_SSH_COMMAND``, split as a shell would) as an argv. Raises HostError
    when it is not installed."""
    try:
        words = shlex.split(os.environ.get("COCKPIT_SSH_COMMAND") or "ssh")
    except ValueError as exc:  # an unclosed quote
        raise HostError(f"COCKPIT_SSH_COMMAND cannot be read as a command line: {exc}") from None
    if not words or shutil.which(words[0]) is None:
        raise HostError(f"ssh not found ({words[0] if words else 'COCKPIT_SSH_COMMAND is empty'}): install "
                        "OpenSSH's client (e.g. apt install openssh-client), or set COCKPIT_SSH_COMMAND")
    return words


def _ssh_env() -> dict[str, str]:
    """ssh's environment without the API keys, the other credentials a session's shell never gets
    (Claude Code's OAuth token, the server's TCP token) or a variable holding one of their values
    under another name: a SendEnv rule must not carry them to the host."""
    from cockpit.runtime.bash import SECRET_ENV
    from cockpit.runtime.keyguard import KEY_VARS, taken

    names = {*KEY_VARS, *SECRET_ENV}
    secrets = [v for k, v in {**taken(), **os.environ}.items() if k in names and len(v) >= 8]
    return {k: v for k, v in os.environ.items() if k not in names and not any(s in v for s in secrets)}


def ssh_argv(host: HostEntry, remote: str, tty: bool = False) -> list[str]:
    """The ssh command line that runs the shell command ``remote`` on ``host``."""
    return [*ssh_program(), "-t" if tty else "-T", "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={max(1, math.ceil(host.timeout))}",
            "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4", "--", host.ssh, remote]


def _last_line(text: str) -> str:
    from cockpit.textsafe import one_line

    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return one_line(lines[-1])[:300] if lines else ""


def failure_message(host: HostEntry, code: int | None, stderr: str) -> str:
    """One line for an ssh that ended before the bridge said hello (``code``: its exit status)."""
    last = _last_line(stderr)
    low = stderr.lower()
    name = f"host {host.name}" + (f" ({host.ssh})" if host.ssh != host.name else "")
    if code == NOT_FOUND_EXIT or "command not found" in low:
        return (f"{name}: remote cockpit not found (`{host.command}` exited 127: command not found) — "
                f"install cockpit there, or set command = \"/path/to/cockpit\" in [hosts.{host.name}]")
    if code == 126:
        return f"{name}: remote cockpit cannot run (`{host.command}` exited 126: {last or 'not executable'})"
    if "permission denied" in low and ("publickey" in low or "password" in low or "keyboard" in low):
        return (f"{name}: ssh authentication failed ({last}) — is your key loaded (ssh-add -l) and "
                f"authorized there? Try: ssh {host.ssh} true")
    if "host key verification failed" in low or "remote host identification has changed" in low:
        return f"{name}: ssh host key verification failed — check known_hosts: ssh {host.ssh} true"
    if "could not resolve hostname" in low or "name or service not known" in low:
        return f"{name}: unknown host ({last})"
    if any(w in low for w in ("connection refused", "timed out", "no route to host", "network is unreachable",
                              "connection closed", "connection reset", "operation timed out")):
        return f"{name} is unreachable ({last})"
    if code == SSH_FAILED_EXIT:
        return f"{name}: ssh failed ({last or 'exit 255'})"
    return (f"{name}: the remote bridge ended before it said hello (exit {code}"
            + (f": {last}" if last else "") + ")")


def check_hello(host: HostEntry, hello: dict[str, Any]) -> None:
    """Raise HostError when the bridge reports an error or runs another version."""
    from cockpit import __version__
    from cockpit.server.rpc import PROTOCOL_VERSION
    from cockpit.textsafe import one_line

    stopped = hello.get("stopped_pid")
    if hello.get("error") and isinstance(stopped, int) and not isinstance(stopped, bool):
        # the remote's own hint names this machine's commands: said for the host instead
        from cockpit.server.client import stopped_message

        raise HostError(f"host {host.name}: {stopped_message(stopped, host.name)}")
    if hello.get("error"):
        raise HostError(f"host {host.name}: {one_line(str(hello['error']))[:300]}")
    theirs, proto = str(hello.get("version", "?")), hello.get("protocol")
    if theirs != __version__ or proto != PROTOCOL_VERSION:
        raise HostError(f"version mismatch: local cockpit {__version__} (protocol {PROTOCOL_VERSION}), "
                        f"host {host.name} has {one_line(theirs)[:40]} (protocol {proto}) — "
                        "install the same version on both")


class SshTransport:
    """Connections to the server of ``host`` through ``ssh`` and its bridge."""

    remote = True

    def __init__(self, host: HostEntry):
        self.host = host
        self.label = host.name
        self.connect_timeout = host.timeout

    def connect(self, timeout: float) -> Connection:
        host = self.host
        argv = ssh_argv(host, f"{host.command} server bridge")
        ours, theirs = socket.socketpair()
        err = tempfile.TemporaryFile()
        try:
            proc = subprocess.Popen(argv, stdin=theirs.fileno(), stdout=theirs.fileno(), stderr=err, env=_ssh_env(),
                                    start_new_session=True, close_fds=True)
        except OSError as exc:
            ours.close()
            err.close()
            raise HostError(f"cannot run ssh ({argv[0]}): {exc.strerror or exc}") from None
        finally:
            theirs.close()
        conn = Connection(ours, f"host {host.name}", release=lambda: _end(proc, err))
        try:
            conn.hello = self._hello(ours, proc, err, time.monotonic() + timeout)
            check_hello(host, conn.hello)
        except BaseException:
            conn.close()
            raise
        ours.settimeout(None)
        return conn

    def _hello(self, sock: socket.socket, proc: subprocess.Popen, err: IO[bytes], deadline: float) -> dict:
        """The bridge's hello: the first line that is a JSON object with :data:`HELLO_KEY`
        (lines before it — a login banner — are skipped). Reads byte-wise, so nothing after
        the hello is taken from the stream."""
        buf = bytearray()
        seen = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ServerHung(f"host {self.host.name}: no answer from `{self.host.command} server bridge` "
                                 f"within {self.host.timeout:.0f} s (a hung peer?) — try: ssh {self.host.ssh} true")
            sock.settimeout(left)
            try:
                chunk = sock.recv(1)
            except TimeoutError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                try:
                    code = proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    code = None
                err.seek(0)
                raise HostError(failure_message(self.host, code, err.read().decode("utf-8", "replace")))
            seen += 1
            if chunk != b"\n":
                buf += chunk
                if seen > HELLO_MAX:
                    raise HostError(f"host {self.host.name}: no hello from the remote bridge in its first "
                                    f"{HELLO_MAX // 1024} KiB of output (is `{self.host.command}` cockpit?)")
                continue
            try:
                msg = json.loads(buf.decode("utf-8", "replace"))
            except ValueError:
                msg = None
            buf.clear()
            if isinstance(msg, dict) and HELLO_KEY in msg:
                return msg


def _end(proc: subprocess.Popen, err: IO[bytes]) -> None:
    """Let an ssh child go: its stdin closed, it ends by itself; else terminated, then killed."""
    try:
        proc.wait(timeout=1)  # it sends the EOF on and leaves when the bridge has ended
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    err.close()


async def ssh_connector(host: HostEntry | str, config: RuntimeConfig, notes: str | None = None,
                        index: str | None = None) -> RemoteRuntime:
    """A connected, subscribed :class:`~cockpit.server.remote.RemoteRuntime` on ``host`` (a
    :class:`HostEntry`, or a name: ``[hosts.NAME]`` or an ssh destination). ``notes``: a notes
    folder on that host (default: the entry's ``notes``); spawns go to the entry's ``workspace``
    unless one is given. Raises HostError / ServerError (one line each)."""
    from cockpit.runtime.config import host_entry
    from cockpit.server.remote import RemoteRuntime
    from cockpit.server.transport import transport_for

    entry = host_entry(host) if isinstance(host, str) else host
    return await RemoteRuntime.attach(config, notes=notes or entry.notes, index=index,
                                      transport=transport_for(entry), workspace=entry.workspace,
                                      send_keys=entry.sends_keys)


def shell_path(path: str) -> str:
    """``path`` quoted for the remote shell, ``~/…`` still its home."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def shell_argv(host: HostEntry, folder: str, edit: str | None = None) -> list[str]:
    """The user's own ``ssh -t`` to ``host`` (the transport's command line: ``$COCKPIT_SSH_COMMAND``,
    the host's ``ssh =``) opening a login shell there — ``$SHELL`` of that host, else ``sh`` — in
    ``folder`` (a folder of that host), or ``$VISUAL``/``$EDITOR`` (else ``vi``) on the file
    ``edit`` there. Every path is quoted for the remote shell: a name with spaces, quotes or
    ``$(…)`` is a name, never a command."""
    if edit:
        inner = f'exec ${{VISUAL:-${{EDITOR:-vi}}}} {shell_path(edit)}'
    else:
        inner = 'exec "${SHELL:-sh}" -l'
    return ssh_argv(host, f"cd {shell_path(folder)} && {inner}", tty=True)


def open_shell(host: HostEntry, folder: str, edit: str | None = None) -> int:
    """Run :func:`shell_argv` with this terminal's stdio (ssh's environment without the API keys)
    until the user leaves it; its exit code. Raises HostError when ssh cannot run."""
    argv = shell_argv(host, folder, edit)
    try:
        return subprocess.call(argv, env=_ssh_env())
    except OSError as exc:
        raise HostError(f"cannot run ssh ({argv[0]}): {exc.strerror or exc}") from None


def run_remote(host: HostEntry, argv: list[str], cwd: str | None = None, env: dict[str, str] | None = None) -> int:
    """Run ``COMMAND ARGV…`` on ``host`` (in ``cwd`` there, when given; with ``env`` added to
    its environment) with this terminal's stdio; its exit code. ssh's own failures and a missing
    remote cockpit are one HostError line."""
    words = " ".join(shlex.quote(a) for a in argv)
    remote = f"{host.command} {words}"
    if env:
        remote = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + remote
    if cwd:
        remote = f"cd {shell_path(cwd)} && {remote}"
    tty = sys.stdin.isatty() and sys.stdout.isatty()
    with tempfile.TemporaryFile() as err:
        try:
            code = subprocess.call(ssh_argv(host, remote, tty=tty), stderr=err, env=_ssh_env())
        except OSError as exc:
            raise HostError(f"cannot run ssh: {exc.strerror or exc}") from None
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    if code in (SSH_FAILED_EXIT, NOT_FOUND_EXIT, 126) and not text.startswith("cockpit:"):
        raise HostError(failure_message(host, code, text))
    sys.stderr.write(text)
    return code


def capture_remote(host: HostEntry, argv: list[str], cwd: str | None = None) -> tuple[int, str]:
    """Run ``COMMAND ARGV…`` on ``host`` and return (exit code, its stdout); ssh's own failures
    and a missing remote cockpit are one HostError line; a hung peer a HostError after the
    host's ``timeout`` (doubled: the command runs as well as connects)."""
    words = " ".join(shlex.quote(a) for a in argv)
    remote = f"cd {shell_path(cwd)} && {host.command} {words}" if cwd else f"{host.command} {words}"
    try:
        done = subprocess.run(ssh_argv(host, remote), capture_output=True, stdin=subprocess.DEVNULL,
                              env=_ssh_env(), timeout=host.timeout * 2)
    except subprocess.TimeoutExpired:
        raise HostError(f"host {host.name}: no answer within {host.timeout * 2:.0f} s (a hung peer?) — "
                        f"try: ssh {host.ssh} true") from None
    except OSError as exc:
        raise HostError(f"cannot run ssh: {exc.strerror or exc}") from None
    err = done.stderr.decode("utf-8", "replace")
    if done.returncode in (SSH_FAILED_EXIT, NOT_FOUND_EXIT, 126):
        raise HostError(failure_message(host, done.returncode, err))
    return done.returncode, done.stdout.decode("utf-8", "replace")


__all__ = ["HostError", "capture_remote", "SshTransport", "ssh_connector", "run_remote", "failure_message",
           "check_hello", "shell_argv", "open_shell"]
