"""``cockpit doctor``: what this machine has and lacks, one line a check, each ✗ with its fix.

Fast and read-only: no model is loaded, no server is started, no note is indexed; the API key's
value is never read past "is it set". Exit status 0 when nothing failed (warnings allowed), 1
otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import socket
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from cockpit.textsafe import clean, one_line

OK, WARN, FAIL = "ok", "warn", "fail"
ABSENT = "absent"  # an optional part not installed: nothing is wrong, nothing of it works either
MARKS = {OK: "✓", WARN: "!", FAIL: "✗", ABSENT: "·"}
DEFAULT_BASE_URL = "https://api.anthropic.com"
NET_TIMEOUT_S = 2.0
HELPER_NOTICE_S = 1.0  # an api_key_helper still running after this is named on stderr while doctor waits


@dataclass(frozen=True)
class Check:
    state: str  # OK | WARN | FAIL | ABSENT
    label: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{MARKS[self.state]} {self.label}: {self.detail}"
        return f"{text}\n    fix: {self.fix}" if self.fix and self.state not in (OK, ABSENT) else text


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check this machine: Python, config, folders, server, notes, sandbox, key",
                       description="One line a check, ✓ / ! / ✗ (· an optional part not installed), with the fix "
                                   "for each problem. Reads only.")
    p.add_argument("--notes", metavar="DIR", default="notes", help=
                   "notes folder to check (default ./notes, else the git root's notes/)")
    from cockpit.host_cli import add_host_argument

    add_host_argument(p)
    # what `doctor --host` runs there: the key and base URL are the client's (each spawn carries
    # them); the base URL it gives is checked from there, where the sessions call it
    p.add_argument("--as-host", nargs="?", const="", default=None, metavar="BASE_URL", help=argparse.SUPPRESS)
    p.add_argument("--own-keys", action="store_true", help=argparse.SUPPRESS)  # with --as-host: api_keys = "host"
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cockpit.host_cli import host_name

    if host_name(args):  # (`--host local` is this machine)
        return run_host(args)
    from cockpit.notes_location import resolve_notes

    checks = list(collect(resolve_notes(args.notes, Path.cwd()), as_host=getattr(args, "as_host", None),
                          own_keys=getattr(args, "own_keys", False)))
    for c in checks:
        print(c.line())
    failed = sum(c.state == FAIL for c in checks)
    warned = sum(c.state == WARN for c in checks)
    absent = sum(c.state == ABSENT for c in checks)
    optional = f", {absent} optional not installed" if absent else ""
    print(f"\n{len(checks) - failed - warned - absent} ok{optional}, {warned} warning(s), {failed} problem(s)")
    return 1 if failed else 0


def run_host(args: argparse.Namespace) -> int:
    """``cockpit doctor --host NAME``: ssh here, then that host — reachable, cockpit found, the
    same version — then that host's own ``cockpit doctor`` (its server, sandbox, config, notes),
    run there in its workspace. Starts nothing there."""
    from cockpit import __version__
    from cockpit.errors import CockpitError
    from cockpit.host_cli import entry, host_name
    from cockpit.server.ssh import HostError, capture_remote, ssh_program

    host = entry(host_name(args) or "")
    if host.socket:
        raise CockpitError(f"host {host.name} is a server socket of this machine: run cockpit doctor with that "
                           "server's COCKPIT_DATA_DIR")
    print(f"host {host.name}: ssh {host.ssh}, command {host.command!r}"
          + (f", workspace {host.workspace}" if host.workspace else ""))
    try:
        ssh = ssh_program()
        print(Check(OK, "ssh", " ".join(ssh)).line())
        code, out = capture_remote(host, ["--version"])
    except HostError as exc:
        print(Check(FAIL, "remote cockpit", str(exc)).line())
        return 1
    theirs = _remote_version(out)
    if code != 0 or not theirs:
        print(Check(FAIL, "remote cockpit", f"`{host.command} --version` exited {code}").line())
        return 1
    print(Check(OK, "reachable", f"{host.ssh} answered through ssh").line())
    if theirs != __version__:
        print(Check(FAIL, "version", f"version mismatch: local cockpit {__version__}, host {host.name} has {theirs}",
                    "install the same version on both").line())
        return 1
    print(Check(OK, "version", f"cockpit {theirs} there, as here").line())
    # the key and the base URL go from here with each spawn: the key is checked here (there, when
    # the host uses its own); the URL here and there (the sessions call it from there: a loopback
    # proxy here is not one there)
    key = check_key() if host.sends_keys else Check(
        OK, "API key", f"not sent: host {host.name} uses its own (api_keys = \"host\"), checked there")
    url = check_base_url()
    print(key.line())
    print(url.line())
    there = _base_url()
    notes = ["--notes", host.notes] if host.notes and args.notes == "notes" else (
        ["--notes", args.notes] if args.notes != "notes" else [])
    own = [] if host.sends_keys else ["--own-keys"]
    print(f"\non host {host.name} (cockpit doctor there):")
    try:
        code, out = capture_remote(host, ["doctor", "--as-host", there, *own, *notes], cwd=host.workspace)
    except HostError as exc:
        print(Check(FAIL, "remote doctor", str(exc)).line())
        return 1
    out = clean(out)  # what the host prints never drives this terminal
    print("\n".join("  " + line if line else line for line in out.rstrip().splitlines()))
    return 1 if code or url.state == FAIL else 0


def _remote_version(out: str) -> str:
    """The version in ``cockpit --version``'s output there: its last line (a login banner or a
    chatty shell startup file may print lines before it), one line, cleaned."""
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return one_line(lines[-1].removeprefix("cockpit ").strip())[:80] if lines else ""


def collect(notes: Path, as_host: str | None = None, own_keys: bool = False) -> Iterator[Check]:
    """Every check; ``as_host``: for ``doctor --host`` on that host, without the API key (the
    client's, sent with each spawn, and checked by the client) unless ``own_keys`` (the host's
    ``api_keys = "host"``: this host's own key is the one its sessions use), and with the
    client's base URL (``as_host`` itself) checked from this host."""
    here: tuple[Callable[[], Check], ...] = (check_key, check_base_url)
    if as_host is not None:
        here = (lambda: check_base_url(as_host, "base URL (the client's, from this host)"),) if as_host else ()
        if own_keys:
            here = (lambda: check_key("API key (this host's own: api_keys = \"host\")"), *here)
    steps: list[Callable[[], Check | list[Check]]] = [
        check_python, check_config, check_folders, check_server, lambda: check_notes(notes), check_model,
        check_sandbox, check_git, *here, check_backends,
        check_acp_agents, check_agents]
    for step in steps:
        try:
            got = step()
        except Exception as exc:  # a check that breaks is a finding, not a traceback
            got = Check(FAIL, getattr(step, "__name__", "check").replace("check_", ""),
                        f"the check itself failed: {type(exc).__name__}: {exc}")
        yield from (got if isinstance(got, list) else [got])


def check_python() -> Check:
    v = sys.version_info
    text = f"{v.major}.{v.minor}.{v.micro} ({sys.executable})"
    if v < (3, 11):
        return Check(FAIL, "python", text, "Cockpit needs Python ≥ 3.11")
    from cockpit import __version__

    return Check(OK, "python", f"{text}, cockpit {__version__}")


def check_config() -> Check:
    from cockpit.runtime import ConfigError, load_config
    from cockpit.runtime.config import config_path

    path = config_path()
    if not path.exists():
        return Check(OK, "config", f"{path} (not created; defaults apply)")
    try:
        load_config()
    except ConfigError as exc:
        from cockpit.config_cli import problem

        return Check(FAIL, "config", problem(path, exc), f"edit {path} (`cockpit --help` lists its keys)")
    from cockpit.tui.keymap import keymap_problem

    bad_keys = keymap_problem()  # the app would refuse to start with it
    if bad_keys:
        return Check(FAIL, "config", bad_keys, f"edit [keymap] in {path}")
    return Check(OK, "config", f"{path} (parses)")


def _writable(folder: Path) -> str | None:
    """None when ``folder`` is (or can be made) a writable folder, else why not."""
    probe = folder
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


def check_folders() -> list[Check]:
    from cockpit.runtime.config import sessions_dir, worktrees_dir
    from cockpit.server import paths

    out = []
    for label, folder in (("data", sessions_dir().parent), ("worktrees", worktrees_dir()),
                          ("runtime", paths.runtime_dir())):
        why = _writable(folder)
        out.append(Check(FAIL, f"{label} folder", why, "set COCKPIT_DATA_DIR to a writable folder")
                   if why else Check(OK, f"{label} folder", str(folder)))
    return out


def check_server() -> Check:
    from cockpit import __version__
    from cockpit.host_cli import hint
    from cockpit.server import paths
    from cockpit.server.client import BlockingClient, ServerError, ServerHung

    sock = paths.socket_path()
    if not sock.exists():
        return Check(OK, "server", f"not running (starts on demand; socket {sock})")
    try:
        with BlockingClient(sock, timeout=NET_TIMEOUT_S) as client:
            hello = client.call("hello")
    except ServerHung:
        return Check(FAIL, "server", f"the server at {sock} does not answer (stopped or hung?)",
                     f"cockpit server stop --force{hint(None)} (its sessions end as after a crash: interrupted)")
    except (ServerError, OSError) as exc:
        on = hint(None)  # (run whole on a host for another machine: the host's name)
        return Check(FAIL, "server", f"{sock}: {exc}",
                     f"cockpit server stop --force{on}, then cockpit server start{on}")
    version = hello.get("version", "unknown")
    detail = f"running, pid {hello.get('pid')}, version {version}, socket {sock}"
    if version != __version__:
        return Check(WARN, "server", detail,
                     f"this cockpit is {__version__}: cockpit server stop (it restarts on demand)")
    return Check(OK, "server", detail)


def check_notes(notes: Path) -> list[Check]:
    from memory.embedder import DEFAULT_MODEL
    from memory.paths import default_index_path

    notes = notes.expanduser().absolute()
    if not notes.is_dir():
        return [Check(WARN, "notes", f"{notes} does not exist",
                      f"mkdir {notes} (markdown notes with YAML frontmatter), or give --notes your notes folder")]
    from memory.notes import walk

    # the files the engine reads as notes, by its own walk (not hidden ones, not Claude Code's
    # MEMORY.md: an index), and those it skips on the way (a name it cannot read, a link out)
    entries, walk_skipped = walk(str(notes))
    count = len(entries) + len(walk_skipped)
    out = [Check(OK if count else WARN, "notes", f"{notes.resolve()}: {count} markdown file(s)",
                 "" if count else "write a note: cockpit memory save NAME --description '…' < body.md")]
    index = default_index_path(notes, DEFAULT_MODEL)
    if not index.exists():
        out.append(Check(OK, "index", f"{index} (not built yet; the first search or session builds it)"))
        return out
    try:
        conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=NET_TIMEOUT_S)
        try:
            rows = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
            skipped = conn.execute("SELECT count(*) FROM skipped").fetchone()[0]
            model = (conn.execute("SELECT value FROM meta WHERE key = 'model'").fetchone() or ["?"])[0]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        out.append(Check(FAIL, "index", f"{index}: {exc}", f"delete {index}; it is rebuilt from the notes"))
        return out
    age = time.strftime("%Y-%m-%d %H:%M", time.localtime(index.stat().st_mtime))
    detail = f"{rows} note(s), model {model}, last written {age} ({index})"
    if skipped:  # a note that does not parse is skipped, with why (lint and index say it)
        out.append(Check(WARN, "index", f"{skipped} of {count} markdown file(s) skipped: {detail}",
                         "cockpit memory lint says which and why (a broken frontmatter is skipped)"))
    elif rows < count:  # written since the last sync
        out.append(Check(OK, "index", f"{detail}; {count - rows} file(s) written since (the next search indexes them)"))
    else:
        out.append(Check(OK, "index", detail))
    return out


