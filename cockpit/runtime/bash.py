"""Client side of Anthropic's bash tool (``bash_20250124``): one persistent shell per session.

The tool's contract: state persists between calls (``cd``, variables, functions), and
``{"restart": true}`` gives a new shell. Here:

- The shell is ``bash --noprofile --norc`` in the session's working tree, started in its own
  process group (``start_new_session``) with the environment the caller gives (the session
  strips the API key from it). stderr is merged into stdout, in order.
- Each command reaches the shell as a here-document on a file descriptor (never a file the
  command could read or a program it starts could run) and is *sourced* from it with stdin from
  ``/dev/null`` (so a command that reads stdin cannot swallow the next one, and a syntax error
  cannot leave the shell waiting), followed by a sentinel line carrying ``$?``. Its stdout and
  stderr are restored after it, so a command that closes or redirects them (``exec >/dev/null``)
  neither hides the sentinel nor silences the next command.
- Output is read asynchronously (the event loop never blocks) and capped at
  :data:`MAX_OUTPUT_BYTES`: the head and the tail are kept, the middle is elided with a count.
- After each command the shell's directory is checked: if a ``cd`` left the working tree, the
  shell goes back to the tree's root and the model is told ("Shell cwd was reset to …", as
  Claude Code says it), so a later command that an allow rule lets through runs in the tree.
- A command running longer than the timeout (seconds) is killed with its whole process group
  and the shell is restarted on the next call; the model is told its state was lost.
- :meth:`BashSession.close` (session killed or ended) kills the process group: background jobs
  a command started die with it (a process that calls ``setsid`` itself can escape the group;
  that is the limit of process-group cleanup).
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TOOL_NAME = "bash"
TOOL_TYPE = "bash_20250124"
DEFAULT_TIMEOUT_S = 120.0
MAX_OUTPUT_BYTES = 30_000
_READ = 65536


@dataclass(frozen=True)
class BashResult:
    """One command's outcome: ``output`` (decoded, capped), ``exit_code`` (None when killed or
    the shell died), ``timed_out``, ``elided`` (bytes left out of the middle)."""

    output: str
    exit_code: int | None
    timed_out: bool = False
    elided: int = 0
    shell_exited: bool = False
    cwd_reset_to: str | None = None
    state_changed: bool = False  # a guarded command did not run: the shell's state changed (see run())

    def for_model(self) -> str:
        text = self.output
        if self.timed_out:
            text += ("\n[timed out: the command was killed with its process group and the shell was "
                     "restarted; state such as cd and variables is lost]")
        elif self.shell_exited:
            text += f"\n[the shell exited (code {self.exit_code}); a new shell starts with the next command]"
        elif self.exit_code:
            text += f"\n[exit code {self.exit_code}]"
        if self.cwd_reset_to:
            text = text.rstrip("\n") + ("\n" if text.strip() else "") + f"Shell cwd was reset to {self.cwd_reset_to}"
        return text if text.strip() else "(no output)"


class _Capture:
    """Head + tail of a byte stream with the middle counted, and sentinel detection."""

    def __init__(self, cap: int, sentinel: bytes):
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.recent = bytearray()  # the stream's last bytes, where the sentinel shows up
        self.total = 0
        self.dropped = 0
        self.rx = re.compile(re.escape(sentinel) + rb" (-?\d+)(?: (reset))?\n")
        self.flag = ""  # "reset": the shell left the working tree and was sent back
        self.keep = len(sentinel) + 64

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.recent += chunk
        if len(self.recent) > 4 * self.keep:
            del self.recent[: len(self.recent) - 2 * self.keep]
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - (self.half + self.keep)
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def find_end(self) -> int | None:
        """The exit code once the sentinel arrived (the sentinel and what follows are cut), else None."""
        m = self.rx.search(self.recent)
        if m is None:
            return None
        pos = self.total - len(self.recent) + m.start()  # absolute offset of the sentinel
        if pos <= len(self.head):
            del self.head[pos:]
            self.tail.clear()
        else:
            del self.tail[pos - (self.total - len(self.tail)):]
        self.flag = (m.group(2) or b"").decode()
        return int(m.group(1))

    def text(self) -> str:
        head = bytes(self.head)
        tail = bytes(self.tail)
        if self.dropped:
            mid = f"\n[... {self.dropped:,} bytes of output elided ...]\n".encode()
            data = head + mid + tail
        else:
            data = head + tail
        if data.endswith(b"\n"):
            data = data[:-1]  # the newline the sentinel's printf put before itself
        return data.decode("utf-8", errors="replace")


class BashSession:
    """A persistent shell for one session. Create, then ``await run(command)``; ``await close()``.

    ``cwd``: the working tree. ``env``: the complete environment (nothing else is inherited).
    ``timeout``: seconds per command. Not safe for concurrent ``run`` calls (a session runs its
    tools one at a time)."""

    def __init__(self, cwd: Path | str, env: dict[str, str], timeout: float = DEFAULT_TIMEOUT_S,
                 max_output: int = MAX_OUTPUT_BYTES, wrap: Callable[[list[str]], list[str]] | None = None):
        self.cwd = str(cwd)
        self.wrap = wrap  # the sandbox: argv -> argv run inside it (None: unconfined)
        self._baseline: str | None = None  # the exported environment at the first start (see run(guarded=True))
        self._pristine = True  # the shell has run nothing since it started
        self._start_dir: str | None = None  # where the next shell starts (a restart keeps the folder)
        self._real_cwd = os.path.realpath(self.cwd)
        self.env = dict(env)
        self.timeout = timeout
        self.max_output = max_output
        self._proc: asyncio.subprocess.Process | None = None
        self._sentinel = f"__COCKPIT_CMD_DONE_{secrets.token_hex(8)}__"
        self._n = 0

    @property
    def pid(self) -> int | None:
        """The shell's pid (= its process group id), None when no shell runs."""
        return self._proc.pid if self._proc is not None and self._proc.returncode is None else None

    async def _start(self) -> asyncio.subprocess.Process:
        bash = shutil.which("bash", path=self.env.get("PATH")) or shutil.which("bash") or "/bin/bash"
        argv = [bash, "--noprofile", "--norc"]
        if self.wrap is not None:
            argv = self.wrap(argv)
        start, self._start_dir = self._start_dir or self.cwd, None
        self._pristine = True
        self._proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            cwd=start, env=self.env, start_new_session=True,
        )
        assert self._proc.stdin is not None
        self._proc.stdin.write(b"exec 198>&1\n")
        if start != self.cwd:  # a sandbox starts in its own --chdir: the folder the old shell was in
            self._proc.stdin.write(f"builtin cd -- {_quote(start)} 2>/dev/null\n".encode())
        if self._baseline is None:  # the exported environment as it starts (run(guarded=True) compares)
            base = await self._exchange(self._proc, f"\\builtin printf '%s' \"$({_DIGEST})\"")
            self._baseline = base.output if base.exit_code == 0 and not base.elided else ""
        return self._proc

    def current_dir(self) -> str:
        """The shell's current folder (absolute; the working tree until a command ran ``cd``),
        read from ``/proc``; the working tree when there is no shell yet or it cannot be read."""
        proc = self._proc
        if proc is not None and proc.returncode is None:
            try:
                return os.readlink(f"/proc/{self._shell_pid(proc.pid)}/cwd")
            except OSError:
                pass
        return self.cwd

    def _shell_pid(self, pid: int) -> int:
        """The shell's own pid: ``pid`` itself, or inside a sandbox the first ``bash`` below it
        (bwrap → its init → bash). The tree is mounted at the same path inside, so its cwd reads
        the same from here."""
        if self.wrap is None:
            return pid
        todo = [pid]
        for _ in range(16):
            if not todo:
                break
            cur = todo.pop(0)
            try:
                with open(f"/proc/{cur}/comm", encoding="utf-8") as f:
                    if cur != pid and f.read().strip() == "bash":
                        return cur
                with open(f"/proc/{cur}/task/{cur}/children", encoding="utf-8") as f:
                    todo += [int(c) for c in f.read().split()]
            except (OSError, ValueError):
                continue
        return pid

    async def run(self, command: str, guarded: bool = False) -> BashResult:
        """Run ``command`` in the persistent shell; returns its (capped) output and exit code.

        ``guarded`` (a command a permission *rule* allowed, no person saw it): it runs in a new
        shell — the session's start environment, the old shell's current folder (read from
        ``/proc``, never from the shell) — which then stays the session's shell, so nothing an
        earlier command planted (a function or alias named like the allowed program, a trap,
        ``hash -p``, ``enable -n``, ``BASH_ENV``) can run with it; its folder carries over (``cd x``
        then ``pytest``). When the old shell's exported variables
        (``PATH`` of an activated venv, ``PYTEST_ADDOPTS``…) differ from the start, nothing runs:
        the result has ``state_changed`` set and the session asks the user instead."""
        live = self._proc is not None and self._proc.returncode is None
        if guarded and live and not self._pristine:
            assert self._proc is not None
            now = await self._exchange(self._proc, f"\\builtin printf '%s' \"$({_DIGEST})\"")
            if now.exit_code != 0 or now.output != self._baseline:
                return BashResult("", None, state_changed=True)
            where = self.current_dir()
            self._kill()
            real = os.path.realpath(where)
            inside = real == self._real_cwd or real.startswith(self._real_cwd.rstrip("/") + "/")
            self._start_dir = where if inside and os.path.isdir(where) else None
            live = False
        proc = self._proc if live and self._proc is not None else await self._start()
        result = await self._exchange(proc, command)
        self._pristine = False  # whatever ran may have changed the shell (an allowed `export` too)
        return result

    async def _exchange(self, proc: asyncio.subprocess.Process, command: str) -> BashResult:
        """One command through the shell ``proc`` (see :meth:`run`)."""
        assert proc.stdin is not None and proc.stdout is not None
        self._n += 1
        delim = f"__COCKPIT_EOF_{secrets.token_hex(8)}__"
        script = "/dev/fd/197"
        # the command reaches the shell as a here-document on fd 197 (a pipe, or a temp file bash
        # unlinks at once): never a file on disk that the command itself, or a program it runs
        # (pytest --doctest-glob, a glob over /tmp), could read or run while it runs
        # fd 198 is the shell's own stdout (saved at start): the command's stdout and stderr are
        # set from it and restored after it, so `exec >/dev/null` or `exec 1>&-` in a command
        # cannot hide the sentinel (or later output); the command itself never sees fd 198
        # then, if the command's cd left the working tree (physically: symlinks resolved), back
        # to its root, flagged in the sentinel line
        tree = _quote(self._real_cwd.rstrip("/"))
        # the rest of the line is the tool's own, and the command may shadow what it uses
        # (`builtin() { :; }`, `enable -n printf`): undone right after the command. An alias
        # (`alias case=echo` with expand_aliases) only applies to lines read later — this one
        # was read before the command ran — and expansion is off again when the next one is read
        # (`POSIXLY_CORRECT=y` is an assignment, which no function can shadow: it turns on posix
        # mode, where the special builtin `unset` is found before a function named `unset`)
        restore = ("POSIXLY_CORRECT=y; \\unset -f builtin unset command enable shopt printf pwd cd 2>/dev/null; "
                   "\\unset POSIXLY_CORRECT; "
                   "\\builtin enable printf pwd cd 2>/dev/null; \\builtin shopt -u expand_aliases 2>/dev/null")
        body = (f"{{ . {script} < /dev/null 198>&-; }} 197<<'{delim}' >&198 2>&1; __cockpit_rc=$?; {restore}; "
                f"case \"$(builtin pwd -P 2>/dev/null)/\" in {tree}/*) __cockpit_cd='';; "
                f"*) builtin cd -- {_quote(self.cwd)} 2>/dev/null; __cockpit_cd=' reset';; esac; "
                f"builtin printf '\\n%s %d%s\\n' '{self._sentinel}' \"$__cockpit_rc\" \"$__cockpit_cd\" >&198")
        text = command if command.endswith("\n") else command + "\n"
        line = f"{body}\n{text}{delim}\n"
        cap = _Capture(self.max_output, self._sentinel.encode())
        try:
            proc.stdin.write(line.encode())
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            code = await proc.wait()
            self._proc = None
            return BashResult("", code, shell_exited=True)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        exited = _exit_of(proc)
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TimeoutError
                read = loop.create_task(proc.stdout.read(_READ))
                done, _ = await asyncio.wait({read, exited}, timeout=remaining,
                                             return_when=asyncio.FIRST_COMPLETED)
                if read not in done:
                    read.cancel()
                    if exited in done:  # the shell exited while a background job holds its output
                        return await self._shell_exited(proc, cap, script)
                    raise TimeoutError
                chunk = read.result()
                if not chunk:  # the shell exited (e.g. the command ran `exit`)
                    return await self._shell_exited(proc, cap, script)
                cap.feed(chunk)
                end = cap.find_end()
                if end is not None:
                    return BashResult(_text(cap, script), end, elided=cap.dropped,
                                      cwd_reset_to=self.cwd if cap.flag == "reset" else None)
        except TimeoutError:
            self._kill()
            return BashResult(_text(cap, script), None, timed_out=True, elided=cap.dropped)
        except asyncio.CancelledError:
            self._kill()
            raise
        finally:
            exited.cancel()

    async def _shell_exited(self, proc: asyncio.subprocess.Process, cap: _Capture, script: str) -> BashResult:
        """The shell ended (``exit``, ``set -e``): its background jobs end with it (they would
        otherwise outlive the session), and what they and the shell wrote is read to the end."""
        assert proc.stdout is not None
        self._proc = None
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            while chunk := await asyncio.wait_for(proc.stdout.read(_READ), 5):
                cap.feed(chunk)
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:  # a process that left the group (setsid) still holds the pipe
            pass
        return BashResult(_text(cap, script), proc.returncode, elided=cap.dropped, shell_exited=True)

    async def restart(self) -> None:
        """Kill the current shell (and its process group); the next ``run`` starts a new one."""
        self._kill()

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    async def close(self) -> None:
        """Kill the shell's process group. Idempotent."""
        proc = self._proc
        self._kill()
        if proc is not None:
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except (TimeoutError, ProcessLookupError):
                pass


