"""Session ids across several hosts (one grid, several servers: ``cockpit.server.hosts``).

A session's id is unique within its server only. A client of several servers qualifies each id
with its host's name — ``box:mf3k2q9x7d`` — except the local host's (:data:`LOCAL`), whose ids
stay plain, so ``cockpit attach ID`` takes what the grid shows. Host names never contain ``:``
(session ids never do either), so the split is unambiguous.
"""

from __future__ import annotations

LOCAL = "local"  # this machine's own server
SEP = ":"


def check_name(name: str) -> str:
    """``name`` when it can name a host in a grid, else ValueError (one line)."""
    if not name or SEP in name or not name.isprintable() or any(c.isspace() for c in name):
        raise ValueError(f"a host name is a word without ':' or spaces, got {name!r}")
    return name


def qualify(host: str, session_id: str) -> str:
    """The grid-wide id of ``session_id`` of ``host`` (the local host's ids stay plain)."""
    if host == LOCAL or not session_id:
        return session_id
    return f"{host}{SEP}{session_id}"


def split(session_id: str) -> tuple[str, str]:
    """``(host, id on that host)`` of a grid-wide id (a plain id is the local host's)."""
    host, sep, local = session_id.partition(SEP)
    return (host, local) if sep else (LOCAL, session_id)


def host_of(session_id: str) -> str:
    return split(session_id)[0]