def check_model() -> Check:
    from memory.embedder import packaged_model_path

    path = packaged_model_path()
    if path is None:
        return Check(FAIL, "model", "MiniLM-L6-v2 is not installed",
                     "reinstall cockpit (its wheel bundles the model)")
    missing = [n for n in ("tokenizer.json", "config.json") if not (path / n).is_file()]
    if not (path / "model.onnx").is_file() and not (path / "model.safetensors").is_file():
        missing.insert(0, "model.onnx")
    if missing:
        return Check(FAIL, "model", f"{path} lacks {', '.join(missing)}", "reinstall cockpit")
    runtime = "onnxruntime" if importlib.util.find_spec("onnxruntime") else None
    if runtime is None:
        return Check(FAIL, "model", "onnxruntime is not installed", "pip install onnxruntime")
    return Check(OK, "model", f"all-MiniLM-L6-v2 at {path}, run by {runtime}")


def check_sandbox() -> Check:
    from cockpit.runtime.sandbox import detect

    found = detect()
    if found.backend is None and "COCKPIT_BWRAP" in found.reason:
        return Check(FAIL, "sandbox", f"unavailable: {found.reason}", "unset COCKPIT_BWRAP, or point it at bwrap")
    if found.backend is None:
        return Check(FAIL, "sandbox", f"unavailable: {found.reason}",
                     "install bubblewrap (apt install bubblewrap) and allow unprivileged user namespaces; "
                     "or run with [sandbox] enabled = false and approve commands yourself")
    return Check(OK, "sandbox", f"{type(found.backend).__name__.lower()} works here")


