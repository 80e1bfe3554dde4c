"""Permission modes and rules, named as Claude Code names them.

Modes (``--permission-mode``, config ``permission_mode``):

- ``default``: reading (editor ``view``, ``memory_search``) is allowed; every edit, every shell
  command and ``memory_save`` asks first.
- ``acceptEdits``: edits inside the working tree and ``memory_save`` are allowed; shell commands ask.
- ``plan``: read-only. Edits, commands and ``memory_save`` are refused; the model is told why.
- ``bypassPermissions``: everything is allowed. Edits are still confined to the working tree by
  the editor, but shell commands run unconfined as the user (bash cannot be confined by path
  checks): use it only for trusted tasks.

Rules (config ``[permissions]`` ``allow = [...]`` / ``deny = [...]``, Claude Code's syntax):
``Bash`` (any command), ``Bash(pytest *)`` (wildcard; ``X *`` also matches bare ``X``),
``Bash(npm run test:*)`` (legacy prefix form), ``Bash(git status)`` (exact), ``Edit`` (any edit),
``Edit(src/**)`` (edits to matching paths, relative to the working tree; ``/src/**`` and
``./src/**`` mean the same; ``..`` or ``~`` in an Edit/Write allow rule is a config error),
``Write`` (file creation), ``Read``, ``memory_save`` / ``mcp__cockpit__memory_save``. Deny rules
win over everything, then plan mode, then bypass, then allow rules (config, then those added with
"allow for this session"), then the mode's default.

Bash lines are read as bash reads them (:mod:`cockpit.runtime.shellwords`: quoting, ``$'…'``,
comments, newlines). A compound command (``a && b``, ``a | b``, ``a; b``, a second line) is
allowed by rules only when every part is. A line the rules cannot judge is never allowed by a
rule narrower than ``Bash``: command or process substitution, a subshell or function definition,
a brace group, a compound-command keyword (``for``, ``if`` …), an expanded command name
(``$CMD``), or output redirected where it may leave the working tree (``> /etc/x``, ``>>
~/.bashrc``, ``> ../x``, ``> $HOME/x``, ``> {a,b}``, a relative path after a ``cd`` in the same
line, or one whose symlinks lead out, resolved from the shell's current folder), input read
from an expanded path (``< $T``), inline code (``perl -ne``, ``node --eval=…``), a variable
naming a program others run (``GIT_EDITOR=…``, ``export LD_PRELOAD=…``), or a program told to
run or write what no rule sees (``git config`` setting a value, ``git submodule``, ``ext::``,
``--upload-pack``, ``find -exec``/``-delete``, ``sed -i``/``w``, ``tar --to-command``, ``rsync
-e``, ``ssh``; see :func:`_program_runs`, :func:`_git_runs`) — also under wrappers. ``Bash(x:*)``
is a word prefix (``git diff:*`` never matches ``git difftool``). A deny rule is matched against
every part, the part under its wrappers (``timeout 5 rm``, ``env X=1 rm``, ``sudo rm``, ``xargs
rm``, ``for …; do rm``, ``/bin/rm``), the scripts of ``bash -c`` / ``eval`` / ``su -c`` /
``trap``, the bodies of ``$(…)``, backticks, functions and ``case`` branches; a line nested
deeper than that check follows asks, even in ``bypassPermissions``. "Allow for this session" adds
one rule per part (``Bash(ls *)``, ``Bash(cat *)``), and for a command that runs another
(``timeout 60 pytest``, ``PYTHONPATH=src pytest``, ``bash -c …``) that exact command only. A
path is judged as it resolves: ``./.env``, an absolute path or a symlink meet ``Read(.env)``.
"""

from __future__ import annotations

import enum
import fnmatch
import os
import re
import shlex
from dataclasses import dataclass, field

from cockpit.runtime.protected import protected_reason
from cockpit.runtime.shellwords import (
    KEYWORDS,
    Lexed,
    ShellSyntax,
    Word,
    command_groups,
    lex,
    redirect_targets,
    simple_commands,
    words_of,
)


class PermissionMode(enum.StrEnum):
    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    BYPASS = "bypassPermissions"
    AUTO = "auto"

    @classmethod
    def parse(cls, value: str) -> PermissionMode:
        """Raises ValueError naming the valid modes."""
        for mode in cls:
            if value == mode.value:
                return mode
        raise ValueError(f"unknown permission mode {value!r}; use one of: {', '.join(m.value for m in cls)}")

    @property
    def blurb(self) -> str:
        return {
            "default": "edits and shell commands ask the user first",
            "acceptEdits": "edits in the working tree are allowed; shell commands ask the user first",
            "plan": "read-only: view files and search notes, then propose a plan; no edits, no commands",
            "bypassPermissions": "edits and shell commands are allowed without asking",
            "auto": ("commands run without asking inside the sandbox (worktree writable, network as configured); "
                     "edits in the working tree are allowed; protected paths and memory_save ask"),
        }[self.value]


class RuleError(ValueError):
    """A rule string that cannot be parsed (message names it)."""


_TOOL_ALIASES = {
    "bash": "Bash", "edit": "Edit", "multiedit": "Edit", "write": "Write", "read": "Read",
    "memory_save": "memory_save", "mcp__cockpit__memory_save": "memory_save",
    "memory_search": "memory_search", "mcp__cockpit__memory_search": "memory_search",
    "memory_get": "memory_search", "mcp__cockpit__memory_get": "memory_search",
}


@dataclass(frozen=True)
class Rule:
    """``tool`` (Bash, Edit, Write, Read, memory_save, memory_search) and an optional ``spec``."""

    tool: str
    spec: str | None = None
    exact: bool = False  # Bash only: the command exactly as given ("allow for this session" of a wrapped one)

    @classmethod
    def parse(cls, text: str) -> Rule:
        m = re.fullmatch(r"\s*([A-Za-z_][\w]*)\s*(?:\((.*)\))?\s*", text or "")
        if not m:
            raise RuleError(f"bad permission rule {text!r}; e.g. 'Bash(pytest *)' or 'Edit'")
        tool = _TOOL_ALIASES.get(m.group(1).lower())
        if tool is None:
            raise RuleError(f"unknown tool in permission rule {text!r}; use Bash, Edit, Write, Read or memory_save")
        spec = m.group(2)
        return cls(tool, spec.strip() if spec and spec.strip() not in ("*", "") else None)

    @classmethod
    def parse_allow(cls, text: str) -> Rule:
        """An allow rule: as :meth:`parse`, and an edit path outside the working tree (``..``, ``~``,
        ``//abs``) is an error — it could never match, so the user would believe in a rule that does
        nothing. (Such deny rules are kept: harmless here, meaningful to Claude Code.)"""
        rule = cls.parse(text)
        spec = rule.spec
        if spec and rule.tool in ("Edit", "Write"):  # (Claude Code may read outside: Read rules stay)
            if spec.startswith(("~", "//")) or ".." in spec.split("/"):
                raise RuleError(f"permission rule {text!r} names a path outside the working tree; paths in "
                                f"rules are relative to it, e.g. 'Edit(src/**)'")
        return rule

    def __str__(self) -> str:
        return self.tool if self.spec is None else f"{self.tool}({self.spec})"


