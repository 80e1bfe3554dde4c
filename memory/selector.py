"""The seam for an optional model-based selector of preseed notes.

``MemoryEngine.build_preseed(..., selector=s)`` ranks as usual, then hands the fused shortlist
(the first ``SHORTLIST`` candidates, one per note name: name and description only, so the cost
does not grow with the notes folder) and the task to ``s.select``. The answer decides the block:

* ``SelectorResult.names`` a non-empty list: those notes (in the engine's rank order, within
  ``top_k`` and the token budget) — the gate is not consulted;
* ``[]``: none applies, no block (the selector is the gate too);
* ``None``: no usable answer (timeout, HTTP error, malformed reply; ``error`` says which): the
  engine falls back to its own embedded selection under the calibrated gate.

An exception raised by ``select`` is treated like ``None`` with the exception as ``error``.
Implementations live outside ``memory/`` (this package never imports an API client): the
cockpit's is :mod:`cockpit.runtime.selector` (Messages API).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

SHORTLIST = 30  # candidates sent to a selector


@dataclass(frozen=True)
class SelectorCandidate:
    """One shortlisted note as a selector sees it."""

    name: str
    description: str


@dataclass(frozen=True)
class SelectorUsage:
    """Tokens one selector call used, as the Messages API's ``usage`` reports them
    (``cache_write`` = ``cache_creation_input_tokens``, ``cache_read`` =
    ``cache_read_input_tokens``; ``input`` excludes both)."""

    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read


@dataclass(frozen=True)
class SelectorResult:
    """One selector answer. ``names``: chosen note names, ``[]`` for none, ``None`` to fall
    back. ``model``: the model id that answered (for pricing), ``latency_ms``: wall time of the
    call in milliseconds, ``error``: why it fell back (one line, never an API key)."""

    names: list[str] | None
    usage: SelectorUsage = SelectorUsage()
    latency_ms: float = 0.0
    model: str = ""
    error: str | None = None

    @property
    def fell_back(self) -> bool:
        return self.names is None


class Selector(Protocol):
    """What the engine needs of a selector. Blocking (``build_preseed`` runs in a worker
    thread); must return within its own timeout."""

    def select(self, task: str, candidates: Sequence[SelectorCandidate]) -> SelectorResult:
        ...
