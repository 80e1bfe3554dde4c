"""The memory engine: notes -> SQLite (rows + FTS5 + sqlite-vec) -> hybrid search -> preseed block.

Never imports ``cockpit`` (nor Textual, nor anthropic). The public API is documented in
``docs/ARCHITECTURE.md`` ("memory API").
"""

TYPE_CHECKING = False  # not typing's: importing typing costs the hook's hot path ≈ 4 ms

if TYPE_CHECKING:
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

_WHERE = {"MemoryEngine": "engine", "binding_name": "store"}


def __getattr__(name: str):
    """The public names, imported on first use: ``memory.text`` (what the Claude Code hook needs
    to shape a query) must not cost numpy, sqlite-vec and the engine (≈ 150 ms)."""
    if name in __all__:
        import importlib

        value = getattr(importlib.import_module(f".{_WHERE.get(name, 'types')}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MemoryEngine", "Hit", "Preseed", "SyncReport", "LintIssue", "EngineStatus",
    "NoteExistsError", "IndexOpenError", "IndexModelError", "MemoryEngineError", "binding_name",
]