@dataclass(frozen=True)
class Action:
    """What a tool call would do. ``kind``: read | edit | create | bash | memory_save | memory_search.
    ``target``: the command (bash) or the path relative to the working tree (edits)."""

    kind: str
    target: str = ""
    cwd: str = ""  # bash: the shell's current folder (absolute) when known
    quoted: str = ""  # bash, one simple command: its words shell-quoted (what an exact rule compares)


@dataclass(frozen=True)
class Decision:
    """``verdict``: allow | ask | deny; ``reason`` says why (shown to the model when denied)."""

    verdict: str
    reason: str = ""
    by_rule: bool = False  # allowed by an allow rule (no person saw it): run guarded (BashSession.run)


_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}
# after one of these in the same line a relative path can mean anything: the folder moved, or a
# symlink was just made (`ln -s / x && echo > x/etc/…`)
_MOVES = {"cd", "pushd", "popd", "ln", "cp", "mv", "rsync", "tar", "unzip", "git", "install", "mkdir"}
# commands that run the rest of their words as a command (after options): what a deny rule must
# see through (`timeout 5 rm -rf x`, `env X=1 rm x`, `sudo rm x`, `xargs rm`), and what "allow
# for this session" must not turn into a prefix rule (`Bash(timeout *)` would allow anything)
_WRAPPERS = {"command", "builtin", "exec", "nohup", "sudo", "doas", "env", "nice", "timeout", "xargs", "stdbuf",
             "ionice", "chrt", "taskset", "strace", "ltrace", "setsid", "flock", "unbuffer", "time", "watch",
             "chroot", "runuser", "su", "nsenter", "unshare", "firejail", "caffeinate", "systemd-run",
             # util-linux, libcap and friends (installed by default: a deny rule must see through them too)
             "prlimit", "setpriv", "choom", "setarch", "linux32", "linux64", "numactl", "uclampset", "cgexec",
             "fakeroot", "faketime", "proxychains", "proxychains4", "torsocks", "catchsegv", "valgrind", "chronic",
             "dbus-run-session", "capsh"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "busybox", "mksh", "ash"}
_OPT_VALUE = {  # options that take the next word as their value (short letters and long names)
    "timeout": set("sk") | {"--signal", "--kill-after"}, "nice": set("n") | {"--adjustment"},
    "xargs": set("IndPLsEaeSlR") | {"--max-args", "--max-procs", "--delimiter", "--arg-file", "--max-chars",
                                   "--max-lines", "--eof", "--replace", "--process-slot-var"},
    "sudo": set("ugCDhprtUT") | {"--user", "--group", "--chdir", "--host", "--prompt", "--role", "--type"},
    "env": set("uCS") | {"--unset", "--chdir", "--split-string", "--default-signal", "--ignore-signal"},
    "ionice": set("cnp"), "su": set("csgG") | {"--command", "--shell", "--group"},
    "runuser": set("ugcs") | {"--user", "--group", "--command", "--shell"}, "watch": set("n") | {"--interval"},
    "stdbuf": set("ioe") | {"--input", "--output", "--error"}, "flock": set("wEc") | {"--timeout", "--command"},
    "strace": set("oeEpPsuaIbX") | {"--output"}, "ltrace": set("oeEpsua"), "exec": set("a"),
    "chrt": set(), "taskset": set(), "time": set("fo") | {"--format", "--output"},
    "systemd-run": {"--unit", "-u", "-p", "--property", "--uid", "--gid"}, "unshare": set(), "nsenter": set("tS"),
    "choom": set("np"), "cgexec": set("g"), "uclampset": set("mMp"), "numactl": set("CNmip"), "prlimit": set("p"),
    "faketime": set("f"), "proxychains": set("f"), "proxychains4": set("f"),
}
_POSITIONAL = {"timeout": 1, "chrt": 1, "taskset": 1, "flock": 1, "chroot": 1, "setarch": 1,  # words before the command
               "faketime": 1}
_SCRIPT_OPTS = {"su": {"-c", "--command"}, "runuser": {"-c", "--command"}, "flock": {"-c", "--command"},
                "env": {"-S", "--split-string"}}
_SHELL_OPT_VALUE = {"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_GIT_PROGRAM_KEYS = {"core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "core.hookspath",
                     "diff.external", "sequence.editor", "gpg.program", "credential.helper", "core.askpass",
                     "pager.log", "pager.diff", "pager.show", "uploadpack.packobjectshook"}
# inline code an interpreter runs: no rule narrower than Bash can say what it does
_INLINE_CODE = {"python": {"-c"}, "python3": {"-c"}, "node": {"-e", "--eval", "-p", "--print"},
                "perl": {"-e", "-E"}, "ruby": {"-e"}, "php": {"-r"}, "deno": {"eval"}, "bun": {"-e", "--eval"},
                "lua": {"-e"}, "Rscript": {"-e"}, "osascript": {"-e"}}
_GIT_RISKY_GLOBAL = ("-c", "--config-env", "-C", "--exec-path", "--git-dir", "--work-tree", "--namespace")
_GIT_OPT_VALUE = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}
MAX_ANALYSED_CHARS = 100_000  # a longer line is not lexed: nothing narrower than Bash allows it
_MAX_DEPTH = 10  # scripts inside scripts (bash -c 'eval "…"'), followed this deep
_MAX_UNWRAPS = 64


def _skip_options(name: str, rest: list[str]) -> tuple[int, str | None]:
    """How many of ``rest`` are ``name``'s own options (and their values), and the script an
    option carries (``su -c CMD``, ``env -S CMD``), if any."""
    takes = _OPT_VALUE.get(name, set())
    scripted = _SCRIPT_OPTS.get(name, set())
    k, script = 0, None
    while k < len(rest) and rest[k].startswith("-") and rest[k] not in ("-", "--"):
        w = rest[k]
        if w.startswith("--"):
            key = w.split("=", 1)[0]
            if key in scripted:
                script = w.split("=", 1)[1] if "=" in w else (rest[k + 1] if k + 1 < len(rest) else "")
            k += 1 if "=" in w or key not in takes else 2
            continue
        if w in scripted:
            script = rest[k + 1] if k + 1 < len(rest) else ""
        letters = w[1:]
        for pos, letter in enumerate(letters):  # a cluster: -vk 1, -0n 1, -S'cmd'
            if letter in takes:
                if f"-{letter}" in scripted and pos + 1 < len(letters):
                    script = letters[pos + 1:]
                if pos + 1 == len(letters):
                    k += 1  # the value is the next word
                break
        k += 1
    if k < len(rest) and rest[k] == "--":
        k += 1
    return k, script


