"""Recall evaluation: the preseed block as sent against gold note names, the ranking's recall@k
beside it, and a plain keyword (grep-like) baseline.

Queries files: JSON lines ``{"id", "query", "gold": [names], "kind"}``; ``gold`` is required
(``[]`` = the notes say nothing about this task: the ideal block is empty). Figures (see
:func:`figures`), per file and over all files pooled:

* ``block_recall``: over queries with non-empty gold, mean of |gold ∩ names in the block| /
  |gold| — what a session actually gets (after the gate or the selector, and the token budget);
  also ``per_kind``;
* ``recall@k`` for each k in ``at``: the same over the ranking's first k notes (no gate, no
  budget) — what the ranking holds;
* ``false_inject_rate``: share of no-match queries whose block is not empty;
* ``mean_block_tokens`` / ``mean_block_notes``: over queries that got a block (estimated tokens;
  notes with a line or a name);
* ``p50_ms`` / ``p95_ms``: wall time of ``build_preseed`` per query, the query embedding (and
  the selector call, when one is used) included;
* ``selector``: with a selector, calls, fall-backs with their reasons, "none applies" answers,
  mean tokens per call (``usage`` as the API reported it) and p50 latency of the call.

``sweep``: the curve of block recall and false-inject rate over gate thresholds, from one extra
``build_preseed(gate_threshold=0)`` per query (the block the ranking would send with the gate
open, and the gate score it would be judged on) — exact, since the gate is one threshold on one
score.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from .text import content_terms


class EvalError(ValueError):
    """A queries file is missing, empty or malformed (message names file and line)."""


def load_queries(path: str | Path) -> list[dict]:
    """Parse one JSONL queries file → query dicts (with ``file`` = the file's name).

    Raises :class:`EvalError` for an unreadable or empty file, a line that is not a JSON
    object, a missing or empty ``query``, or a missing ``gold`` (a list of note names; ``[]``
    marks a no-match query and must be written out)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvalError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise EvalError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    out = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
        except ValueError as exc:
            raise EvalError(f"{path}:{i}: not a JSON object ({exc})") from None
        if not isinstance(q, dict):
            raise EvalError(f"{path}:{i}: not a JSON object")
        if not isinstance(q.get("query"), str) or not q["query"].strip():
            raise EvalError(f"{path}:{i}: needs a non-empty string 'query'")
        if "gold" not in q:
            raise EvalError(f"{path}:{i}: no 'gold' list (write \"gold\": [] for a task the notes "
                            "do not cover)")
        gold = q["gold"]
        if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
            raise EvalError(f"{path}:{i}: 'gold' must be a list of note names")
        q.setdefault("id", f"{path.name}:{i}")
        q.setdefault("kind", "no-match" if not gold else "unknown")
        q["file"] = path.name
        out.append(q)
    if not out:
        raise EvalError(f"{path}: no queries (the file is empty)")
    return out


class KeywordBaseline:
    """A plain keyword search: a note scores the number of distinct query terms (lower-cased,
    stopwords removed) found as substrings of its name + description + body; the block is the
    first ``top_k`` notes scoring > 0."""

    def __init__(self, notes: list[tuple[str, str]]):
        self.notes = [(name, text.lower()) for name, text in notes]

    def names(self, query: str, top_k: int) -> list[str]:
        terms = set(content_terms(query))
        scored = []
        for name, text in self.notes:
            s = sum(1 for t in terms if t in text)
            if s:
                scored.append((-s, name))
        scored.sort()
        return [n for _, n in scored[:top_k]]


def _recall(gold: list[str], names: list[str]) -> float:
    g = {x.casefold() for x in gold}
    return len(g & {n.casefold() for n in names}) / len(g)


def _mean(xs) -> float | None:
    xs = list(xs)
    return round(statistics.fmean(xs), 4) if xs else None


def _pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))], 3)


