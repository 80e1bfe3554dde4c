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
"allow for this session"), then the mode's default. A compound command (``a && b``, ``a | b``,
``a; b``, a second line) is allowed by rules only when every part is; one with command
substitution (``$(…)``, backticks) or an output redirection out of the working tree
(``> /etc/x``, ``>> ~/.bashrc``, ``> ../x``, ``> $HOME/x``) is never allowed by a rule narrower
than ``Bash``. ``#`` never hides a following line from this check. A path is judged as it
resolves: ``./.env``, an absolute path or a symlink meet ``Read(.env)``.
"""

from __future__ import annotations

import enum
import fnmatch
import re
import shlex
from dataclasses import dataclass


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


@dataclass(frozen=True)
class Decision:
    """``verdict``: allow | ask | deny; ``reason`` says why (shown to the model when denied)."""

    verdict: str
    reason: str = ""


_SUBST = re.compile(r"\$\(|`|<\(|>\(")
_SEPARATORS = set(";&|")
# redirection operators that contain '&' or '|' but separate nothing
_REDIRECT_OPS = {">", ">>", "<", "<<", "<<<", "<>", ">&", "<&", "&>", "&>>", ">|", ">>&"}
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr"}


def _simple_commands(command: str) -> list[list[str]] | None:
    """The words of each simple command of a shell line, or None when it cannot be analysed."""
    if _SUBST.search(command):
        return None
    try:
        # '#' is an ordinary character here: as a comment it would hide what follows a newline
        lex = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|<>")
        lex.commenters = ""
        lex.whitespace_split = True
        tokens = list(lex)
    except ValueError:
        return None
    parts: list[list[str]] = [[]]
    for tok in tokens:
        if tok and set(tok) <= _SEPARATORS:
            parts.append([])
        elif tok and set(tok) <= _SEPARATORS | set("<>") and tok not in _REDIRECT_OPS:
            return None  # e.g. '&&>' or '>;': operators glued together, not analysed
        else:
            parts[-1].append(tok)
    return [p for p in parts if p]


def split_command(command: str) -> list[str] | None:
    """The simple commands of a shell line (split on ``&& || ; | &`` and newlines), or None when
    it cannot be analysed (unbalanced quotes, command substitution, glued operators)."""
    parts = _simple_commands(command)
    return None if parts is None else [" ".join(p) for p in parts]


def writes_outside(words: list[str]) -> bool:
    """True when a simple command redirects output to a path outside the working tree
    (absolute, ``~``, ``..`` or a variable; ``/dev/null`` and friends excepted)."""
    for op, target in zip(words, words[1:], strict=False):
        if op in _REDIRECT_OPS and ">" in op and not target.isdigit():
            if target in _HARMLESS_TARGETS:
                continue
            if target.startswith(("/", "~")) or ".." in target.split("/") or "$" in target:
                return True  # a variable ($HOME/x) can name any place
    return False


def _one_matches(spec: str, cmd: str) -> bool:
    if spec.endswith(":*"):
        prefix = spec[:-2]
        return cmd == prefix or cmd.startswith(prefix + " ") or cmd.startswith(prefix)
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
        return rule.tool == "Bash" and (rule.spec is None or _one_matches(rule.spec, action.target))
    if action.kind in ("edit", "create"):
        if rule.tool == "Edit" or (rule.tool == "Write" and action.kind == "create"):
            return _path_matches(rule.spec, action.target)
        return False
    if action.kind == "read":
        return rule.tool == "Read" and _path_matches(rule.spec, action.target)
    return rule.tool == action.kind


_RUNNERS = {"python", "python3", "npm", "npx", "pnpm", "yarn", "uv", "poetry", "cargo", "go", "git", "make",
            "pip", "pip3", "node", "bundle", "docker", "dotnet", "mvn", "gradle", "bun", "deno", "rake"}


def session_rule_for(action: Action) -> Rule:
    """The rule "allow for this session" adds for ``action``: all edits, ``memory_save``, or
    the command's leading words (``Bash(pytest *)``, ``Bash(git diff *)``, ``Bash(python -m pytest *)``)."""
    if action.kind in ("edit", "create"):
        return Rule("Edit")
    if action.kind == "bash":
        parts = split_command(action.target) or [action.target]
        words = parts[0].split()
        take = 1
        if words and words[0] in _RUNNERS and len(words) > 1 and not words[1].startswith("-"):
            take = 2
        if words[:2] in (["python", "-m"], ["python3", "-m"]) and len(words) > 2:
            take = 3
        return Rule("Bash", " ".join(words[:take]) + " *" if words else None)
    return Rule(action.kind)


class PermissionPolicy:
    """Decides allow / ask / deny for one session's actions (see module doc).

    ``allow``/``deny``: rule strings (raise :class:`RuleError` when one is malformed)."""

    def __init__(self, mode: PermissionMode | str = PermissionMode.DEFAULT,
                 allow: list[str] | tuple[str, ...] = (), deny: list[str] | tuple[str, ...] = ()):
        self.mode = mode if isinstance(mode, PermissionMode) else PermissionMode.parse(mode)
        self.allow = [Rule.parse_allow(r) for r in allow]
        self.deny = [Rule.parse(r) for r in deny]
        self.session_allow: list[Rule] = []

    def add_session_rule(self, rule: Rule) -> None:
        if rule not in self.session_allow:
            self.session_allow.append(rule)

    def check(self, action: Action) -> Decision:
        parts = [action]
        if action.kind == "bash":
            simple = split_command(action.target)
            # a deny rule matches any part (or the raw line when it cannot be split); an allow
            # rule must cover every part, and a line that cannot be split is never rule-allowed
            parts = [Action("bash", p) for p in (simple or [action.target])]
        for rule in self.deny:
            if any(_rule_matches(rule, part) for part in parts):
                return Decision("deny", f"denied by the permission rule {rule} in the user's config")
        if action.kind in ("read", "memory_search"):
            return Decision("allow")
        if self.mode is PermissionMode.PLAN:
            return Decision("deny", "plan mode is read-only: view files and search notes, then propose "
                                    "a plan in your answer; do not edit files or run commands")
        if self.mode is PermissionMode.BYPASS:
            return Decision("allow")
        rules = self.allow + self.session_allow
        if action.kind == "bash":
            words = _simple_commands(action.target)
            if words is None or any(writes_outside(w) for w in words):
                rules = [r for r in rules if r.tool == "Bash" and r.spec is None]
        if rules and all(any(_rule_matches(r, part) for r in rules) for part in parts):
            return Decision("allow", "allowed by the permission rules")
        if action.kind in ("edit", "create", "memory_save") and self.mode is PermissionMode.ACCEPT_EDITS:
            return Decision("allow")
        return Decision("ask")