def _unwrap(words: list[str]) -> tuple[list[str], list[str]] | None:
    """``words`` with one leading wrapper taken off — an assignment, a keyword, an empty-looking
    expansion (``$x rm``), ``timeout 5``, ``env X=1``, ``sudo -u x``, ``git -C . ``… — and the
    scripts it runs (``bash -c S``, ``eval …``, ``su -c S``, ``trap S``, ``find -exec …``); None
    when the first word wraps nothing."""
    if not words:
        return None
    first, rest = words[0], words[1:]
    if first == "time":  # the keyword, with its own options: time -p cmd, time -- cmd
        k = 0
        while k < len(rest) and rest[k] in ("-p", "--"):
            k += 1
        return rest[k:], []
    if _ASSIGNMENT.match(first) or first in KEYWORDS or first.startswith("$"):
        return rest, []
    name = first.rsplit("/", 1)[-1]
    if name != first:  # /bin/rm is rm
        return [name, *rest], []
    if name == "eval":  # its words joined are the script; plain words unwrap here, not by recursion
        joined = " ".join(rest)
        return (rest, []) if not set(joined) & set(";&|<>()`$\\'\"\n{}#*?[~") else ([], [joined])
    if name in ("source", "."):
        return None
    if name == "trap":
        return [], rest[:1]
    if name == "mapfile" or name == "readarray":
        return [], [rest[k + 1] for k, w in enumerate(rest[:-1]) if w == "-C"]
    if name in ("find", "fd"):
        out, k = [], 0
        while k < len(rest):
            if rest[k] in ("-exec", "-execdir", "-ok", "-okdir", "-x", "--exec"):
                j = k + 1
                while j < len(rest) and rest[j] not in (";", "+", "\\;"):
                    j += 1
                out.append(" ".join(rest[k + 1:j]))
                k = j
            k += 1
        return ([], out) if out else None
    if name == "git":
        k, scripts = 0, []
        while k < len(rest) and rest[k].startswith("-"):
            if rest[k] == "-c" and k + 1 < len(rest):  # git -c alias.x='!rm …' x: that script runs
                key, _, value = rest[k + 1].partition("=")
                if key.lower().startswith("alias.") and value.startswith("!"):
                    scripts.append(value[1:])
                elif key.lower() in _GIT_PROGRAM_KEYS:
                    scripts.append(value)
            k += 2 if rest[k] in _GIT_OPT_VALUE else 1
        return (["git", *rest[k:]], scripts) if k else None
    if name == "busybox" and rest and not rest[0].startswith("-") and rest[0] not in ("sh", "ash", "hush"):
        return rest, []  # busybox wget …: the applet is the command
    if name == "capsh":  # capsh [options] -- ARGS: bash's arguments (-c SCRIPT runs SCRIPT)
        tail = rest[rest.index("--") + 1:] if "--" in rest else []
        return ([], [tail[1]]) if tail[:1] == ["-c"] and len(tail) > 1 else ([], [])
    if name in _SHELLS:
        k = 0
        while k < len(rest) and rest[k][:1] in ("-", "+") and rest[k] != "--":
            w = rest[k]
            if w == "-c" or (w.startswith("-") and not w.startswith("--") and "c" in w[1:]):
                k += 1
                while k < len(rest) and rest[k][:1] in ("-", "+"):  # bash -c -- 'cmd', -c -e
                    k += 2 if rest[k] in _SHELL_OPT_VALUE else 1
                return [], rest[k:k + 1]
            k += 2 if w in _SHELL_OPT_VALUE else 1
        return None
    if name not in _WRAPPERS:
        return None
    k, script = _skip_options(name, rest)
    if name == "env":
        while k < len(rest) and _ASSIGNMENT.match(rest[k]):
            k += 1
    if name in ("su", "runuser") and script is None and k < len(rest):  # su root -c 'cmd'
        k2, script = _skip_options(name, rest[k + 1:])
        if script is not None:
            return [], [script]
    if name == "flock" and script is None and k + 1 < len(rest) and rest[k + 1] in ("-c", "--command"):
        return [], rest[k + 2:k + 3]
    scripts = [script] if script is not None else []
    return rest[k + _POSITIONAL.get(name, 0):], scripts


@dataclass
class BashLine:
    """A command line as the rules judge it (see :func:`analyse`). ``parts``: each simple
    command's words, joined; ``quoted``: the same, shell-quoted (what an exact rule compares);
    ``deny_views``: every spelling a deny rule is matched against (each command bash may run —
    in groups, subshells, function bodies, substitutions — with its wrappers taken off, and the
    scripts of ``bash -c`` / ``eval`` / ``trap``…); ``judged``: rules narrower than ``Bash`` may
    allow it; ``why``: why not, when not."""

    parts: list[str]
    deny_views: list[str]
    judged: bool
    why: str = ""
    quoted: list[str] = field(default_factory=list)
    exhausted: bool = False  # nested deeper than the deny check follows (eval eval … ×64)


def _crude_parts(line: str) -> list[str]:
    parts = re.split(r"[;&|\n()`{}]+|\$\(", line)
    return [" ".join(p.replace("'", "").replace('"', "").replace("\\", "").split()) for p in parts if p.strip()]


_SHELL_STATE = {"hash", "alias", "enable", "shopt", "source", ".", "set", "declare", "typeset", "export",
                "readonly", "unalias", "trap", "builtin", "command", "exec", "coproc"}
_INTERPRETERS = {"python", "python3", "node", "perl", "ruby", "php", "bash", "sh", "zsh", "dash", "deno", "bun",
                 "lua", "tclsh", "Rscript", "osascript"}


def _runs_hidden_code(name: str, texts: list[str], part: list) -> str:
    """Why a command runs code a rule cannot see (another command inside a program's own language,
    or shell state that renames commands), or ``""``."""
    if name in ("hash", "alias", "enable", "shopt") or (name in _SHELL_STATE and name not in ("export", "set")
                                                          and len(texts) > 1 and name != "command"):
        return f"{name} changes what later command names run"
    if any(re.match(r"BASH_(CMDS|ALIASES)\[", t) for t in texts):
        return "BASH_CMDS / BASH_ALIASES rename commands"
    base = re.sub(r"[\d.]+$", "", name) if name.startswith("python") else name
    if base in _INTERPRETERS:
        if "-" in texts[1:] or any(op in ("<<<", "<<", "<<-", "<") for op, _ in redirect_targets(part)):
            return f"a program fed to {name} on its standard input"
    if name in ("awk", "gawk", "mawk", "nawk") and any(re.search(r"system|\||getline", t) for t in texts[1:]):
        return "awk running commands"
    if name in ("sed", "gsed") and any(re.search(r"(^|[;{}\n])\s*[0-9,$/]*\s*e\b|/e\b|[/|#]e$", t)
                                       for t in texts[1:]):
        return "sed's e command runs commands"
    if name in ("vim", "vi", "nvim", "ex", "view", "emacs") and any(t.startswith(("-c", "+", "-e", "--eval", "-S"))
                                                                    for t in texts[1:]):
        return f"{name} running commands"
    if name == "script" and any(re.match(r"-[a-zA-Z]*c", t) or t.startswith("--command") for t in texts[1:]):
        return "script -c runs a command"
    if (name == "npm" and texts[1:2] in (["exec"], ["x"])) or (name == "npx" and "-c" in texts[1:]):
        return "npm exec runs a command"
    if any(target.text.startswith(("/dev/tcp/", "/dev/udp/")) for _, target in redirect_targets(part)):
        return "a network connection through bash's /dev/tcp"
    return ""


