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

# weights in quarter tokens
_ASCII, _HALF, _ONE, _TWO = 1, 2, 4, 8


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (a conservative upper estimate; 0 for ""). For ASCII text
    this is ⌈characters / 4⌉."""
    if text.isascii():
        return (len(text) + 3) // 4
    quarters = 0
    for ch in text:
        cp = ord(ch)
        if cp < 0x80:
            quarters += _ASCII
        elif cp < 0x800:
            quarters += _HALF
        elif cp < 0x10000:
            quarters += _ONE
        else:
            quarters += _TWO
    return (quarters + 3) // 4
