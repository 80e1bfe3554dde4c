"""The API key out of text a session hands on (tool output, errors, transcript records), in the
forms a command can print it in.

:func:`redactor` returns a function that replaces, with ``***``:

- the key itself, and reversed (``rev``);
- its hex encoding, any case, bytes optionally written ``\\x73``, ``0x73`` or ``%73`` and
  separated by a space, ``:``, ``,`` or ``-`` (``xxd -p``, ``od``-free dumps, ``printf '\\x..'``);
- its URL encoding: any mix of the key's characters and their ``%XX`` escapes;
- its base64 encoding, standard and URL-safe alphabets, at each of the 3 alignments a key can
  have inside a longer base64 stream (``base64 file``): the characters that depend on the key's
  bytes only (the stable middle) are matched, so a character or two at each end may stay.

Every form may be wrapped over lines (``base64`` wraps at 76 columns, ``xxd -p`` at 60). The
patterns are compiled once per key (:func:`redactor` is cached). Limits: a form made of
several steps (the base64 of the hex), a key printed in pieces, or any encoding not above
(a cipher, rot13, compression) is not recognised: the environment and ``/proc`` measures keep
the key from the shell in the first place.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from functools import lru_cache

# shorter "keys" are not redacted: a stand-in's or a local proxy's dummy (`test`, `test-key`) is no
# secret, and redacting it garbled ordinary words ("tests" → "***s") in panes and transcripts; the
# API's keys and tokens are far longer (an Anthropic key ≈ 108 characters)
MIN_SECRET = 16
_WRAP = r"(?:\r?\n)?"  # a line break a wrapping encoder puts between two characters
_B64_ALT = {"+": "[+-]", "/": "[/_]"}  # standard and URL-safe alphabets in one pattern


def _chars(s: str) -> str:
    return _WRAP.join(re.escape(c) for c in s)


def _hex(data: bytes) -> str:
    sep = r"[ \t:,\-]{0,2}(?:\r?\n[ \t]{0,2})?"  # "73 6b", "73:6b", a wrapped dump (od -An -tx1)
    return sep.join(rf"(?:\\x|0x|%)?(?i:{b:02x})" for b in data)


def _url(key: str) -> str:
    escaped = ("".join(f"%(?i:{b:02x})" for b in c.encode()) for c in key)  # UTF-8 bytes, each %XX
    return _WRAP.join(f"(?:{re.escape(c)}|{e})" for c, e in zip(key, escaped, strict=True))


def _base64(data: bytes) -> list[str]:
    """The stable middle of the base64 of ``data`` at each alignment (after 0, 1 or 2 bytes)."""
    out = []
    for offset in range(3):
        enc = base64.b64encode(bytes(offset) + data).decode()
        start = (0, 2, 3)[offset]  # characters that also hold bits of the bytes before
        full, rest = divmod(offset + len(data), 3)
        end = 4 * full + rest  # of a last, partial group the first 1 or 2 characters are the key's only
        middle = enc[start:end]
        if len(middle) >= 6:
            out.append(_WRAP.join(_B64_ALT.get(c, re.escape(c)) for c in middle))
    return out


@lru_cache(maxsize=16)
def _pattern(secret: str) -> re.Pattern[str]:
    data = secret.encode()
    forms = [_chars(secret), _chars(secret[::-1]), _hex(data), _url(secret), *_base64(data)]
    return re.compile("|".join(f"(?:{f})" for f in forms))


def redact(text: str, secret: str | None) -> str:
    """``text`` with every form of ``secret`` (module doc) replaced by ``***``."""
    if not secret or len(secret) < MIN_SECRET or not text:
        return text
    return _pattern(secret).sub("***", text)


def redactor(secret: str | None) -> Callable[[str], str]:
    """A function applying :func:`redact` with ``secret`` (identity when there is none)."""
    if not secret or len(secret) < MIN_SECRET:
        return lambda text: text
    pattern = _pattern(secret)
    return lambda text: pattern.sub("***", text) if text else text


__all__ = ["redact", "redactor", "MIN_SECRET"]