# variables naming a program another program runs (or code it loads): set as a prefix, by `env`
# or `export`, they make any command run what they say
_HOOK_VARS = {"GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_PAGER",
              "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "PAGER",
              "MANPAGER", "EDITOR", "VISUAL", "BROWSER", "BASH_ENV", "ENV", "LD_PRELOAD", "LD_LIBRARY_PATH",
              "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "PYTHONSTARTUP", "NODE_OPTIONS", "PERL5OPT",
              "RUBYOPT", "PROMPT_COMMAND", "PS0", "PS4", "LESSOPEN", "LESSCLOSE", "SHELLOPTS", "BASHOPTS"}
_DECLARES = {"export", "declare", "typeset", "readonly", "local"}
# option letters after which the rest of a cluster is a value (`python -Wc…` is not -c)
_INLINE_STOP = {"python": "mWXQ", "node": "rC", "perl": "IMmxldCFi0D", "ruby": "ICErFxKTW0", "php": "cdfz",
                "lua": "l"}
# git subcommands that run other programs, or change what git runs later
_GIT_RUNS = {"submodule", "filter-branch", "daemon", "instaweb", "difftool", "mergetool", "credential",
             "web--browse", "upload-pack", "receive-pack", "shell", "remote-ext", "remote-fd", "filter-repo"}
_GIT_TRANSPORT = {"fetch", "pull", "push", "clone", "ls-remote", "archive", "remote", "submodule"}
_GIT_CONFIG_READ = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color",
                    "--get-colorbool", "--show-origin", "--show-scope", "--name-only"}
_GIT_CONFIG_WRITE = {"--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section",
                     "--edit", "-e"}
_GIT_CONFIG_VALUE = {"-f", "--file", "--blob", "--type", "--default", "--comment", "--value"}
_SED_W = re.compile(r"(^|[;{}\n0-9$/!]|^--expression=)\s*[wW](\s|$)|"
                    r"(^|[;{}\n\s=])s([^\\\n\w\s])(?:\\.|(?!\4).)*\4(?:\\.|(?!\4).)*\4[gpiImMe0-9]*[wW]")


def _long(args: list[str], names: set[str]) -> bool:
    """One of ``args`` is one of the long options ``names`` (``--x=v`` too), or an abbreviation
    of one (git, tar and getopt_long take ``--upload-p`` for ``--upload-pack``)."""
    for a in args:
        key = a.split("=", 1)[0]
        if key.startswith("--") and len(key) >= 4 and any(n.startswith(key) for n in names):
            return True
    return False


def _short(args: list[str], letters: str, stop: str = "") -> bool:
    """One of ``args`` is a short option cluster (``-xvf``) holding one of ``letters`` before any
    of ``stop`` (a letter whose value fills the rest of the word)."""
    for a in args:
        if a.startswith("-") and not a.startswith("--") and len(a) > 1:
            for ch in a[1:]:
                if ch in letters:
                    return True
                if ch in stop:
                    break
    return False


def _hook_var(word: str) -> bool:
    name = re.split(r"[+\[=]", word, maxsplit=1)[0]
    return name in _HOOK_VARS or name.startswith("GIT_CONFIG")


def _git_config_sets(args: list[str]) -> bool:
    """``git config …`` changes the configuration (anything but reading a value or the list)."""
    flags, pos, k = set(), [], 0
    while k < len(args):
        a = args[k]
        if a.startswith("-"):
            flags.add(a.split("=", 1)[0])
            k += 2 if a in _GIT_CONFIG_VALUE else 1
            continue
        pos.append(a)
        k += 1
    if flags & _GIT_CONFIG_WRITE or pos[:1] in (["set"], ["unset"], ["edit"], ["rename-section"],
                                                   ["remove-section"]):
        return True
    if pos[:1] in (["get"], ["list"]) or flags & _GIT_CONFIG_READ:
        return False
    return len(pos) >= 2


def _git_runs(texts: list[str]) -> str:
    """Why a git command may run a program the rules cannot see (or change what git runs later)."""
    k = 1
    while k < len(texts) and texts[k].startswith("-"):
        k += 2 if texts[k] in _GIT_OPT_VALUE else 1
    sub, args = (texts[k], texts[k + 1:]) if k < len(texts) else ("", [])
    if any("ext::" in t for t in texts[1:]):
        return "git's ext:: transport runs a command"
    if sub in _GIT_RUNS or sub.startswith("credential-") or (sub == "bisect" and args[:1] == ["run"]):
        return f"git {sub} runs other programs"
    if sub == "config" and _git_config_sets(args):
        return "git config changes what git runs (core.fsmonitor, protocol.ext.allow …)"
    if sub in _GIT_TRANSPORT and (_long(args, {"--upload-pack", "--receive-pack", "--exec"}) or "-u" in args):
        return f"git {sub} told which program to run"
    if sub == "rebase" and (_long(args, {"--exec"}) or _short(args, "x", "sSCX")):
        return "git rebase --exec runs commands"
    if _long(args, {"--exec", "--sendmail-cmd", "--to-cmd", "--cc-cmd", "--open-files-in-pager", "--extcmd",
                    "--tool"}) or (sub == "grep" and _short(args, "O", "ABCefm")):
        return f"git {sub} told which program to run"
    return ""