def _exit_of(proc: asyncio.subprocess.Process) -> asyncio.Future:
    """A future done when ``proc`` exits, even while a background job it started still holds its
    output pipe (``proc.wait()`` waits for the pipes too). Linux: a pidfd; elsewhere a poll."""
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        async def poll() -> None:
            while proc.returncode is None:
                await asyncio.sleep(0.2)
        return loop.create_task(poll())
    done: asyncio.Future = loop.create_future()

    def ready() -> None:
        if not done.done():
            done.set_result(None)

    loop.add_reader(fd, ready)

    def close(_: asyncio.Future) -> None:
        loop.remove_reader(fd)
        os.close(fd)

    done.add_done_callback(close)
    return done


def _text(cap: _Capture, script: str) -> str:
    """The captured output, the temp script's path shown as ``bash`` (as an interactive shell says it)."""
    return cap.text().replace(f"{script}: ", "bash: ")


# the exported environment, as run(guarded=True) compares it with the start (cd is not a change);
# only a question hangs on it (run in the changed shell?): a new shell is what keeps a
# rule-allowed command safe, so a shell that fakes this output gains nothing
_DIGEST = "\\builtin unset PWD OLDPWD 2>/dev/null; \\builtin export -p"


def _quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


SECRET_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "COCKPIT_SERVER_TOKEN")


