"""An offline token estimate that holds across scripts (no tokenizer, no network).

``characters ÷ 4`` is a fair guess for English but counts CJK text about three times too low
(one CJK character is roughly one token, not a quarter of one), so a block budgeted that way
overflows. :func:`estimate_tokens` weighs each character by its script, erring high:

==========================================================  ==================
characters                                                  tokens / character
==========================================================  ==================
ASCII                                                       1/4
Latin-1 and Latin Extended letters, Greek, Cyrillic,        1/2
Armenian, Hebrew, Arabic (U+0080–U+07FF)
other BMP characters: Indic, Thai, punctuation and symbols  1
(``—``, ``…``, ``★``), CJK, kana, hangul, fullwidth forms
outside the BMP (emoji, rare CJK)                           2
==========================================================  ==================

The exact count is the Messages API's ``count_tokens``; this estimate is what the engine uses
when no client is at hand (it never is inside ``memory/``).
"""

from __future__ import annotations

import re

# characters from U+0800 on (3 or 4 UTF-8 bytes)
_WIDE = re.compile("[\u0800-\uffff\U00010000-\U0010ffff]")


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (a conservative upper estimate; 0 for ""). For ASCII text
    this is ⌈characters / 4⌉."""
    if text.isascii():
        return (len(text) + 3) // 4
    # in quarter tokens: ASCII 1, U+0080–U+07FF 2, other BMP 4, beyond the BMP 8 — which is the
    # UTF-8 length (1, 2, 3, 4 bytes) + 1 per character from U+0800 + 3 more beyond the BMP
    utf8 = len(text.encode("utf-8", "surrogatepass"))
    astral = len(text.encode("utf-16-le", "surrogatepass")) // 2 - len(text)
    quarters = utf8 + len(_WIDE.findall(text)) + 3 * astral
    return (quarters + 3) // 4