def _program_runs(name: str, texts: list[str]) -> str:
    """Why ``name``'s options make it run a program (or write where a rule cannot see), or ``""``."""
    args = texts[1:]
    if name in ("find", "gfind") and any(t in ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls")
                                         or t.startswith("-fprint") for t in args):
        return "find running commands or deleting and writing files"
    if name in ("fd", "fdfind") and (_long(args, {"--exec", "--exec-batch"}) or _short(args, "xX")):
        return "fd running commands"
    if name in ("sed", "gsed") and (_long(args, {"--in-place", "--file"}) or _short(args, "if", "el")
                                    or any(_SED_W.search(t) for t in args)):
        return "sed writing files (-i, w) or reading its script from a file"
    if name in ("tar", "gtar", "bsdtar") and (
            _long(args, {"--to-command", "--use-compress-program", "--checkpoint-action", "--info-script",
                         "--new-volume-script", "--rsh-command", "--rmt-command"})
            or _short(args, "IF") or (args[:1] and re.fullmatch(r"[A-Za-z]*[IF][A-Za-z]*", args[0]))):
        return "tar running a program"
    if name in ("gdb", "gdb-multiarch", "cgdb", "lldb") and any(
            t.startswith("-") and t.lstrip("-").split("=", 1)[0] in
            {"ex", "iex", "x", "ix", "command", "eval-command", "init-command", "init-eval-command", "o", "O",
             "one-line", "s", "source", "S", "k", "K", "batch"} for t in args):
        return f"{name} running commands"
    if name in ("make", "gmake") and (_long(args, {"--eval", "--file", "--makefile"})
                                      or _short(args, "fE", "jlCIoWO")):
        return "make reading a makefile the rule does not name"
    if name in ("awk", "gawk", "mawk", "nawk") and (_long(args, {"--file", "--exec", "--include", "--load"})
                                                    or any(t[:2] in ("-f", "-E", "-i", "-l") for t in args)):
        return "awk running a program from a file"
    if name == "zip" and (_long(args, {"--unzip-command"}) or any(
            t.startswith("-") and not t.startswith("--") and "TT" in t for t in args)):
        return "zip -TT runs a command"
    if name == "rsync" and (_long(args, {"--rsh", "--rsync-path", "--remote-option", "--config"})
                            or _short(args, "eM")):
        return "rsync running a program"
    if name in ("ssh", "slogin", "autossh", "mosh", "dbclient"):
        return f"{name} runs commands on another host (and ProxyCommand here)"
    if name in ("scp", "sftp") and _short(args, "oSF", "cilPJDBRs"):
        return f"{name} told which program to run"
    if name in ("less", "more", "most", "pg") and any(t.startswith("+") or "!" in t or t.startswith("-k")
                                                      or t.startswith("--lesskey") for t in args):
        return f"{name} running commands"
    if name == "man" and (_long(args, {"--pager", "--html", "--browser"}) or _short(args, "PH")):
        return "man told which program to run"
    if name == "env" and _skip_options("env", args)[1] is not None:
        return "env -S splits a string into a command"
    if name in ("sort", "gsort") and (_long(args, {"--compress-program", "--output", "--files0-from",
                                                   "--temporary-directory"}) or _short(args, "oT", "kSt")):
        return "sort running a compressor, or writing or reading files the rule does not name"
    if name in ("rg", "ripgrep") and _long(args, {"--pre"}):
        return "rg running a preprocessor on every file"
    if name == "tree" and _short(args, "o", "LPIHT"):
        return "tree writing its listing to a file"
    return ""


def _inline_code(name: str, texts: list[str]) -> bool:
    base = re.sub(r"[\d.]+$", "", name) if name.startswith("python") else name
    inline = _INLINE_CODE.get(base)
    if not inline:
        return False
    letters = "".join(o[1] for o in inline if len(o) == 2 and o[0] == "-")
    return (any(t in inline or t.split("=", 1)[0] in inline for t in texts[1:])
            or _short(texts[1:], letters, _INLINE_STOP.get(base, "")))


def _judge_one(texts: list[str], part: list) -> str:
    """Why one command (one view of a part: under its wrappers) cannot be judged by a rule, or ``""``."""
    if _ASSIGNMENT.match(texts[0]):
        return f"{texts[0].split('=', 1)[0]} names a program other commands run" if _hook_var(texts[0]) else ""
    name = texts[0].rsplit("/", 1)[-1]
    if _inline_code(name, texts):
        return f"inline code run by {name}"
    if name in _DECLARES and any(_hook_var(t) for t in texts[1:] if not t.startswith("-")):
        return f"{name} sets a variable naming a program other commands run"
    if name == "env" and any(_ASSIGNMENT.match(t) and _hook_var(t) for t in texts[1:]):
        return "env sets a variable naming a program the command runs"
    if name == "git":
        k = 1
        while k < len(texts) and texts[k].startswith("-"):  # git --no-pager -c core.pager=… log too
            if texts[k].split("=", 1)[0] in _GIT_RISKY_GLOBAL:
                return "git's global options (-c, -C, --git-dir …) can run other programs"
            k += 2 if texts[k] in _GIT_OPT_VALUE else 1
        why = _git_runs(texts)
        if why:
            return why
    return _program_runs(name, texts) or _runs_hidden_code(name, texts, part)


def _unjudged(texts: list[str], part: list) -> str:
    """Why a simple command cannot be judged by a rule — looking at it and at each command under
    its wrappers (``timeout 5 python -c``, ``X=1 git config …``) — or ``""``."""
    todo, seen = [texts], 0
    while todo:
        seen += 1
        if seen > _MAX_UNWRAPS:
            return "wrappers nested too deep to judge"
        words = todo.pop()
        if not words:
            continue
        why = _judge_one(words, part)
        if why:
            return why
        un = _unwrap(words)
        if un is not None and un[0] and un[0] != words:
            todo.append(un[0])
    return ""


def _escapes(target: Word, root: str | None, cwd: str | None, moved: bool) -> bool:
    """True when writing to ``target`` may land outside the working tree ``root`` (or in .git)."""
    text = target.text
    if text in _HARMLESS_TARGETS:
        return False
    if target.flags or not text or "\x00" in text:
        return True  # $HOME/x, {a,b}, *.txt, ~/x: bash decides where
    if text.startswith("/") or ".." in text.split("/") or ".git" in text.split("/"):
        return True  # (.git: the editor refuses it too; git runs what .git/config says)
    if moved:
        return True
    if root is None:
        return False
    try:
        base = os.path.realpath(root)
        where = os.path.realpath(os.path.join(cwd or root, text))  # symlinks resolved
    except (ValueError, OSError):
        return True
    return not (where == base or where.startswith(base.rstrip("/") + "/"))


def _views(lexed: Lexed, depth: int) -> tuple[list[str], bool]:
    """What deny rules are matched against (see :class:`BashLine`), and whether some of it was
    nested too deep to follow."""
    views: list[str] = []
    exhausted = False

    def nested(script: str) -> None:
        nonlocal exhausted
        if depth >= _MAX_DEPTH:
            exhausted = True
            return
        sub = analyse(script, _depth=depth + 1)
        views.extend(sub.deny_views)
        exhausted = exhausted or sub.exhausted

    groups = command_groups(lexed)
    for g, words in enumerate(groups):
        texts = [w.text for w in words]
        views.append(" ".join(texts))
        todo, seen = [texts], 0
        while todo:
            seen += 1
            if seen > _MAX_UNWRAPS:
                exhausted = True
                break
            un = _unwrap(todo.pop())
            if un is None:
                continue
            rest, scripts = un
            if rest:
                views.append(" ".join(rest))
                todo.append(rest)
            for script in scripts:
                nested(script)
        name = texts[0].rsplit("/", 1)[-1] if texts else ""
        if name in _SHELLS and g > 0:  # echo 'rm x' | sh: the piped words run
            feeder = groups[g - 1][0].text.rsplit("/", 1)[-1] if groups[g - 1] else ""
            if feeder in ("echo", "printf"):
                for prev in groups[g - 1][1:]:
                    nested(prev.text)
            else:  # … | base64 -d | sh, curl … | sh: a script no rule can be matched against
                exhausted = True
        if _program_from_input(texts):  # printf curl | xargs env, … | xargs -I{} {} x
            exhausted = True
    for tok_i, tok in enumerate(lexed.tokens):  # bash <<< 'rm x': a here-string fed to a shell
        following = lexed.tokens[tok_i + 1] if tok_i + 1 < len(lexed.tokens) else None
        if tok == "<<<" and isinstance(following, Word):
            nested(following.text)
    for script in lexed.scripts:  # $(…), backticks, <(…), here-document substitutions
        nested(script)
    return views, exhausted


