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
line, or one whose symlinks lead out, resolved from the shell's current folder). ``Bash(x:*)``
is a word prefix (``git diff:*`` never matches ``git difftool``). A deny rule is matched against
every part, the part under its wrappers (``timeout 5 rm``, ``env X=1 rm``, ``sudo rm``, ``xargs
rm``, ``for …; do rm``) and the scripts of ``bash -c`` / ``eval``. "Allow for this session" adds
one rule per part (``Bash(ls *)``, ``Bash(cat *)``), and for a command that runs another
(``timeout 60 pytest``, ``PYTHONPATH=src pytest``, ``bash -c …``) that exact command only. A
path is judged as it resolves: ``./.env``, an absolute path or a symlink meet ``Read(.env)``.
"""

from __future__ import annotations

import enum
import fnmatch
import os
import re
from dataclasses import dataclass

from cockpit.runtime.shellwords import KEYWORDS, ShellSyntax, Word, lex, redirect_targets, simple_commands, words_of


class PermissionMode(enum.StrEnum):
    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    BYPASS = "bypassPermissions"

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
        }[self.value]


class RuleError(ValueError):
    """A rule string that cannot be parsed (message names it)."""


_TOOL_ALIASES = {
    "bash": "Bash", "edit": "Edit", "multiedit": "Edit", "write": "Write", "read": "Read",
    "memory_save": "memory_save", "mcp__cockpit__memory_save": "memory_save",
    "memory_search": "memory_search", "mcp__cockpit__memory_search": "memory_search",
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


@dataclass(frozen=True)
class Decision:
    """``verdict``: allow | ask | deny; ``reason`` says why (shown to the model when denied)."""

    verdict: str
    reason: str = ""


_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}
_MOVES = {"cd", "pushd", "popd"}
# commands that run the rest of their words as a command (after options): what a deny rule must
# see through (`timeout 5 rm -rf x`, `env X=1 rm x`, `sudo rm x`, `xargs rm`), and what "allow
# for this session" must not turn into a prefix rule (`Bash(timeout *)` would allow anything)
_WRAPPERS = {"command", "builtin", "exec", "nohup", "sudo", "doas", "env", "nice", "timeout", "xargs", "stdbuf",
             "ionice", "chrt", "taskset", "strace", "ltrace", "setsid", "flock", "unbuffer", "time", "watch",
             "chroot", "runuser", "su", "nsenter", "unshare", "firejail"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "busybox"}
_OPT_VALUE = {  # options that take the next word as their value
    "timeout": {"-s", "--signal", "-k", "--kill-after"}, "nice": {"-n", "--adjustment"},
    "xargs": {"-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a", "--max-args", "--max-procs", "--delimiter"},
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}, "env": {"-u", "--unset", "-C", "--chdir"},
    "ionice": {"-c", "-n", "-p"}, "su": {"-c", "-s", "-g"}, "runuser": {"-u", "-g", "-c"}, "watch": {"-n", "-d"},
}
_POSITIONAL = {"timeout": 1, "chrt": 1, "taskset": 1, "flock": 1, "chroot": 1}  # words before the command
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")


def _unwrap(words: list[str]) -> tuple[list[str], str | None] | None:
    """``words`` with one leading wrapper (an assignment, a keyword, ``timeout 5``, ``env X=1``,
    ``sudo -u x`` …) taken off, and the script when it was ``bash -c SCRIPT`` / ``eval …``;
    None when the first word wraps nothing."""
    if not words:
        return None
    first, rest = words[0], words[1:]
    if _ASSIGNMENT.match(first):
        return rest, None
    if first in KEYWORDS:
        return rest, None
    name = first.rsplit("/", 1)[-1]
    if name == "eval":
        return [], " ".join(rest)
    if name in _SHELLS:
        for k, w in enumerate(rest):
            if w == "-c" or (w.startswith("-") and not w.startswith("--") and "c" in w[1:]):
                return [], rest[k + 1] if k + 1 < len(rest) else ""
            if not w.startswith("-"):
                break
        return None
    if name not in _WRAPPERS:
        return None
    k, takes = 0, _OPT_VALUE.get(name, set())
    while k < len(rest) and rest[k].startswith("-") and rest[k] != "--":
        k += 2 if rest[k] in takes else 1
    if k < len(rest) and rest[k] == "--":
        k += 1
    if name == "env":
        while k < len(rest) and _ASSIGNMENT.match(rest[k]):
            k += 1
    return rest[k + _POSITIONAL.get(name, 0):], None


@dataclass
class BashLine:
    """A command line as the rules judge it (see :func:`analyse`). ``parts``: each simple
    command's words, joined; ``deny_views``: every spelling a deny rule is matched against (the
    parts, the parts with wrappers taken off, the scripts of ``bash -c`` / ``eval``);
    ``judged``: rules narrower than ``Bash`` may allow it; ``why``: why not, when not."""

    parts: list[str]
    deny_views: list[str]
    judged: bool
    why: str = ""


def _crude_parts(line: str) -> list[str]:
    return [p.strip() for p in re.split(r"[;&|\n()`{}]+|\$\(", line) if p.strip()]


def _escapes(target: Word, root: str | None, cwd: str | None, moved: bool) -> bool:
    """True when writing to ``target`` may land outside the working tree ``root``."""
    text = target.text
    if text in _HARMLESS_TARGETS:
        return False
    if target.flags or not text:
        return True  # $HOME/x, {a,b}, *.txt, ~/x: bash decides where
    if text.startswith("/") or ".." in text.split("/"):
        return True
    if moved:
        return True  # after a cd in the same line a relative path can mean anything
    if root is None:
        return False
    base = os.path.realpath(root)
    where = os.path.realpath(os.path.join(cwd or root, text))  # symlinks resolved
    return not (where == base or where.startswith(base.rstrip("/") + "/"))


def analyse(command: str, root: str | None = None, cwd: str | None = None, _depth: int = 0) -> BashLine:
    """How the permission rules see ``command`` (see :mod:`cockpit.runtime.shellwords`). With
    ``root`` (the working tree) and ``cwd`` (the shell's current folder), a relative redirection
    target is resolved — symlinks included — and judged inside or out."""
    try:
        lexed = lex(command)
    except ShellSyntax as exc:
        crude = _crude_parts(command)
        return BashLine(crude or [command], [command, *crude], False, str(exc))
    parts: list[str] = []
    views: list[str] = []
    why = ", ".join(sorted(lexed.risky))
    moved = False
    for part in simple_commands(lexed):
        words = words_of(part)
        texts = [w.text for w in words]
        parts.append(" ".join(texts))
        views.append(parts[-1])
        if not words:
            why = why or "a redirection without a command"
        elif texts[0] in KEYWORDS:
            why = why or f"the shell keyword {texts[0]!r}"
        elif words[0].flags:
            why = why or "a command name bash expands"
        for op, target in redirect_targets(part):
            if ">" not in op and op != "<>":
                continue
            if op in (">&", "<&") and (target.text.isdigit() or target.text == "-"):
                continue
            if _escapes(target, root, cwd, moved):
                why = why or f"output redirected to {target.text or '?'}, which may be outside the working tree"
        if texts and texts[0] in _MOVES:
            moved = True
        seen, todo = 0, [texts]
        while todo and seen < 8:  # the command under its wrappers, and scripts run by a shell
            seen += 1
            un = _unwrap(todo.pop())
            if un is None:
                continue
            rest, script = un
            if rest:
                views.append(" ".join(rest))
                todo.append(rest)
            if script is not None and _depth < 3:
                views.extend(analyse(script, _depth=_depth + 1).deny_views)
    return BashLine(parts, views, not why, why)


def split_command(command: str) -> list[str] | None:
    """The simple commands of a shell line (split on ``&& || ; | &`` and newlines, redirections
    left out), or None when the rules cannot judge it (unbalanced quotes, substitution,
    subshells, keywords, expansion in a command name, output redirected out of the tree)."""
    line = analyse(command)
    return line.parts if line.judged else None


def _one_matches(spec: str, cmd: str, exact: bool = False) -> bool:
    if exact:
        return cmd == spec
    if spec.endswith(":*"):  # Claude Code's legacy prefix form, on a word boundary
        prefix = spec[:-2]
        return cmd == prefix or cmd.startswith(prefix + " ")
    if spec.endswith(" *") and cmd == spec[:-2]:
        return True
    if "*" in spec:
        return fnmatch.fnmatchcase(cmd, spec)
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
        return rule.tool == "Bash" and (rule.spec is None or _one_matches(rule.spec, action.target, rule.exact))
    if action.kind in ("edit", "create"):
        if rule.tool == "Edit" or (rule.tool == "Write" and action.kind == "create"):
            return _path_matches(rule.spec, action.target)
        return False
    if action.kind == "read":
        return rule.tool == "Read" and _path_matches(rule.spec, action.target)
    return rule.tool == action.kind


_RUNNERS = {"python", "python3", "npm", "npx", "pnpm", "yarn", "uv", "poetry", "cargo", "go", "git", "make",
            "pip", "pip3", "node", "bundle", "docker", "dotnet", "mvn", "gradle", "bun", "deno", "rake"}


def _prefix_rule(part: str) -> Rule:
    words = part.split()
    if not words:
        return Rule("Bash", part, exact=True)
    first = words[0].rsplit("/", 1)[-1]
    if _ASSIGNMENT.match(words[0]) or first in _WRAPPERS or first in _SHELLS or first == "eval" or first in KEYWORDS:
        return Rule("Bash", part, exact=True)  # `Bash(timeout *)` would allow any command: this one only
    take = 1
    if words[0] in _RUNNERS and len(words) > 1 and not words[1].startswith("-"):
        take = 2
    if words[:2] in (["python", "-m"], ["python3", "-m"]) and len(words) > 2:
        take = 3
    return Rule("Bash", " ".join(words[:take]) + " *")


def session_rules_for(action: Action) -> list[Rule]:
    """The rules "allow for this session" adds for ``action``: all edits (``Edit``),
    ``memory_save``, or for a command one rule per simple command of it — its leading words
    (``Bash(pytest *)``, ``Bash(git diff *)``, ``Bash(python -m pytest *)``), or the command
    exactly when it runs another command (``timeout 60 pytest``, ``env X=1 make``, ``bash -c …``:
    a prefix rule there would allow anything). ``ls -la && cat x.py`` gives ``Bash(ls *)`` and
    ``Bash(cat *)``, so the same line is allowed next time."""
    if action.kind in ("edit", "create"):
        return [Rule("Edit")]
    if action.kind == "bash":
        line = analyse(action.target)
        rules: list[Rule] = []
        for part in line.parts or [action.target]:
            rule = _prefix_rule(part)
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


class PermissionPolicy:
    """Decides allow / ask / deny for one session's actions (see module doc).

    ``allow``/``deny``: rule strings (raise :class:`RuleError` when one is malformed)."""

    def __init__(self, mode: PermissionMode | str = PermissionMode.DEFAULT,
                 allow: list[str] | tuple[str, ...] = (), deny: list[str] | tuple[str, ...] = (),
                 root: str | os.PathLike[str] | None = None):
        self.root = os.fspath(root) if root is not None else None  # the working tree: redirections resolved in it
        self.mode = mode if isinstance(mode, PermissionMode) else PermissionMode.parse(mode)
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
            parts = [Action("bash", p) for p in line.parts]
            views = [Action("bash", v) for v in line.deny_views]
            for rule in self.deny:
                if any(_rule_matches(rule, v) for v in views):
                    return Decision("deny", f"denied by the permission rule {rule} in the user's config")
        else:
            for rule in self.deny:
                if _rule_matches(rule, action):
                    return Decision("deny", f"denied by the permission rule {rule} in the user's config")
        if action.kind in ("read", "memory_search"):
            return Decision("allow")
        if self.mode is PermissionMode.PLAN:
            return Decision("deny", "plan mode is read-only: view files and search notes, then propose "
                                    "a plan in your answer; do not edit files or run commands")
        if self.mode is PermissionMode.BYPASS:
            return Decision("allow")
        rules = self.allow + self.session_allow
        if line is not None and not line.judged:
            rules = [r for r in rules if r.tool == "Bash" and r.spec is None]
        if rules and all(any(_rule_matches(r, part) for r in rules) for part in parts):
            return Decision("allow", "allowed by the permission rules")
        if action.kind in ("edit", "create", "memory_save") and self.mode is PermissionMode.ACCEPT_EDITS:
            return Decision("allow")
        return Decision("ask")
