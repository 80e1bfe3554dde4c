"""Session ids: time-ordered, collision-free in practice, safe in file names and widget ids.

12 characters of Crockford base32 (lower case, no i/l/o/u): 7 for the seconds since the Unix
epoch (sorted order = spawn order) and 5 random (2^25 per second). The manager also checks an id
against the sessions it knows, and transcripts are created exclusively, so a clash is never silent.
"""

from __future__ import annotations

import secrets
import time

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def _b32(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        value, r = divmod(value, 32)
        out.append(ALPHABET[r])
    return "".join(reversed(out))


def new_session_id(now: float | None = None) -> str:
    """A fresh id, e.g. ``"1mq8k2a7x9fz"``."""
    seconds = int(time.time() if now is None else now)
    return _b32(seconds, 7) + _b32(secrets.randbits(25), 5)


MIN_QUERY = 4  # a prefix or suffix shorter than this matches nothing (only a full id does)


def matches(query: str, session_id: str) -> bool:
    """A user-typed id matches the full id or a prefix/suffix of at least :data:`MIN_QUERY` characters."""
    q = query.strip().lower()
    if q == session_id:
        return True
    return len(q) >= MIN_QUERY and (session_id.startswith(q) or session_id.endswith(q))


def not_one(query: str, found: list[tuple[str, str]], what: str = "session", see: str = "cockpit ls") -> str:
    """Why ``query`` names no single session, ``found`` the (id, task) of those it matches: one
    line that lists the matches (their tasks short), or says a prefix needs :data:`MIN_QUERY`
    characters. ``what`` names the thing looked for, ``see`` the command that lists them."""
    from cockpit.textsafe import short

    q = query.strip()
    if not found:
        if q and len(q) < MIN_QUERY:
            return f"no {what} {query!r}: a prefix or suffix needs at least {MIN_QUERY} characters (see {see})"
        return f"no {what} {query!r} (see {see})"
    shown = ", ".join(f"{sid} ({short(task, 30)})" for sid, task in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    ends = ", ".join(unique_suffix(sid, [other for other, _ in found]) for sid, _ in found[:5])
    return (f"session id {query!r} is ambiguous: it matches {shown}{more}; give more characters — ids begin with "
            f"the time they were made, their ends tell them apart: {ends}")


def unique_suffix(session_id: str, others: list[str]) -> str:
    """The shortest end of ``session_id`` (at least :data:`MIN_QUERY` characters) no other of
    ``others`` ends with."""
    for n in range(MIN_QUERY, len(session_id) + 1):
        end = session_id[-n:]
        if not any(o != session_id and o.endswith(end) for o in others):
            return end
    return session_id