def _program_from_input(texts: list[str]) -> bool:
    """``xargs`` (under any wrappers) whose command is made from what it reads: no program of its
    own to match (a wrapper or a shell that runs the words it is given, or the replace string)."""
    k = 0
    while k < len(texts) and texts[k].rsplit("/", 1)[-1] != "xargs":
        k += 1
    if k == len(texts):
        return False
    rest = texts[k + 1:]
    skip, _ = _skip_options("xargs", rest)
    replace = next((w[2:] or "{}" for w in rest[:skip] if w.startswith("-I")), None) or \
        next((w.split("=", 1)[1] for w in rest[:skip] if w.startswith("--replace=")), None)
    program = rest[skip] if skip < len(rest) else ""
    if not program:
        return False  # (echo)
    base = program.rsplit("/", 1)[-1]
    return base in _WRAPPERS or base in _SHELLS or "{}" in program or program.startswith("$") or \
        bool(replace and replace in program)


def analyse(command: str, root: str | None = None, cwd: str | None = None, _depth: int = 0) -> BashLine:
    """How the permission rules see ``command`` (see :mod:`cockpit.runtime.shellwords`). With
    ``root`` (the working tree) and ``cwd`` (the shell's current folder), a relative redirection
    target is resolved — symlinks included — and judged inside or out."""
    if len(command) > MAX_ANALYSED_CHARS:
        crude = _crude_parts(command[:MAX_ANALYSED_CHARS])
        return BashLine(crude or [command[:200]], [command, *crude], False, "a line too long to judge",
                        exhausted=True)
    try:
        lexed = lex(command)
    except ShellSyntax as exc:
        # bash runs the lines before the one it cannot parse: judge each line on its own too
        crude = _crude_parts(command)
        views = [command, *crude]
        if _depth < _MAX_DEPTH:
            for row in command.split("\n"):
                if row.strip() and row != command:
                    views.extend(analyse(row, _depth=_depth + 1).deny_views)
        return BashLine(crude or [command], views, False, str(exc))
    parts: list[str] = []
    quoted: list[str] = []
    why = ", ".join(sorted(lexed.risky))
    moved = False
    for part in simple_commands(lexed):
        words = words_of(part)
        texts = [w.text for w in words]
        parts.append(" ".join(texts))
        quoted.append(shlex.join(texts))
        if not words:
            why = why or "a redirection without a command"
        elif texts[0] in KEYWORDS:
            why = why or f"the shell keyword {texts[0]!r}"
        elif words[0].flags:
            why = why or "a command name bash expands"
        else:
            why = why or _unjudged(texts, part)
        for op, target in redirect_targets(part):
            if op in ("<", "<>", "<&") and ("expansion" in target.flags or "$" in target.text):
                why = why or f"input read from {target.text}, a path bash expands (/dev/tcp/… among them)"
            if ">" not in op and op != "<>":
                continue
            if op in (">&", "<&") and ((target.text.isascii() and target.text.isdigit()) or target.text == "-"):
                continue
            if _escapes(target, root, cwd, moved):
                why = why or f"output redirected to {target.text or '?'}, which may be outside the working tree"
        if texts and texts[0].rsplit("/", 1)[-1] in _MOVES:
            moved = True
    views, exhausted = _views(lexed, _depth)
    return BashLine(parts, views, not why, why, quoted, exhausted)


def split_command(command: str) -> list[str] | None:
    """The simple commands of a shell line (split on ``&& || ; | &`` and newlines, redirections
    left out), or None when the rules cannot judge it (unbalanced quotes, substitution,
    subshells, keywords, expansion in a command name, output redirected out of the tree)."""
    line = analyse(command)
    return line.parts if line.judged else None


# programs that run code the project (or an option) names: a wildcard in a rule for one of them
# never stands for an option word, an assignment or a path out of the tree the user did not write
# (`Bash(python -m pytest *)` is not `pytest --doctest-glob=… /tmp/…`, `npm test --prefix /x`)
RUNNER_PROGRAMS = frozenset({
    "python", "python3", "pytest", "py.test", "npm", "npx", "pnpm", "yarn", "bun", "bunx", "deno", "node", "make",
    "gmake", "cargo", "go", "uv", "uvx", "poetry", "pip", "pip3", "tox", "nox", "rake", "bundle", "mvn", "gradle",
    "gradlew", "dotnet", "jest", "vitest", "mocha", "ruby", "perl", "php", "java", "cmake", "ctest", "just",
    "hatch", "pdm", "pipenv", "composer", "mix", "swift", "rustc", "gcc", "cc", "clang", "tsc", "ts-node", "tsx",
    "phpunit", "rspec", "git",
})


# options that only change what a runner prints or which tests it picks: allowed by a wildcard
_QUIET_OPTIONS = {
    "pytest": {"-q", "-qq", "-v", "-vv", "-x", "-s", "-l", "-ra", "-rA", "-rf", "--lf", "--ff", "--sw", "--co",
               "--collect-only", "--no-header", "--tb=short", "--tb=line", "--tb=no", "--tb=long", "--tb=native",
               "-k", "-m", "--exitfirst", "--quiet", "--verbose", "--last-failed", "--failed-first",
               "--showlocals", "--durations=0", "--durations=10", "-p no:cacheprovider"},
    "go": {"-v", "-race", "-count=1", "-short", "-run"},
    "cargo": {"-q", "--quiet", "-v", "--verbose", "--release", "--all-features", "--workspace", "--lib", "--bins"},
    "npm": {"--silent", "-s", "--quiet", "-q"},
    "make": {"-s", "-k", "-j", "-j2", "-j4", "-j8", "--silent", "--keep-going"},
    # git's options that only change what it prints (never --output, --no-index, --ext-diff, -c …)
    "git": {"--stat", "--shortstat", "--numstat", "--name-only", "--name-status", "--oneline", "--cached",
            "--staged", "-p", "--patch", "--graph", "--decorate", "--all", "--no-color", "--color=never",
            "--summary", "-s", "--short", "--porcelain", "-b", "--branch", "-v", "-vv", "--verbose", "-q",
            "--quiet", "--no-pager", "--reverse", "--first-parent", "--merges", "--no-merges", "-w",
            "--ignore-all-space", "--word-diff", "--minimal", "--patience", "--histogram", "-M", "-C",
            "--abbrev-commit", "--list", "-l", "-a", "-r", "--show-current", "--untracked-files=no"},
}


def _runner_of(words: list[str]) -> str:
    """The runner a command's words start (``python -m pytest`` → ``pytest``), or ``""``."""
    if not words:
        return ""
    first = words[0].rsplit("/", 1)[-1]
    if first.startswith("python") and words[1:2] == ["-m"] and len(words) > 2:
        return words[2]
    return first if first in RUNNER_PROGRAMS else ""


