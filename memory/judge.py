"""Each note judged on its own: the probability that a note matters for a task.

The preseed used to decide for the whole block (one gate score, then the budget filled with
whatever ranked next). Now every candidate of the ranking gets its own calibrated probability,
from signals the engine already has for it:

* ``cos`` — its best cosine with the task; ``cos_gap`` — that minus the best cosine of any note;
* ``cov`` — the share of the task's content words its name, description or body holds
  (:func:`memory.text.coverage`); ``cov_gap`` — that minus the best coverage;
* ``name_hit`` — the share of its name's words the task holds (a task naming the thing);
* ``agree`` — its reciprocal-rank score (both lanes near the top: high); ``agree_rel`` — that
  over the best one;
* ``ident`` — it holds an identifier the task names (``ship-v2``, ``6443``);
* ``rank``, ``vec_rank``, ``bm25_rank`` — log positions in the fused ranking and in each lane;
* ``best_cos``, ``best_cov`` — how well the task is covered at all (the same for every note of
  the task: they move every probability of a task the notes do not cover down together);
* ``length`` — log of the note's body length in words.

A logistic regression over them (standardised), fitted by ``bench/fit_judge.py`` on the labelled
queries of every development file pooled (synthetic and real decision records), lives in
``memory/judge.json`` with its threshold (``line``), the lower floor of the index (``index``),
the held-out figures and the curve. A note is given as a line when ``p >= line``; candidates
with ``index <= p < line`` go to the index of the rest (name + description) as far as its
budget goes. Priority is not a signal here: priority notes are given by rule
(:mod:`memory.preseed`), so the judgement is about relevance only.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .text import content_terms, coverage

JUDGE_FILE = Path(__file__).with_name("judge.json")
FEATURES = ("cos", "cos_gap", "cov", "cov_gap", "name_hit", "agree", "agree_rel", "ident", "rank",
            "vec_rank", "bm25_rank", "best_cos", "best_cov", "length")
ABSENT_RANK = 60  # a lane that did not return the note (its CANDIDATES is 50)


class JudgeFileError(ValueError):
    """``judge.json`` is missing a field or does not match :data:`FEATURES`."""


@functools.lru_cache(maxsize=16384)
def name_words(name: str) -> tuple[str, ...]:
    return tuple(w for w in content_terms(name.replace("-", " ").replace("_", " ").replace(".", " ")) if len(w) > 1)


@functools.lru_cache(maxsize=16384)
def _word_count(body: str) -> int:
    return len(body.split())


def features(cands: list[Any], rows: dict[int, tuple], terms: frozenset[str], task_words: set[str]) -> np.ndarray:
    """The feature matrix ``(len(cands), len(FEATURES))`` of ``cands`` (candidates in ranking
    order, :class:`memory.search.Candidate`), with ``rows`` (``note_rows``: id, name,
    description, body, …), ``terms`` (:func:`memory.text.query_terms` of the task) and
    ``task_words`` (its content words, for ``name_hit``)."""
    n = len(cands)
    if not n:
        return np.zeros((0, len(FEATURES)), np.float64)
    got = [rows.get(c.note_id) for c in cands]
    covs = [coverage(terms, row[1], row[2], row[3]) if row is not None else 0.0 for row in got]
    best_cos = max(c.cosine for c in cands)
    best_cov = max(covs)
    best_rrf = max(c.rrf for c in cands) or 1.0
    log1p = math.log1p
    out = []
    for i, c in enumerate(cands):
        row = got[i]
        words = name_words(row[1]) if row else ()
        body_words = _word_count(row[3]) if row else 0
        cov = covs[i]
        out.append((c.cosine, c.cosine - best_cos, cov, cov - best_cov,
                    sum(w in task_words for w in words) / len(words) if words else 0.0,
                    c.rrf, c.rrf / best_rrf, float(c.ident), log1p(i),
                    log1p(c.vec_rank or ABSENT_RANK), log1p(c.bm25_rank or ABSENT_RANK),
                    best_cos, best_cov, log1p(body_words)))
    return np.array(out, np.float64)


@dataclass(frozen=True)
class Judge:
    """A fitted per-note model (see module docstring)."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    line: float          # p at or above: a line
    index: float         # p at or above (and below ``line``): the index of the rest
    pool: int            # candidates judged (the ranking's first)
    model: str
    fitted_on: tuple[str, ...] = ()

    @functools.cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``mean``, ``scale`` and ``weights`` as arrays, made once (not at every preseed)."""
        return np.asarray(self.mean), np.asarray(self.scale), np.asarray(self.weights)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        if not len(x):
            return np.zeros(0)
        mean, scale, weights = self._arrays
        z = ((x - mean) / scale) @ weights + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


def read_judge(path: str | Path) -> Judge:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if tuple(data["features"]) != FEATURES:
            raise JudgeFileError(f"{path}: fitted on features {data['features']}, this engine has {list(FEATURES)}")
        judge = Judge(tuple(map(float, data["mean"])), tuple(map(float, data["scale"])),
                      tuple(map(float, data["weights"])), float(data["bias"]), float(data["line"]),
                      float(data["index"]), int(data["pool"]), str(data["model"]),
                      tuple(data.get("fitted_on", ())))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, JudgeFileError):
            raise
        raise JudgeFileError(f"{path}: not a judge file ({exc})") from None
    if not (len(judge.mean) == len(judge.scale) == len(judge.weights) == len(FEATURES)):
        raise JudgeFileError(f"{path}: {len(FEATURES)} means, scales and weights expected")
    if not 0.0 <= judge.index <= judge.line <= 1.0 or judge.pool < 1:
        raise JudgeFileError(f"{path}: thresholds must satisfy 0 ≤ index ≤ line ≤ 1, pool ≥ 1")
    return judge


@functools.cache
def load_judge() -> Judge:
    """The packaged judge (``memory/judge.json``), read once per process, with the line threshold
    ``cockpit memory calibrate`` fitted on the user's own sessions when there is one (for the
    same model; a broken or foreign calibration file is ignored)."""
    judge = read_judge(JUDGE_FILE)
    local = read_calibration()
    if local is not None and local.get("model") == judge.model:
        judge = dataclasses.replace(judge, line=float(local["line"]))
    return judge


def read_calibration() -> dict | None:
    """The user's calibration (``{"line", "model", …}``), or None when absent or unusable."""
    from .paths import calibration_path

    try:
        data = json.loads(calibration_path().read_text(encoding="utf-8"))
        line = float(data["line"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data if 0.0 < line < 1.0 else None
