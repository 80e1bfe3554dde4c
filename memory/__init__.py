"""The memory engine: notes -> SQLite (rows + FTS5 + sqlite-vec) -> hybrid search -> preseed block.

Never imports ``cockpit`` (nor Textual, nor anthropic). The public API is documented in
``docs/ARCHITECTURE.md`` ("memory API").
"""

from .engine import MemoryEngine
from .store import binding_name
from .types import (
                    EngineStatus,
                    Hit,
                    IndexModelError,
                    IndexOpenError,
                    LintIssue,
                    MemoryEngineError,
                    NoteExistsError,
                    Preseed,
                    SyncReport,
)

__all__ = [
    "MemoryEngine", "Hit", "Preseed", "SyncReport", "LintIssue", "EngineStatus",
    "NoteExistsError", "IndexOpenError", "IndexModelError", "MemoryEngineError", "binding_name",
]