def _is_option_like(runner: str, word: str) -> bool:
    """A word a wildcard must not stand for in a runner's command line (see :func:`_runner_extra_ok`):
    an option, an assignment, a path out of the tree, an argument file (``@args.txt``), or a word
    bash expands into who knows what (``x$IFS--basetemp$IFS/y``, ``$HOME/proj``, globs)."""
    if set(word) & set("$`*?[]{}\\"):
        return True
    if word in _QUIET_OPTIONS.get(runner, ()) or (runner == "git" and re.fullmatch(r"-n?\d+", word)):
        return False
    return word.startswith(("-", "+", "/", "~", "@")) or "=" in word or ".." in word.split("/")


def _runner_extra_ok(spec: str, cmd: str) -> bool:
    """For a runner (:data:`RUNNER_PROGRAMS`): every option word, assignment and path out of the
    tree in ``cmd`` is written in the rule ``spec`` itself."""
    words = cmd.split()
    if not words or words[0].rsplit("/", 1)[-1] not in RUNNER_PROGRAMS:
        return True
    runner = _runner_of(words)
    allowed = set(spec.replace(":*", " ").split())
    start = 3 if runner != words[0].rsplit("/", 1)[-1] else 1  # python -m pytest: -m is the rule's
    return all(w in allowed or not _is_option_like(runner, w) for w in words[start:])


def _one_matches(spec: str, cmd: str) -> bool:
    if spec.endswith(":*"):  # Claude Code's legacy prefix form, on a word boundary
        prefix = spec[:-2]
        return (cmd == prefix or cmd.startswith(prefix + " ")) and _runner_extra_ok(spec, cmd)
    if spec.endswith(" *") and cmd == spec[:-2]:
        return True
    if "*" in spec:
        return fnmatch.fnmatchcase(cmd, spec) and _runner_extra_ok(spec, cmd)
    return cmd == spec


def _path_matches(spec: str | None, path: str) -> bool:
    if spec is None:
        return True
    if spec.startswith("./"):
        spec = spec[2:]
    elif spec.startswith("/"):  # Claude Code's "/x": relative to the project root
        spec = spec[1:]
    if fnmatch.fnmatchcase(path, spec):
        return True
    if spec.endswith("/**"):
        return path == spec[:-3] or path.startswith(spec[:-2])
    return fnmatch.fnmatchcase(path, spec.replace("**/", ""))


def _rule_matches(rule: Rule, action: Action) -> bool:
    """For bash: ``action.target`` is one simple command (see :meth:`PermissionPolicy.check`)."""
    if action.kind == "bash":
        if rule.tool != "Bash":
            return False
        if rule.spec is None:
            return True
        if rule.exact:  # shell-quoted on both sides: `sh -c ls '; x'` is not `sh -c 'ls ; x'`
            return rule.spec == (action.quoted or action.target)
        return _one_matches(rule.spec, action.target)
    if action.kind in ("edit", "create"):
        if rule.tool == "Edit" or (rule.tool == "Write" and action.kind == "create"):
            return _path_matches(rule.spec, action.target)
        return False
    if action.kind == "read":
        return rule.tool == "Read" and _path_matches(rule.spec, action.target)
    return rule.tool == action.kind


_RUNNERS = {"python", "python3", "npm", "npx", "pnpm", "yarn", "uv", "poetry", "cargo", "go", "git", "make",
            "pip", "pip3", "node", "bundle", "docker", "dotnet", "mvn", "gradle", "bun", "deno", "rake"}


def _prefix_rule(part: str, quoted: str) -> Rule:
    """``Bash(<leading words> *)`` for one simple command, or the command exactly (``quoted``,
    shell-quoted) when a prefix would allow more than the user saw: a wrapper or a shell, an
    assignment, a keyword, a runner followed by an option (``git -C . status`` is not
    ``Bash(git *)``), or glob characters in the words the rule would keep (``'e*' x``)."""
    words = part.split()
    exact = Rule("Bash", quoted, exact=True)
    if not words:
        return exact
    first = words[0].rsplit("/", 1)[-1]
    if _ASSIGNMENT.match(words[0]) or first in _WRAPPERS or first in _SHELLS or first == "eval" or first in KEYWORDS:
        return exact  # `Bash(timeout *)` would allow any command: this one only
    take = 1
    if words[:2] in (["python", "-m"], ["python3", "-m"]) and len(words) > 2:
        take = 3
    elif words[0] in _RUNNERS and len(words) > 1:
        if words[1].startswith("-"):
            return exact
        take = 2
    runner = _runner_of(words)
    if runner and any(_is_option_like(runner, w) for w in words[take:]):
        return exact  # a prefix rule would not match this very command (see _runner_extra_ok)
    kept = words[:take]
    if any(set(w) & set("*?[]") for w in kept):
        return exact
    return Rule("Bash", " ".join(kept) + " *")


def session_rules_for(action: Action) -> list[Rule]:
    """The rules "allow for this session" adds for ``action``: all edits (``Edit``),
    ``memory_save``, or for a command one rule per simple command of it — its leading words
    (``Bash(pytest *)``, ``Bash(git diff *)``, ``Bash(python -m pytest *)``), or the command
    exactly when it runs another command (``timeout 60 pytest``, ``env X=1 make``: a prefix rule
    there would allow anything); none for a line rules cannot judge (``python -c …``: no rule
    narrower than ``Bash`` would match it). ``ls -la && cat x.py`` gives ``Bash(ls *)`` and
    ``Bash(cat *)``, so the same line is allowed next time."""
    if action.kind in ("edit", "create"):
        if protected_reason(action.target):
            return [Rule("Edit", action.target)]  # never every protected path at once
        return [Rule("Edit")]
    if action.kind == "bash":
        line = analyse(action.target)
        if not line.judged:  # inline code, a substitution …: only `Bash` (everything) would allow it
            return []
        rules: list[Rule] = []
        pairs = list(zip(line.parts, line.quoted, strict=False)) or [(action.target, action.target)]
        for part, quoted in pairs:
            rule = _prefix_rule(part, quoted)
            if rule not in rules:
                rules.append(rule)
        return rules
    return [Rule(action.kind)]


def session_rule_for(action: Action) -> Rule:
    """The first of :func:`session_rules_for` (what a Claude Code session is offered)."""
    return session_rules_for(action)[0]


def rules_text(rules: list[Rule]) -> str:
    """Rules as a pane shows them: ``Bash(ls *), Bash(cat *)``."""
    return ", ".join(str(r) for r in rules)


# programs that do the same job as a denied one: `Bash(rm *)` also denies `unlink x`, `find -delete`
SAME_JOB = {
    "rm": ("unlink", "shred", "rmdir", "srm", "trash", "trash-put", "gio"),
    "curl": ("wget", "http", "https", "xh", "aria2c", "lynx", "links", "nc", "ncat", "netcat", "socat", "telnet"),
    "wget": ("curl", "http", "https", "xh", "aria2c", "lynx", "links", "nc", "ncat", "netcat", "socat", "telnet"),
    "chmod": ("chown", "chgrp", "setfacl"),
    "dd": ("shred", "truncate"),
}
_BRACE = re.compile(r"\{([^{}\s]*,[^{}\s]*)\}")
_IFS = re.compile(r"\$\{?IFS\}?")


