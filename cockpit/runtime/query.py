"""The text a task's notes are searched with (shared by the session loop and the Claude Code hook)."""

from __future__ import annotations

PRESEED_QUERY_CHARS = 4000


def preseed_query(task: str) -> str:
    """The text the notes are searched with: the task, bounded (a 1 MB task pasted from a log
    would otherwise cost one search term per word); head and tail kept."""
    if len(task) <= PRESEED_QUERY_CHARS:
        return task
    half = PRESEED_QUERY_CHARS // 2
    return task[:half] + "\n…\n" + task[-half:]
