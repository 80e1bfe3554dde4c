"""Plain data types shared by the engine modules (no behaviour beyond formatting)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .selector import SelectorResult


class MemoryEngineError(Exception):
    """Base class of the engine's own errors."""


class NoteExistsError(MemoryEngineError, FileExistsError):
    """``save`` refused: a different note with that name (or that file) already exists."""


class IndexOpenError(MemoryEngineError):
    """The index file cannot be opened or is not a Cockpit memory index."""


class IndexModelError(IndexOpenError):
    """The index holds vectors of another embedding model (or dimension) than this process
    uses. One index holds one model's vectors: the engine refuses to mix or replace them (a
    process still using that index would lose its notes). ``index_model``/``engine_model`` are
    ``"model-id (dim N)"`` strings."""

    def __init__(self, index_path, index_model: str, engine_model: str):
        self.index_path, self.index_model, self.engine_model = index_path, index_model, engine_model
        super().__init__(
            f"index {index_path} holds vectors of {index_model}; this process embeds with "
            f"{engine_model}. One index holds one model: point this process at another index "
            f"(--index / COCKPIT_INDEX; the default index is per model), or rebuild this one "
            f"once no other process uses it (it is derived data: delete it and sync)")


MARKED_STATUSES = ("superseded", "deprecated", "rejected", "proposed")  # said beside a note's name


def lifecycle_label(status: str, superseded_by: str = "") -> str:
    """What a list of notes says beside a note's name about its lifecycle: ``superseded by X``,
    or the status when it is one a reader must know (:data:`MARKED_STATUSES`); "" for a current
    note. The same words in the CLI, the agents' ``memory_search`` tools and ``notes://index``."""
    if superseded_by:
        return f"superseded by {superseded_by}"
    return status if status in MARKED_STATUSES else ""


@dataclass(frozen=True)
class Hit:
    """One ranked search result.

    ``score`` is the cosine similarity between the query vector and the note's best-matching
    vector (title or a body chunk), clamped to 0…1 (a negative cosine, unrelated, shows as 0);
    ``rank_score`` is the fused score that decided the order (reciprocal-rank fusion of vector and
    BM25 ranks; priority does not add to it).
    ``snippet`` is a short piece of the body (≤ ~160 chars) chosen for the query.
    ``path`` is the note's file path (absolute).
    """

    name: str
    description: str
    snippet: str
    priority: bool
    score: float
    path: Path
    rank_score: float = 0.0
    keyword: bool = False  # matched an exact identifier of the query (FTS5 phrase)
    probability: float | None = None  # the judge's p that it matters for the task (memory.judge)
    status: str = ""                  # lifecycle (memory.notes.lifecycle): superseded, rejected, …
    superseded_by: str = ""           # the successor's name when the engine resolved it

    def to_dict(self) -> dict:
        extra: dict = {}
        if self.probability is not None:
            extra["probability"] = round(self.probability, 4)
        if self.status:
            extra["status"] = self.status
        if self.superseded_by:
            extra["superseded_by"] = self.superseded_by
        return extra | {
            "name": self.name,
            "description": self.description,
            "snippet": self.snippet,
            "priority": self.priority,
            "score": round(self.score, 4),
            "rank_score": round(self.rank_score, 5),
            "keyword": self.keyword,
            "path": str(self.path),
        }