def _expand_braces(text: str, limit: int = 32) -> list[str]:
    """``text`` with bash brace expansion done (``{rm,x}`` → ``rm x``, ``r{m,x}`` → ``rm rx``)."""
    out = [text]
    for _ in range(4):
        nxt = []
        for t in out:
            m = _BRACE.search(t)
            if m is None:
                nxt.append(t)
                continue
            start = t.rfind(" ", 0, m.start()) + 1
            end = t.find(" ", m.end())
            end = len(t) if end < 0 else end
            pre, post = t[start:m.start()], t[m.end():end]
            words = " ".join(pre + alt + post for alt in m.group(1).split(","))
            nxt.append(t[:start] + words + t[end:])
        out = nxt[:limit]
    return out


def deny_spellings(views: list[str], deny: list[Rule]) -> list[str]:
    """Every spelling a deny rule is matched against: each view, brace-expanded, with ``$IFS`` as
    a space, with a glob in the command name standing for each denied name it matches
    (``/bin/r?`` → ``rm``), and with a same-job program or ``find … -delete`` in the denied
    program's place."""
    names = {r.spec.split()[0].rstrip(":*") for r in deny if r.tool == "Bash" and r.spec and r.spec.split()}
    out: list[str] = []
    for view in views:
        for text in _expand_braces(_IFS.sub(" ", view)):
            out.append(text)
            words = text.split()
            if not words:
                continue
            first = words[0].rsplit("/", 1)[-1] if not set(words[0]) & set("*?[") else words[0]
            rest = words[1:]
            for name in names:
                if set(first) & set("*?[") and (fnmatch.fnmatchcase(name, first.rsplit("/", 1)[-1])
                                                 or fnmatch.fnmatchcase("/bin/" + name, first)
                                                 or fnmatch.fnmatchcase("/usr/bin/" + name, first)):
                    out.append(" ".join([name, *rest]))
                if first in SAME_JOB.get(name, ()):
                    out.append(" ".join([name, *rest]))
            if first in ("ln", "cp", "install", "mv", "rsync") and any(w.rsplit("/", 1)[-1] in names for w in rest):
                denied = next(w.rsplit("/", 1)[-1] for w in rest if w.rsplit("/", 1)[-1] in names)
                out.append(" ".join([denied, *rest]))  # a copy of a denied program under another name
            if first == "openssl" and rest[:1] in (["s_client"], ["s_time"]):  # a TLS connection, like curl
                out.extend(" ".join([name, *rest[1:]]) for name in names & {"curl", "wget"})
            if first == "find" and "-delete" in rest and "rm" in names:
                out.append(" ".join(["rm", *rest]))
            if first == "git" and rest[:1] == ["clean"] and "rm" in names:
                out.append(" ".join(["rm", *rest]))
    return list(dict.fromkeys(out))


class PermissionPolicy:
    """Decides allow / ask / deny for one session's actions (see module doc).

    ``allow``/``deny``: rule strings (raise :class:`RuleError` when one is malformed)."""

    def __init__(self, mode: PermissionMode | str = PermissionMode.DEFAULT,
                 allow: list[str] | tuple[str, ...] = (), deny: list[str] | tuple[str, ...] = (),
                 root: str | os.PathLike[str] | None = None, sandboxed: bool = False,
                 hooks_path: str | None = None, protected: tuple[str, ...] = ()):
        self.root = os.fspath(root) if root is not None else None  # the working tree: redirections resolved in it
        self.mode = mode if isinstance(mode, PermissionMode) else PermissionMode.parse(mode)
        if self.mode is PermissionMode.AUTO and not sandboxed:
            raise ValueError("auto mode runs commands without asking only inside the sandbox, and this "
                             "session has none")
        self.sandboxed = sandboxed
        self.hooks_path = hooks_path  # core.hooksPath, relative to the tree: protected too
        self.protected = tuple(protected)  # [sandbox] protected globs
        self.allow = [Rule.parse_allow(r) for r in allow]
        self.deny = [Rule.parse(r) for r in deny]
        self.session_allow: list[Rule] = []

    def add_session_rule(self, rule: Rule) -> None:
        if rule not in self.session_allow:
            self.session_allow.append(rule)

    def check(self, action: Action) -> Decision:
        parts = [action]
        line: BashLine | None = None
        if action.kind == "bash":
            line = analyse(action.target, self.root, action.cwd or None)
            # a deny rule matches any spelling of any part (the parts, under their wrappers, the
            # scripts of bash -c / eval); an allow rule narrower than Bash must cover every part
            # of a line the rules can judge
            parts = [Action("bash", p, quoted=q) for p, q in zip(line.parts, line.quoted or line.parts, strict=False)]
            views = [Action("bash", v) for v in deny_spellings(line.deny_views, self.deny)]
            for rule in self.deny:
                if any(_rule_matches(rule, v) for v in views):
                    return Decision("deny", f"denied by the permission rule {rule} in the user's config")
            if self.deny and line.exhausted and self.mode is not PermissionMode.PLAN:
                # eval eval … ×64, or scripts in scripts ten deep: what it runs is not known, so the
                # deny rules cannot be said to hold — the user decides (headless: denied)
                return Decision("ask", "nested too deeply to check against the deny rules")
            if self.deny and not line.judged and self.mode is not PermissionMode.PLAN:
                # a deny rule always wins, so a line it cannot be checked against asks in every mode
                return Decision("ask", f"a deny rule exists and this line cannot be checked against it "
                                       f"({line.why})")
        else:
            for rule in self.deny:
                if _rule_matches(rule, action):
                    return Decision("deny", f"denied by the permission rule {rule} in the user's config")
        if action.kind in ("read", "memory_search"):
            return Decision("allow")
        if self.mode is PermissionMode.PLAN:
            return Decision("deny", "plan mode is read-only: view files and search notes, then propose "
                                    "a plan in your answer; do not edit files or run commands")
        if action.kind in ("edit", "create"):
            why = protected_reason(action.target, self.hooks_path, self.protected)
            if why:  # asks in every mode, unless a rule names this path
                named = [r for r in self.allow + self.session_allow if r.tool in ("Edit", "Write") and r.spec]
                if any(_rule_matches(r, action) for r in named):
                    return Decision("allow", "allowed by the permission rules", by_rule=True)
                return Decision("ask", f"protected path: {why}")
        if self.mode is PermissionMode.BYPASS:
            return Decision("allow")
        if self.mode is PermissionMode.AUTO and action.kind in ("bash", "edit", "create"):
            return Decision("allow", "inside the sandbox")
        rules = self.allow + self.session_allow
        if line is not None and not line.judged:
            rules = [r for r in rules if r.tool == "Bash" and r.spec is None]
        if rules and all(any(_rule_matches(r, part) for r in rules) for part in parts):
            return Decision("allow", "allowed by the permission rules", by_rule=True)
        if action.kind in ("edit", "create") and self.mode is PermissionMode.ACCEPT_EDITS:
            return Decision("allow")
        if action.kind == "memory_save":
            return Decision("ask", "memory_save writes a note into the notes folder, outside the working tree, "
                                   "and every later session's first message can carry it")
        return Decision("ask")