# names of variables that hold credentials (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, NPM_TOKEN, DB_PASSWORD,
# PGPASSWORD, MYSQL_PWD, SENTRY_DSN, GH_PAT, CI_JOB_JWT, SLACK_WEBHOOK_URL…); PWD, OLDPWD and
# TOKENIZERS_PARALLELISM are not
SECRET_NAME = re.compile(r"(?i)PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN(?!IZ)|JWT|WEBHOOK|CONNECTION_?STRING|_AUTH$|"
                         r"__AUTH|KUBECONFIG_DATA|_KEY$|^KEY$|(^|_|SSH|DB|PG|KEY|STORE|MY|REDIS|SMTP|MAIL|FTP|LDAP)PASS$|"
                         r"(^|_)PW$|(^|_)KEY_(B64|BASE64|PEM|FILE)$|"
                         r"AUTHORIZATION|COOKIE|BEARER|(^|_)CREDS?$|_AUTH_CONFIG$|_SEED$|(^|_)SAS$|"
                         r"(^|_)ID_(RSA|DSA|ECDSA|ED25519)(_|$)|"
                         r"_PWD(_|$)|(^|_)(DSN|PAT|CREDENTIALS?|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
                         r"SESSION_?KEY)(_|$)|^(AWS|AZURE|GOOGLE|GCP|DO|HF|HUGGING_?FACE|"
                         r"OPENAI|GEMINI|MISTRAL|COHERE|GROQ|STRIPE|SLACK|TWILIO|SENTRY)_.*KEY")