@dataclass(frozen=True)
class Preseed:
    """The preseed block and what went into it.

    ``text``: the exact block a session's first message starts with ("" when nothing qualifies).
    ``hits``: the notes given as lines (priority notes first), in block order. ``index``: the
    notes in the block's index of the rest (name + description, "may be relevant").
    ``tokens``: estimated tokens of ``text`` (:func:`memory.tokens.estimate_tokens`; 0 when
    empty). ``considered``: the candidates the judge weighed (with ``probability``), in ranking
    order. ``left_out``: ``(name, why)`` for candidates that came close but got no line (below
    the line threshold and by how much, superseded by X, over budget). ``priority_cut``: priority
    notes that did not fit their budget. ``gate_score``: the best probability among the
    candidates (kept under its old name for clients); ``gate_signals``: best cosine, coverage,
    agreement. ``selected_by``: ``"embedded"`` (the judge) or ``"selector"`` (a model chose; see
    :mod:`memory.selector`). ``selector``: the selector's answer when one was asked
    (``selector.error`` set when it fell back to the embedded selection), else None.
    """

    text: str
    hits: list[Hit]
    tokens: int
    considered: list[Hit] = field(default_factory=list)
    gate_score: float = 0.0
    gate_signals: tuple[float, float, float] = (0.0, 0.0, 0.0)
    selected_by: str = "embedded"
    selector: SelectorResult | None = None
    index: list[Hit] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    priority_cut: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {
            "text": self.text,
            "tokens": self.tokens,
            "hits": [h.to_dict() for h in self.hits],
            "index": [h.to_dict() for h in self.index],
            "left_out": [{"name": n, "why": w} for n, w in self.left_out],
            "priority_cut": list(self.priority_cut),
            "considered": [h.to_dict() for h in self.considered],
            "gate_score": round(self.gate_score, 4),
            "gate_signals": [round(x, 4) for x in self.gate_signals],
            "selected_by": self.selected_by,
        }
        if self.selector is not None:
            s = self.selector
            out["selector"] = {"names": s.names, "model": s.model, "error": s.error,
                               "latency_ms": round(s.latency_ms, 1),
                               "usage": {"input": s.usage.input, "output": s.usage.output,
                                         "cache_write": s.usage.cache_write,
                                         "cache_read": s.usage.cache_read}}
        return out


@dataclass
class SyncReport:
    """What one ``sync`` did. Paths are relative to the notes folder (POSIX form).

    ``skipped`` lists every file currently not indexable, with its reason (also files skipped on
    earlier syncs and unchanged since). ``warnings`` are non-fatal parse warnings (e.g. a YAML
    date coerced to text) as "path: message" lines. ``embedded`` counts texts embedded.
    ``seconds`` is wall time.
    """

    added: int = 0
    updated: int = 0
    removed: int = 0
    renamed: int = 0
    unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    embedded: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.renamed)

    def to_dict(self) -> dict:
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "renamed": self.renamed,
            "unchanged": self.unchanged,
            "skipped": [list(s) for s in self.skipped],
            "warnings": list(self.warnings),
            "embedded": self.embedded,
            "seconds": round(self.seconds, 4),
        }


@dataclass(frozen=True)
class LintIssue:
    """One piece of advice from ``lint``. ``kind`` is one of ``no-description``, ``no-name``,
    ``description-gap`` (the body holds a fact the description does not mention),
    ``near-duplicate``, ``name-collision``, ``skipped``. ``path`` is relative to the notes folder;
    ``other`` names the second note for pairwise issues."""

    kind: str
    path: str
    message: str
    other: str | None = None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "path": self.path, "message": self.message, "other": self.other}


@dataclass(frozen=True)
class EngineStatus:
    """A snapshot for the UI. ``model_state``: "warming" | "ready" | "error".
    ``binding``: the SQLite module in use ("sqlite3", "sqlean" or "pysqlite3").
    ``last_sync``: epoch seconds of the last completed sync in this process, or None.
    ``watch``: the watcher's state as one line ("watching notes", "notes folder … missing:
    waiting for it", "watching notes (re-watched … after the folder was re-created …)"), None
    when no watcher runs; ``watch_state`` the same as a word: "watching", "missing" or
    "recovered" (None when no watcher runs) — what a client of a server follows."""

    model_state: str
    model: str
    model_error: str | None
    notes: int
    last_sync: float | None
    warnings: list[str]
    binding: str
    index_path: Path
    notes_dir: Path
    watch: str | None = None
    watch_state: str | None = None
