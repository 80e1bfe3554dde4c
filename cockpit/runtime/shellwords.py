"""Bash command lines as the permission rules see them: simple commands, their words, and what
makes a line too clever to judge.

This is a lexer, not a shell: it reads quoting the way bash does (``'…'``, ``"…"``, ``$'…'``,
backslashes, ``#`` comments at the start of a word, newlines as separators) so that what a rule
matches is what bash will run, and it *flags* every construct whose effect it does not model —
command or process substitution, subshells and function definitions (``(`` ``)``), brace groups
and brace expansion, ANSI-C and locale quoting, compound-command keywords (``if``, ``for``,
``while``, ``case``, ``function`` …), parameter expansion or globbing in a command name or a
redirection target. A flagged line is never allowed by a rule narrower than ``Bash``: it asks.

``Word.text`` is the word after quote removal; ``Word.flags`` what it contained unquoted
(``$`` expansion, glob characters, braces, a leading ``~``). Unterminated quotes raise
:class:`ShellSyntax` (bash would refuse the line too).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# operators, longest first (bash's control and redirection operators)
_OPERATORS = ("&>>", ";;&", "<<<", ">>&", "&&", "||", "|&", ";;", ";&", ">>", "<<", "<>", ">&", "<&", "&>", ">|",
              ";", "&", "|", "(", ")", "<", ">")
SEPARATORS = frozenset({"&&", "||", "|&", ";;", ";;&", ";&", ";", "&", "|", "\n"})
REDIRECTS = frozenset({">", ">>", "<", "<<", "<<<", "<>", ">&", "<&", "&>", "&>>", ">|", ">>&"})
KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
                      "select", "function", "coproc", "time", "{", "}", "!", "[[", "]]", "in"})
_GLOB = frozenset("*?[")


class ShellSyntax(ValueError):
    """The line cannot be lexed (an unterminated quote)."""


@dataclass
class Word:
    text: str
    flags: set[str] = field(default_factory=set)  # "expansion", "glob", "brace", "tilde"


@dataclass
class Lexed:
    """``tokens``: words and operators in order (operators as ``str``, a newline as "\\n").
    ``risky``: constructs the rules do not model (see module doc), e.g. {"substitution"}."""

    tokens: list[Word | str]
    risky: set[str]


def lex(line: str) -> Lexed:
    """Words and operators of a bash line. Raises :class:`ShellSyntax` on unterminated quotes."""
    tokens: list[Word | str] = []
    risky: set[str] = set()
    buf: list[str] = []
    flags: set[str] = set()
    in_word = False
    i, n = 0, len(line)

    def end_word() -> None:
        nonlocal buf, flags, in_word
        if in_word:
            tokens.append(Word("".join(buf), flags))
        buf, flags, in_word = [], set(), False

    while i < n:
        c = line[i]
        if c == "\\":
            if i + 1 < n and line[i + 1] == "\n":  # line continuation
                i += 2
                continue
            buf.append(line[i + 1] if i + 1 < n else "")
            in_word = True
            i += 2
            continue
        if c == "'":
            j = line.find("'", i + 1)
            if j < 0:
                raise ShellSyntax("unterminated single quote")
            buf.append(line[i + 1:j])
            in_word = True
            i = j + 1
            continue
        if c == "$" and i + 1 < n and line[i + 1] in "'\"":
            risky.add("ansi-c quoting" if line[i + 1] == "'" else "locale quoting")
            i += 1  # then read the quoted part as ordinary quoting (close enough for a flagged line)
            if line[i] == "'":
                j = i + 1
                while j < n and line[j] != "'":
                    j += 2 if line[j] == "\\" else 1
                if j >= n:
                    raise ShellSyntax("unterminated $'…' quote")
                buf.append(line[i + 1:j])
                in_word = True
                i = j + 1
                continue
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
                if line[j] == "`" or line.startswith("$(", j):
                    risky.add("substitution")
                elif line[j] == "$":
                    flags.add("expansion")
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
            continue
        if c in " \t":
            end_word()
            i += 1
            continue
        if c == "`" or line.startswith("$(", i) or line.startswith("<(", i) or line.startswith(">(", i):
            risky.add("substitution")
        op = next((o for o in _OPERATORS if line.startswith(o, i)), None)
        if op is not None:
            if op in ("(", ")"):
                risky.add("subshell or function")
            if in_word and op in REDIRECTS and not flags and "".join(buf).isdigit():
                buf, in_word = [], False  # "2>": the fd of the redirection, not a word
            end_word()
            tokens.append(op)
            i += len(op)
            continue
        if c == "$":
            flags.add("expansion")
        elif c in _GLOB:
            flags.add("glob")
        elif c in "{}":
            flags.add("brace")
        elif c == "~" and not in_word:
            flags.add("tilde")
        buf.append(c)
        in_word = True
        i += 1
    end_word()
    return Lexed(tokens, risky)


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


__all__ = ["KEYWORDS", "REDIRECTS", "SEPARATORS", "Lexed", "ShellSyntax", "Word", "lex", "redirect_targets",
           "simple_commands", "words_of"]