def check_git() -> Check:
    git = shutil.which("git")
    if not git:
        return Check(FAIL, "git", "not on PATH", "install git: sessions work in git worktrees")
    gh = shutil.which("gh")
    no_gh = "not installed (cockpit worktrees pr then pushes and prints the compare URL)"
    return Check(OK, "git", f"{git}; gh {'at ' + gh if gh else no_gh}")


def check_key(label: str = "API key") -> Check:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        if os.environ.get(name, "").strip():
            return Check(OK, label, f"{name} is set (value not shown)")
    helper = _key_helper()
    if helper:  # run as a session's spawn would: it must print a key (never shown)
        import threading

        from cockpit.runtime import keyhelper

        # a slow helper (a password manager asking, a hung one) is named while doctor waits
        notice = threading.Timer(HELPER_NOTICE_S, lambda: print(
            f"doctor: waiting for api_key_helper (stopped after {keyhelper.HELPER_TIMEOUT_S:.0f} s)…",
            file=sys.stderr, flush=True))
        notice.daemon = True
        notice.start()
        try:
            keyhelper.run(helper)
        except keyhelper.KeyHelperError as exc:
            return Check(FAIL, label, str(exc), "fix api_key_helper in config.toml, or export ANTHROPIC_API_KEY")
        finally:
            notice.cancel()
        return Check(OK, label, "api_key_helper printed a key (value not shown)")
    return Check(WARN, label, "neither ANTHROPIC_API_KEY nor ANTHROPIC_AUTH_TOKEN is set",
                 "export ANTHROPIC_API_KEY=… or set api_key_helper in config.toml (sessions need it; the "
                 "notes work without)")


