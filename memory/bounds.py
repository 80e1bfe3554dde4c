"""A query's text as the engine takes it: decoded, and bounded in length. No imports: the
Claude Code hook's hot path (``cockpit.hook_fast``) uses it before it sends a task to the server."""

from __future__ import annotations

MAX_QUERY_CHARS = 4000  # a longer query is searched as its head and tail (see bound_query)


def as_text(text: str | bytes) -> str:
    """``text`` as a str the tokenizer takes: bytes decoded as UTF-8, and the surrogate escapes
    of bytes a non-UTF-8 locale could not decode (``LC_ALL=POSIX`` with ``PYTHONUTF8=0`` gives
    ``café`` on the command line as ``caf\\udcc3\\udca9``) turned back into the UTF-8 text they
    were (U+FFFD for bytes that are not UTF-8)."""
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("utf-8", "replace")
    if not isinstance(text, str):
        text = str(text)
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte (from a JSON \ud800)
        return text.encode("utf-8", "replace").decode("utf-8", "replace")


def bound_query(text: str) -> str:
    """The text a query is searched with: ``text`` itself up to ``MAX_QUERY_CHARS`` characters,
    else its head and tail (half each) — a 1 MB task pasted from a log would otherwise cost one
    FTS5 term per word and seconds per search. The encoder reads only its first 256 tokens
    anyway."""
    text = as_text(text)
    if len(text) <= MAX_QUERY_CHARS:
        return text
    half = MAX_QUERY_CHARS // 2
    return text[:half] + "\n…\n" + text[-half:]
