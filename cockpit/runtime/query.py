"""The text a task's notes are searched with (shared by the session loop and the Claude Code hook)."""

from __future__ import annotations

from memory.bounds import bound_query


def preseed_query(task: str) -> str:
    """The text the notes are searched with: the task, bounded (``memory.bounds.bound_query``: at
    most ``memory.bounds.MAX_QUERY_CHARS`` characters, head and tail kept). The engine bounds every query
    itself too; bounding here keeps a huge task off the wire to a server."""
    return bound_query(task)


__all__ = ["preseed_query"]
