"""The relevance gate of the preseed block: one threshold on one score, fitted on labelled queries.

The gate decides "a block or no block" for a task. Its *score* combines three signals, each the
best over the first ``pool`` candidates of the fused ranking:

    score = best cosine + coverage_weight × best term coverage + agreement_weight × best agreement

*cosine*: the query vector against a note's title or body-chunk vectors (as
:class:`memory.types.Hit.score`); *term coverage*: the share of the task's content words
(:func:`memory.text.query_terms`) that a note's name, description or body contains
(:func:`memory.text.coverage`) — a lexical check that catches short or keyword-heavy tasks
MiniLM scores low, and questions that borrow the project's vocabulary without its topic;
*agreement*: a note's reciprocal-rank score
(:attr:`memory.search.Candidate.rrf`) — high when both lanes, the meaning and the words, put the
same note near the top, low when only one of them finds anything. The block is sent when
``score >= threshold``. Lines are not filtered one by one: once the gate opens, the block holds
the ranking's first notes as far as the token budget goes (a per-line floor measured a loss of
recall for no gain).

The numbers live in one place, ``memory/gate.json``, written by ``bench/fit_gate.py`` from the
labelled development queries (both files pooled): the weights are a logistic regression's
(L2-regularised, on standardised signals) divided by its cosine weight, and the threshold is the
one with the highest recall of the block among those keeping the false-inject rate (share of
no-match queries that still get a block) at or under ``target_false_inject`` minus a margin
(0.20 − 0.05: the margin is for unseen queries). The file keeps the whole curve (threshold →
recall, false-inject), the held-out estimate (weights and threshold refitted in every fold of a
repeated stratified 5-fold cross-validation) and the cross-file check (fit on one file, measure
on the other); docs/BENCHMARKS.md shows them.

Cosines depend on the embedding model: the gate is calibrated for ``model`` only. With another
model (``COCKPIT_EMBED_MODEL``) it still applies, but uncalibrated; refit with
``bench/fit_gate.py``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

GATE_FILE = Path(__file__).with_name("gate.json")


class GateFileError(ValueError):
    """``gate.json`` is missing a field or holds a value of the wrong type."""


@dataclass(frozen=True)
class Gate:
    """A fitted gate. ``threshold``: on the score (module docstring; 0 … 1 + the weights).
    ``pool``: how many of the fused ranking's first candidates the score looks at.
    ``coverage_weight`` / ``agreement_weight``: the weights of best term coverage and best lane
    agreement against best cosine (0: the signal is not used). ``model``: the embedding model
    it was fitted for. ``curve``: ``[{"threshold", "recall", "false_inject"}]`` over the
    fitting data."""

    threshold: float
    pool: int
    model: str
    coverage_weight: float = 0.0
    agreement_weight: float = 0.0
    target_false_inject: float = 0.20
    fitted_on: tuple[str, ...] = ()
    curve: tuple[dict, ...] = field(default=(), repr=False)

    def score(self, cosines, coverages=(), agreements=()) -> float:
        """The gate score from the fused ranking's candidates in rank order: their cosines, term
        coverages (0 … 1) and agreements (:attr:`memory.search.Candidate.rrf`); only the first
        ``pool`` of each count. 0.0 when there is none."""
        best = [max((float(x) for x in list(xs)[: self.pool]), default=0.0)
                for xs in (cosines, coverages, agreements)]
        return best[0] + self.coverage_weight * best[1] + self.agreement_weight * best[2]

    def opens(self, score: float, threshold: float | None = None) -> bool:
        """True when a block is sent (``threshold`` overrides the fitted one, for sweeps)."""
        return score >= (self.threshold if threshold is None else threshold)


def read_gate(path: str | Path) -> Gate:
    """Parse a gate file; raises :class:`GateFileError` (or ``OSError`` when unreadable)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        threshold = float(data["threshold"])
        pool = int(data["pool"])
        model = str(data["model"])
    except (KeyError, TypeError, ValueError) as exc:
        raise GateFileError(f"{path}: not a gate file ({exc})") from None
    weights = {k: data.get(k, 0.0) for k in ("coverage_weight", "agreement_weight")}
    if not all(isinstance(w, (int, float)) and 0.0 <= w <= 2.0 for w in weights.values()):
        raise GateFileError(f"{path}: coverage_weight and agreement_weight must be numbers within 0…2")
    if not 0.0 <= threshold <= 5.0 or pool < 1:
        raise GateFileError(f"{path}: threshold must be within 0…5, pool ≥ 1")
    return Gate(threshold=threshold, pool=pool, model=model,
                coverage_weight=float(weights["coverage_weight"]),
                agreement_weight=float(weights["agreement_weight"]),
                target_false_inject=float(data.get("target_false_inject", 0.20)),
                fitted_on=tuple(data.get("fitted_on", ())),
                curve=tuple(data.get("curve", ())))


@functools.cache
def load_gate() -> Gate:
    """The packaged gate (``memory/gate.json``), read once per process."""
    return read_gate(GATE_FILE)
