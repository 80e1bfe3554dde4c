"""Bash command lines as the permission rules see them: simple commands, their words, and what
makes a line too clever to judge.

This is a lexer, not a shell: it reads quoting the way bash does (``'…'``, ``"…"``, ``$'…'``
with its escapes decoded, backslashes, ``#`` comments at the start of a word, newlines as
separators, here-document bodies skipped) so that what a rule matches is what bash will run,
and it *flags* every construct whose effect it does not model — command or process
substitution, subshells and function definitions (``(`` ``)``), brace groups, ANSI-C and locale
quoting, here-documents, parameter expansion beyond a plain ``$name`` / ``${name}`` (``${a[$(…)]}``,
``${x:-…}``, ``${!x}``, ``${x@P}`` can run code), ``$[…]``, compound-command keywords (``if``,
``for``, ``case``, ``function`` …), expansion or globbing in a command name or a redirection
target. A flagged line is never allowed by a rule narrower than ``Bash``: it asks.

``Word.text`` is the word after quote removal; ``Word.flags`` what it contained unquoted
(``$`` expansion, glob characters, braces, ``~``). ``Lexed.scripts`` holds the code a line runs
beyond its own words — the bodies of ``$(…)``, backticks and ``<(…)``, and the substitutions in
an unquoted here-document — for deny rules to look into. Unterminated quotes or substitutions
raise :class:`ShellSyntax` (bash would refuse the line too — after running the lines before it).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

# operators, longest first (bash's control and redirection operators)
_OPERATORS = ("&>>", ";;&", "<<<", ">>&", "<<-", "&&", "||", "|&", ";;", ";&", ">>", "<<", "<>", ">&", "<&", "&>",
              ">|", ";", "&", "|", "(", ")", "<", ">")
SEPARATORS = frozenset({"&&", "||", "|&", ";;", ";;&", ";&", ";", "&", "|", "\n"})
REDIRECTS = frozenset({">", ">>", "<", "<<", "<<-", "<<<", "<>", ">&", "<&", "&>", "&>>", ">|", ">>&"})
KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
                      "select", "function", "coproc", "time", "{", "}", "!", "[[", "]]", "in"})
_GLOB = frozenset("*?[")
_PLAIN_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!-]")


class ShellSyntax(ValueError):
    """The line cannot be lexed (an unterminated quote or substitution)."""


@dataclass
class Word:
    text: str
    flags: set[str] = field(default_factory=set)  # "expansion", "glob", "brace", "tilde"


@dataclass
class Lexed:
    """``tokens``: words and operators in order (operators as ``str``, a newline as "\\n").
    ``risky``: constructs the rules do not model (see module doc), e.g. {"substitution"}.
    ``scripts``: code the line runs besides its words (substitution bodies)."""

    tokens: list[Word | str]
    risky: set[str]
    scripts: list[str] = field(default_factory=list)


def _quote_end(line: str, i: int) -> int:
    """Index of the ``'`` closing the single quote that opens at ``line[i]``."""
    j = line.find("'", i + 1)
    if j < 0:
        raise ShellSyntax("unterminated single quote")
    return j


def _matching(line: str, i: int, open_: str, close: str) -> int:
    """Index of the ``close`` that ends the group opened just before ``i`` (quotes, escapes and
    nested groups skipped). Raises ShellSyntax when there is none."""
    depth, n = 1, len(line)
    while i < n:
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            i = _quote_end(line, i) + 1
            continue
        if c == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            if j >= n:
                raise ShellSyntax("unterminated double quote")
            i = j + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ShellSyntax(f"unterminated {open_}…{close}")


def _backtick_end(line: str, i: int) -> int:
    n = len(line)
    while i < n:
        if line[i] == "\\":
            i += 2
            continue
        if line[i] == "`":
            return i
        i += 1
    raise ShellSyntax("unterminated backquote")


def _ansi_c(body: str) -> str:
    """The text of ``$'…'`` (``\\x72``, ``\\162``, ``\\n``, ``\\u0072`` decoded, as bash does)."""
    try:
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeError, ValueError):
        return body