# a value carrying a password: in a URL (postgres://user:pass@host, redis://:pass@host, ?password=…), or in a
# connection string (Server=h;Password=…)
SECRET_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@|"
                        r"(^|[?&;\s])(?i:password|pwd|passwd|api_?key|access_?token|token)\s*=\s*[^&;\s]")


def _path_absolute(path: str) -> str:
    """``PATH`` without relative or empty entries (``.``, ``""``, ``bin``): a command name must
    never find a program planted in whatever folder the shell is in."""
    kept = [p for p in path.split(":") if p.startswith("/")]
    return ":".join(kept) or "/usr/local/bin:/usr/bin:/bin"


def session_env(base: dict[str, str], secrets_to_strip: tuple[str, ...] = (),
                extra: dict[str, str] | None = None, keep: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment a session's shell sees: ``base`` without the API key variables
    (:data:`SECRET_ENV`), without variables named like credentials (:data:`SECRET_NAME`, unless
    ``keep`` names them: ``[sandbox] pass_env``, or holding a password in a URL, :data:`SECRET_URL`)
    and without any variable whose value contains one of ``secrets_to_strip``; plus non-interactive
    defaults (no pager, no git prompts) and ``extra``; ``PATH`` keeps only absolute folders."""
    env = {}
    for k, v in base.items():
        if k in SECRET_ENV or ((SECRET_NAME.search(k) or SECRET_URL.search(v)) and k not in keep):
            continue
        if any(s and len(s) >= 8 and s in v for s in secrets_to_strip):
            continue
        env[k] = v
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "TERM": "dumb",
                "NO_COLOR": "1", "CI": env.get("CI", "")})
    if not env["CI"]:
        del env["CI"]
    env.update(extra or {})
    if "PATH" in env:
        env["PATH"] = _path_absolute(env["PATH"])
    return env