def _key_helper() -> str | None:
    from cockpit.runtime import ConfigError, load_config

    try:
        return load_config().api_key_helper
    except ConfigError:
        return None  # (the config check says why)


def _base_url() -> str:
    """The base URL this client's sessions use (config > environment > Anthropic's)."""
    from cockpit.runtime import ConfigError, load_config

    try:
        return load_config().base_url or DEFAULT_BASE_URL
    except ConfigError:
        return os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL


def check_base_url(url: str | None = None, label: str = "base URL") -> Check:
    url = url or _base_url()
    parsed = urlparse(url)
    host = parsed.hostname
    if parsed.scheme not in ("http", "https") or not host:
        return Check(FAIL, label, f"{url!r} is not an http(s) URL",
                     "set base_url in config.toml or ANTHROPIC_BASE_URL")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=NET_TIMEOUT_S):
            pass
    except OSError as exc:
        return Check(FAIL, label, f"{url} is not reachable ({exc.strerror or exc})",
                     "check the network, or set base_url / ANTHROPIC_BASE_URL")
    hint = " (a /v1 suffix is added by the client: drop it)" if parsed.path.rstrip("/").endswith("/v1") else ""
    return Check(WARN if hint else OK, label, f"{url} is reachable{hint}")


AGENT_CLIS = {"claude": ("claude", "npm install -g @anthropic-ai/claude-code"),
              "codex": ("codex", "npm install -g @openai/codex"),
              "gemini": ("gemini", "npm install -g @google/gemini-cli"),
              "opencode": ("opencode", "npm install -g opencode-ai")}


