"""Recall evaluation: the engine's preseed block against gold note names, beside a plain
keyword (grep-like) baseline.

Queries file: JSON lines ``{"id", "query", "gold": [names], "kind"}``. Metrics:

* ``recall@k``: over queries with non-empty gold, mean of |gold ∩ names in the block| / |gold|
  (the block holds at most ``k`` notes), overall and per ``kind``.
* ``false_inject_rate``: share of queries with empty gold whose block is not empty.
* ``p50_ms``: median wall time per query (engine: ``build_preseed`` including the query
  embedding; baseline: its scan).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from .text import content_terms


class EvalError(ValueError):
    """The queries file is missing or malformed (message names file and line)."""


def load_queries(path: str | Path) -> list[dict]:
    """Parse the JSONL queries file; raises :class:`EvalError`."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvalError(f"cannot read {path}: {exc.strerror or exc}") from None
    out = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
            if not isinstance(q.get("query"), str) or not isinstance(q.get("gold", []), list):
                raise ValueError("needs a string 'query' and a list 'gold'")
        except (ValueError, AttributeError) as exc:
            raise EvalError(f"{path}:{i}: not a query line ({exc})") from None
        q.setdefault("id", f"line{i}")
        q.setdefault("kind", "unknown")
        q.setdefault("gold", [])
        out.append(q)
    return out


class KeywordBaseline:
    """A plain keyword search: a note scores the number of distinct query terms (lower-cased,
    stopwords removed) found as substrings of its name + description + body; the block is the
    ``top_k`` notes scoring > 0."""

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


def _figures(results: list[dict], key: str, k: int) -> dict:
    by_kind: dict[str, list[float]] = {}
    recalls, fi, lat = [], [], []
    for r in results:
        names = r[key]["names"][:k]
        lat.append(r[key]["ms"])
        if r["gold"]:
            rec = len(set(r["gold"]) & set(names)) / len(set(r["gold"]))
            recalls.append(rec)
            by_kind.setdefault(r["kind"], []).append(rec)
        else:
            fi.append(1.0 if names else 0.0)
    return {
        f"recall@{k}": round(statistics.fmean(recalls), 4) if recalls else None,
        "per_kind": {kd: round(statistics.fmean(v), 4) for kd, v in sorted(by_kind.items())},
        "false_inject_rate": round(statistics.fmean(fi), 4) if fi else None,
        "no_match_queries": len(fi),
        "queries_with_gold": len(recalls),
        "p50_ms": round(statistics.median(lat), 3) if lat else None,
    }


def run_eval(engine, queries: list[dict], top_k: int = 5) -> dict:
    """Evaluate ``engine`` (already synced) on ``queries``. Returns
    ``{"engine": figures, "baseline": figures, "queries": [per-query]}`` where per-query rows
    carry ``engine.names`` / ``baseline.names`` (note names in the block, rank order) and scores,
    so every figure can be recomputed."""
    notes = engine.store.query("SELECT name, name || ' ' || description || ' ' || body FROM notes")
    base = KeywordBaseline(notes)
    engine.build_preseed("warm up", top_k)  # first call pays one-off costs
    results = []
    for q in queries:
        t0 = time.perf_counter()
        pre = engine.build_preseed(q["query"], top_k)
        t1 = time.perf_counter()
        bnames = base.names(q["query"], top_k)
        t2 = time.perf_counter()
        results.append({
            "id": q["id"], "query": q["query"], "kind": q["kind"], "gold": q["gold"],
            "engine": {"names": [h.name for h in pre.hits],
                       "scores": [round(h.score, 4) for h in pre.hits],
                       "tokens": pre.tokens, "ms": round((t1 - t0) * 1000, 3)},
            "baseline": {"names": bnames, "ms": round((t2 - t1) * 1000, 3)},
        })
    return {"top_k": top_k, "engine": _figures(results, "engine", top_k),
            "baseline": _figures(results, "baseline", top_k), "queries": results}