def figures(rows: list[dict], at: tuple[int, ...] = (5, 10, 30), key: str = "engine") -> dict:
    """The figures (see module docstring) of per-query ``rows`` from :func:`run_eval`.
    ``key``: ``"engine"`` or ``"baseline"`` (the baseline has no ranking, tokens or selector)."""
    gold_rows = [r for r in rows if r["gold"]]
    nm_rows = [r for r in rows if not r["gold"]]
    by_kind: dict[str, list[float]] = {}
    for r in gold_rows:
        by_kind.setdefault(r["kind"], []).append(_recall(r["gold"], r[key]["names"]))
    blocks = [r[key] for r in rows if r[key]["names"]]
    out: dict[str, Any] = {
        "queries": len(rows),
        "queries_with_gold": len(gold_rows),
        "no_match_queries": len(nm_rows),
        "block_recall": _mean(_recall(r["gold"], r[key]["names"]) for r in gold_rows),
        "per_kind": {k: _mean(v) for k, v in sorted(by_kind.items())},
        "false_inject_rate": _mean(1.0 if r[key]["names"] else 0.0 for r in nm_rows),
    }
    lat = [r[key]["ms"] for r in rows]
    out["p50_ms"], out["p95_ms"] = _pct(lat, 0.5), _pct(lat, 0.95)
    if key != "engine":
        return out
    for k in at:
        out[f"recall@{k}"] = _mean(_recall(r["gold"], r["ranking"][:k]) for r in gold_rows)
    out["mean_block_tokens"] = _mean(b["tokens"] for b in blocks)
    out["mean_block_notes"] = _mean(len(b["names"]) for b in blocks)
    sel = [r["selector"] for r in rows if r.get("selector")]
    if sel:
        errors: dict[str, int] = {}
        for s in sel:
            if s["error"]:
                reason = s["error"].split(":")[0]
                errors[reason] = errors.get(reason, 0) + 1
        out["selector"] = {
            "calls": len(sel),
            "fell_back": sum(1 for s in sel if s["names"] is None),
            "fall_back_reasons": errors,
            "none_applies": sum(1 for s in sel if s["names"] == []),
            "mean_usage": {f: _mean(s["usage"][f] for s in sel)
                           for f in ("input", "output", "cache_write", "cache_read")},
            "p50_ms": _pct([s["latency_ms"] for s in sel], 0.5),
            "models": sorted({s["model"] for s in sel if s["model"]}),
        }
    return out


def sweep(rows: list[dict], thresholds) -> list[dict]:
    """Block recall and false-inject rate if the gate's threshold were each of ``thresholds``
    (rows need ``open``: the gate-open block and its gate score)."""
    curve = []
    for t in thresholds:
        rec, fi = [], []
        for r in rows:
            names = r["open"]["names"] if r["open"]["gate_score"] >= t else []
            if r["gold"]:
                rec.append(_recall(r["gold"], names))
            else:
                fi.append(1.0 if names else 0.0)
        curve.append({"threshold": round(float(t), 4), "recall": _mean(rec), "false_inject": _mean(fi)})
    return curve


def run_eval(engine, queries: list[dict], top_k: int | None = None, selector=None,
             at: tuple[int, ...] = (5, 10, 30), with_sweep: bool = False) -> dict:
    """Evaluate ``engine`` (already synced) on ``queries`` (from :func:`load_queries`).

    Returns ``{"files": {name: figures}, "all": figures, "baseline": figures, "queries": rows,
    "unknown_gold": [...]}``; with ``with_sweep`` each row also has ``open`` (for
    :func:`sweep`). A row: ``id, query, kind, file, gold, engine: {names, scores, tokens, ms,
    selected_by, gate_score}, ranking: [names], baseline: {names, ms}, selector`` — every
    figure can be recomputed from them. ``unknown_gold``: gold names no indexed note has
    (a typo there would read as a miss)."""
    from .preseed import MAX_LINES

    notes = engine.store.note_texts_all()
    known = {n.casefold() for n, _ in notes}
    base = KeywordBaseline(notes)
    lines = top_k or MAX_LINES
    engine.build_preseed("warm up", top_k)  # first call pays one-off costs
    rows = []
    for q in queries:
        t0 = time.perf_counter()
        pre = engine.build_preseed(q["query"], top_k, selector=selector)
        t1 = time.perf_counter()
        bnames = base.names(q["query"], lines)
        t2 = time.perf_counter()
        row = {
            "id": q["id"], "query": q["query"], "kind": q["kind"], "file": q.get("file", ""),
            "gold": q["gold"],
            "engine": {"names": [h.name for h in pre.hits],
                       "scores": [round(h.score, 4) for h in pre.hits],
                       "tokens": pre.tokens, "ms": round((t1 - t0) * 1000, 3),
                       "selected_by": pre.selected_by, "gate_score": round(pre.gate_score, 4)},
            "ranking": [h.name for h in engine.search(q["query"], max(at))],
            "baseline": {"names": bnames, "ms": round((t2 - t1) * 1000, 3)},
        }
        if pre.selector is not None:
            row["selector"] = pre.to_dict()["selector"]
        if with_sweep:
            opened = engine.build_preseed(q["query"], top_k, gate_threshold=0.0)
            row["open"] = {"names": [h.name for h in opened.hits], "gate_score": opened.gate_score,
                           "gate_signals": list(opened.gate_signals)}
        rows.append(row)
    files = list(dict.fromkeys(r["file"] for r in rows))
    return {
        "top_k": top_k, "at": list(at),
        "files": {f: figures([r for r in rows if r["file"] == f], at) for f in files},
        "all": figures(rows, at),
        "baseline": figures(rows, at, key="baseline"),
        "unknown_gold": sorted({g for r in rows for g in r["gold"] if g.casefold() not in known}),
        "queries": rows,
    }