def check_agents() -> list[Check]:
    """Each agent Cockpit's hook can preseed: its CLI on PATH, and whether the hook is installed
    for this project or this user."""
    from cockpit import opencode_plugin
    from cockpit.memory_hook import AGENTS, MARK

    out = []
    cwd = Path.cwd()
    paths: dict[str, tuple[Any, str, str]] = {k: (a.path, a.label, MARK) for k, a in AGENTS.items()}
    paths["opencode"] = (opencode_plugin.plugin_path, "OpenCode", opencode_plugin.MARK)
    for key, (path_of, label, mark) in paths.items():
        exe, install = AGENT_CLIS[key]
        found = shutil.which(exe)
        where = []
        for user in (False, True):
            try:
                text = path_of(user, cwd).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if mark in text:
                where.append("user" if user else "project")
        hooked = f"hook installed ({', '.join(where)})" if where else "hook not installed"
        name = f"{label} on its own"
        bundled = _bundled_claude() if key == "claude" and not found else None
        if bundled:  # not the user's Claude Code: the SDK's own copy, which only the backend runs
            why = f"{install}; the claude-code backend runs the copy bundled with claude-agent-sdk, {bundled}"
            out.append(Check(ABSENT, f"agent {key}", f"{name}: not on PATH ({why}); {hooked}"))
        elif not found:
            out.append(Check(ABSENT, f"agent {key}", f"{name}: not installed ({install}); {hooked}"))
        elif where:
            out.append(Check(OK, f"agent {key}", f"{name} at {found}; {hooked}"))
        else:
            out.append(Check(WARN, f"agent {key}", f"{name} at {found}; {hooked}",
                             f"cockpit memory hook --install --agent {key} (its sessions then start with the notes)"))
    return out


def _bundled_claude() -> str | None:
    """The Claude Code CLI bundled with claude-agent-sdk (what ``--backend claude-code`` runs), if any."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    exe = Path(next(iter(spec.submodule_search_locations))) / "_bundled" / "claude"
    return str(exe) if exe.is_file() else None


def check_acp_agents() -> list[Check]:
    """Each ACP agent of the registry (--backend acp:NAME): installed, or how to install it."""
    from cockpit.runtime.acp.agents import registry
    from cockpit.runtime.config import ConfigError, load_config

    try:
        extra = load_config().agents
    except ConfigError:
        extra = ()  # (the config check says why)
    out = []
    for agent in registry(extra).values():
        argv = agent.command()
        if argv:
            out.append(Check(OK, f"backend acp:{agent.name}", f"{agent.title} over ACP: {argv[0]}"))
        else:
            how = f"cockpit agents install {agent.name}" if agent.npm else agent.install
            out.append(Check(ABSENT, f"backend acp:{agent.name}", f"{agent.title} over ACP: not installed ({how})"))
    return out


def check_backends() -> list[Check]:
    """The optional claude-code backend: a warning only when the config chooses it and it is missing."""
    from cockpit.runtime.config import ConfigError, load_config

    sdk = importlib.util.find_spec("claude_agent_sdk") is not None
    try:
        chosen = load_config().backend == "claude-code"
    except ConfigError:
        chosen = False  # (the config check says why)
    detail = ("claude-agent-sdk installed" if sdk else
              "not installed, and your config chooses it" if chosen else
              "not installed (optional: the default backend needs nothing)")
    out = [Check(OK if sdk else WARN if chosen else ABSENT, "backend claude-code", detail,
                 "in a checkout: pip install -e '.[claude-code]'; as a tool: pipx inject cockpit claude-agent-sdk "
                 "(uv: uv tool install --with claude-agent-sdk …)")]
    if sdk:
        from cockpit.runtime.backends import BUILTIN

        missing = BUILTIN["claude-code"].own_sandbox_missing()
        out.append(Check(WARN, "claude-code sandbox", f"{missing}: its sessions run unconfined, and not in auto",
                         "install what it names") if missing else
                   Check(OK, "claude-code sandbox", "Claude Code's own sandbox can run here"))
    return out