def substitutions(text: str) -> list[str]:
    """The bodies of ``$(…)`` and backticks in ``text`` (an unquoted here-document's body, where
    they run), best effort."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$(", i):
            try:
                j = _matching(text, i + 2, "(", ")")
            except ShellSyntax:
                return out
            out.append(text[i + 2:j])
            i = j + 1
        elif text[i] == "`":
            try:
                j = _backtick_end(text, i + 1)
            except ShellSyntax:
                return out
            out.append(text[i + 1:j])
            i = j + 1
        else:
            i += 2 if text[i] == "\\" else 1
    return out


def lex(line: str) -> Lexed:
    """Words and operators of a bash line. Raises :class:`ShellSyntax` on unterminated quotes."""
    tokens: list[Word | str] = []
    risky: set[str] = set()
    scripts: list[str] = []
    buf: list[str] = []
    flags: set[str] = set()
    in_word = False
    heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, quoted) waiting for a newline
    i, n = 0, len(line)

    def end_word() -> None:
        nonlocal buf, flags, in_word
        if in_word:
            word = Word("".join(buf), flags)
            if tokens and tokens[-1] in ("<<", "<<-"):  # a here-document's delimiter
                quoted = word.text != raw_since(word_start)
                heredocs.append((word.text, tokens[-1] == "<<-", quoted))
            tokens.append(word)
        buf, flags, in_word = [], set(), False

    word_start = 0

    def raw_since(start: int) -> str:
        return line[start:i]

    def substituted(start: int, body: int, end: int) -> int:
        """A substitution ``line[start:end + 1]`` whose code is ``line[body:end]``: into the word
        (as an expansion) and into ``scripts``; returns the index after it."""
        risky.add("substitution")
        scripts.append(line[body:end])
        buf.append(line[start:end + 1])
        flags.add("expansion")
        return end + 1

    def dollar(j: int) -> int:
        """Read an expansion starting at ``line[j] == "$"`` into the word; returns the next index."""
        if line.startswith("$(", j):
            if line.startswith("$((", j):
                risky.add("arithmetic expansion")
            return substituted(j, j + 2, _matching(line, j + 2, "(", ")"))
        if line.startswith("${", j):
            end = _matching(line, j + 2, "{", "}")
            inner = line[j + 2:end]
            if not _PLAIN_PARAM.fullmatch(inner):
                risky.add("parameter expansion")  # ${a[$(…)]}, ${x:-…}, ${!x}, ${x@P} can run code
                scripts.extend(substitutions(inner))
            buf.append(line[j:end + 1])
            flags.add("expansion")
            return end + 1
        if line.startswith("$[", j):
            end = _matching(line, j + 2, "[", "]")
            risky.add("arithmetic expansion")
            buf.append(line[j:end + 1])
            flags.add("expansion")
            return end + 1
        if line.startswith("$$", j):
            buf.append("$$")
            flags.add("expansion")
            return j + 2
        buf.append("$")
        if j + 1 < n and (line[j + 1].isalnum() or line[j + 1] in "_@*#?!-"):
            flags.add("expansion")
        return j + 1

    while i < n:
        c = line[i]
        if not in_word:
            word_start = i
        if c == "\\":
            if i + 1 < n and line[i + 1] == "\n":  # line continuation
                i += 2
                continue
            buf.append(line[i + 1] if i + 1 < n else "")
            in_word = True
            i += 2
            continue
        if c == "'":
            j = _quote_end(line, i)
            buf.append(line[i + 1:j])
            in_word = True
            i = j + 1
            continue
        if c == "$" and i + 1 < n and line[i + 1] == "'":
            risky.add("ansi-c quoting")
            j = i + 2
            while j < n and line[j] != "'":
                j += 2 if line[j] == "\\" else 1
            if j >= n:
                raise ShellSyntax("unterminated $'…' quote")
            buf.append(_ansi_c(line[i + 2:j]))
            in_word = True
            i = j + 1
            continue
        if c == "$" and i + 1 < n and line[i + 1] == '"':
            risky.add("locale quoting")
            i += 1
            continue
        if c == '"':
            j = i + 1
            while j < n and line[j] != '"':
                if line[j] == "\\" and j + 1 < n:
                    if line[j + 1] in '$`"\\\n':
                        buf.append(line[j + 1] if line[j + 1] != "\n" else "")
                    else:
                        buf.append(line[j:j + 2])
                    j += 2
                    continue
                if line[j] == "`":
                    j = substituted(j, j + 1, _backtick_end(line, j + 1))
                    continue
                if line[j] == "$":
                    j = dollar(j)
                    continue
                buf.append(line[j])
                j += 1
            if j >= n:
                raise ShellSyntax("unterminated double quote")
            in_word = True
            i = j + 1
            continue
        if c == "#" and not in_word:  # a comment, to the end of the line (the next line still counts)
            j = line.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "\n":
            end_word()
            tokens.append("\n")
            i += 1
            for delim, strip_tabs, quoted in heredocs:  # the bodies follow this newline: not shell code
                risky.add("here-document")
                body: list[str] = []
                while i < n:
                    j = line.find("\n", i)
                    row = line[i:] if j < 0 else line[i:j]
                    i = n if j < 0 else j + 1
                    if (row.lstrip("\t") if strip_tabs else row) == delim:
                        break
                    body.append(row)
                if not quoted:  # its $(…) and backticks run
                    scripts.extend(substitutions("\n".join(body)))
            heredocs.clear()
            continue
        if c in " \t":
            end_word()
            i += 1
            continue
        if c == "`":
            i = substituted(i, i + 1, _backtick_end(line, i + 1))
            in_word = True
            continue
        if c == "$":
            i = dollar(i)
            in_word = True
            continue
        if c in "<>" and line.startswith("(", i + 1):  # process substitution: a word (a file name)
            i = substituted(i, i + 2, _matching(line, i + 2, "(", ")"))
            in_word = True
            continue
        op = next((o for o in _OPERATORS if line.startswith(o, i)), None)
        if op is not None:
            if op in ("(", ")"):
                risky.add("subshell or function")
            if in_word and op in REDIRECTS and not flags and "".join(buf).isascii() and "".join(buf).isdigit():
                buf, in_word = [], False  # "2>": the fd of the redirection, not a word
            end_word()
            tokens.append(op)
            i += len(op)
            continue
        if c in _GLOB:
            flags.add("glob")
        elif c in "{}":
            flags.add("brace")
        elif c == "~":
            flags.add("tilde")  # x=~/y and a:~ are expanded too, not only a leading ~
        buf.append(c)
        in_word = True
        i += 1
    end_word()
    if heredocs:  # a here-document with no newline after its operator: its body is missing
        risky.add("here-document")
    return Lexed(tokens, risky, scripts)


def simple_commands(lexed: Lexed) -> list[list[Word | str]]:
    """The tokens of each simple command (split on ``; & && || | |&`` and newlines), empty ones
    dropped. Redirection operators stay in place, followed by their target word."""
    parts: list[list[Word | str]] = [[]]
    for tok in lexed.tokens:
        if isinstance(tok, str) and tok in SEPARATORS:
            parts.append([])
        else:
            parts[-1].append(tok)
    return [p for p in parts if p]


def command_groups(lexed: Lexed) -> list[list[Word]]:
    """The words of every command bash may run, for deny rules: as :func:`simple_commands`, also
    split at ``(`` ``)`` (subshells, function bodies, ``case`` patterns) and without the braces
    of a group or a function body; redirections left out."""
    groups: list[list[Word]] = [[]]
    skip = False
    for tok in lexed.tokens:
        if skip:
            skip = False
            continue
        if isinstance(tok, str):
            if tok in SEPARATORS or tok in ("(", ")"):
                groups.append([])
            skip = tok in REDIRECTS
            continue
        if tok.text in ("{", "}") and not tok.flags - {"brace"}:
            groups.append([])
            continue
        groups[-1].append(tok)
    return [g for g in groups if g]


def words_of(part: list[Word | str]) -> list[Word]:
    """The words of a simple command without its redirections (operator and target)."""
    out: list[Word] = []
    skip = False
    for tok in part:
        if skip:
            skip = False
            continue
        if isinstance(tok, str):
            skip = tok in REDIRECTS
            continue
        out.append(tok)
    return out


def redirect_targets(part: list[Word | str]) -> list[tuple[str, Word]]:
    """``(operator, target)`` of each redirection in a simple command (a missing target is an
    empty word). An fd number glued before the operator (``2>``) is a word bash reads as the fd:
    harmless here."""
    out: list[tuple[str, Word]] = []
    for k, tok in enumerate(part):
        if isinstance(tok, str) and tok in REDIRECTS:
            nxt = part[k + 1] if k + 1 < len(part) else None
            out.append((tok, nxt if isinstance(nxt, Word) else Word("")))
    return out


__all__ = ["KEYWORDS", "REDIRECTS", "SEPARATORS", "Lexed", "ShellSyntax", "Word", "command_groups", "lex",
           "redirect_targets", "simple_commands", "substitutions", "words_of"]
