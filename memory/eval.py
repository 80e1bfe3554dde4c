"""Recall evaluation: what a reader gets from the preseed block, against gold note names, with
the ranking's recall@k and a plain keyword (grep-like) baseline beside it.

Queries files: JSON lines ``{"id", "query", "gold": [names], "kind"}``; ``gold`` is required
(``[]`` = the notes say nothing about this task: the ideal block is empty). Figures (see
:func:`figures`), per file, per kind and over all files pooled:

* ``line_recall``: over queries with gold, mean of |gold ∩ notes given as lines| / |gold| —
  the notes a session reads in full; ``any_recall``: the same with the index of the rest
  counted (names + descriptions the session can follow);
* ``line_precision``: of all judged lines (priority lines apart), the share that are gold;
  ``extra_lines``: not-needed judged lines per query, every query counted; ``priority_lines``:
  priority lines per query (given by rule, whatever the task);
* ``false_inject_lines``: share of no-match queries given a judged line;
  ``false_inject_any``: … given a judged line or an index entry (priority lines are given by
  rule whatever the task and do not count; they do count in recall, as notes the reader got);
* ``superseded_only``: blocks that hold a superseded note as a line without its successor
  (0 by construction; counted so that stays true);
* ``mean_block_tokens``, ``p50_ms`` / ``p95_ms`` (``build_preseed`` wall time, the query
  embedding included), ``recall@k`` of the ranking (no judge, no budget);
* ``selector``: with a selector, calls, fall-backs with their reasons, "none applies" answers,
  mean tokens per call and p50 latency.

``sweep``: line recall, extra lines and false-inject (lines) over line thresholds, from the
probabilities of every row's candidates (exact: one threshold on one probability each).
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
    ``key``: ``"engine"`` or ``"baseline"`` (the baseline has no index, ranking or tokens: its
    first notes count as lines)."""
    gold_rows = [r for r in rows if r["gold"]]
    nm_rows = [r for r in rows if not r["gold"]]

    def given(r: dict) -> list[str]:
        return r[key]["names"] + r[key].get("index", []) + r[key].get("priority", [])

    by_kind: dict[str, list[float]] = {}
    for r in gold_rows:
        by_kind.setdefault(r["kind"], []).append(_recall(r["gold"], r[key]["names"] + r[key].get("priority", [])))
    judged = [(n, r) for r in rows for n in r[key]["names"]]
    out: dict[str, Any] = {
        "queries": len(rows),
        "queries_with_gold": len(gold_rows),
        "no_match_queries": len(nm_rows),
        "line_recall": _mean(_recall(r["gold"], r[key]["names"] + r[key].get("priority", [])) for r in gold_rows),
        "any_recall": _mean(_recall(r["gold"], given(r)) for r in gold_rows),
        "per_kind": {k: _mean(v) for k, v in sorted(by_kind.items())},
        "line_precision": _mean(1.0 if n.casefold() in {g.casefold() for g in r["gold"]} else 0.0 for n, r in judged),
        "extra_lines": _mean(sum(n.casefold() not in {g.casefold() for g in r["gold"]} for n in r[key]["names"])
                             for r in rows),
        "priority_lines": _mean(len(r[key].get("priority", [])) for r in rows),
        "false_inject_lines": _mean(1.0 if r[key]["names"] else 0.0 for r in nm_rows),
        # anything given for the task: a judged line or an index entry (priority lines are given
        # by rule whatever the task, so they do not count here)
        "false_inject_any": _mean(1.0 if r[key]["names"] or r[key].get("index") else 0.0 for r in nm_rows),
    }
    lat = [r[key]["ms"] for r in rows]
    out["p50_ms"], out["p95_ms"] = _pct(lat, 0.5), _pct(lat, 0.95)
    if key != "engine":
        return out
    out["superseded_only"] = sum(r[key].get("superseded_lines", 0) for r in rows)
    for k in at:
        out[f"recall@{k}"] = _mean(_recall(r["gold"], r["ranking"][:k]) for r in gold_rows)
    out["mean_block_tokens"] = _mean(r[key]["tokens"] for r in rows)
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


def sweep(rows: list[dict], thresholds, max_lines: int = 6) -> list[dict]:
    """Line recall, extra lines per query and false-inject (lines) if the judge's line
    threshold were each of ``thresholds`` (rows need ``open``: candidate names and p)."""
    curve = []
    for t in thresholds:
        rec, extra, fi = [], [], []
        for r in rows:
            succ = r["open"].get("successor", [""] * len(r["open"]["names"]))
            picked = [(n, s) for n, p, s in zip(r["open"]["names"], r["open"]["p"], succ, strict=True)
                      if p >= t or (s and p >= t / 2)][:max_lines]
            names: list[str] = []
            for n, s in picked:  # a superseded decision gives its line to its successor (as the engine does)
                if s:
                    if s not in names:
                        names.insert(0, s)
                elif n not in names:
                    names.append(n)
            gold = {g.casefold() for g in r["gold"]}
            extra.append(sum(n.casefold() not in gold for n in names))
            if r["gold"]:
                rec.append(_recall(r["gold"], names))
            else:
                fi.append(1.0 if names else 0.0)
        curve.append({"threshold": round(float(t), 4), "line_recall": _mean(rec), "extra_lines": _mean(extra),
                      "false_inject_lines": _mean(fi)})
    return curve


def run_eval(engine, queries: list[dict], top_k: int | None = None, selector=None,
             at: tuple[int, ...] = (5, 10, 30), with_sweep: bool = False,
             line_threshold: float | None = None) -> dict:
    """Evaluate ``engine`` (already synced) on ``queries`` (from :func:`load_queries`).

    Returns ``{"files": {name: figures}, "all": figures, "baseline": figures, "queries": rows,
    "unknown_gold": [...]}``; with ``with_sweep`` each row also has ``open`` (for
    :func:`sweep`). A row: ``id, query, kind, file, gold, engine: {names, scores, tokens, ms,
    selected_by, gate_score}, ranking: [names], baseline: {names, ms}, selector`` — every
    figure can be recomputed from them. ``unknown_gold``: gold names no indexed note has
    (a typo there would read as a miss)."""
    from .preseed import MAX_LINES

    notes = engine.store.note_texts_all()
    superseded = {name.casefold() for _i, name, _p, status, _s in engine.store.lifecycles() if status == "superseded"}
    known = {n.casefold() for n, _ in notes}
    base = KeywordBaseline(notes)
    lines = top_k or MAX_LINES
    engine.build_preseed("warm up", top_k)  # first call pays one-off costs
    rows = []
    for q in queries:
        t0 = time.perf_counter()
        pre = engine.build_preseed(q["query"], top_k, selector=selector, line_threshold=line_threshold)
        t1 = time.perf_counter()
        bnames = base.names(q["query"], lines)
        t2 = time.perf_counter()
        row = {
            "id": q["id"], "query": q["query"], "kind": q["kind"], "file": q.get("file", ""),
            "gold": q["gold"],
            "engine": {"names": [h.name for h in pre.hits if not h.priority],
                       "priority": [h.name for h in pre.hits if h.priority],
                       "index": [h.name for h in pre.index],
                       "scores": [round(h.score, 4) for h in pre.hits],
                       "tokens": pre.tokens, "ms": round((t1 - t0) * 1000, 3),
                       "selected_by": pre.selected_by, "best_p": round(pre.gate_score, 4),
                       "superseded_lines": sum(1 for h in pre.hits if h.name.casefold() in superseded),
                       "left_out": [list(x) for x in pre.left_out]},
            "ranking": [h.name for h in engine.search(q["query"], max(at))],
            "baseline": {"names": bnames, "ms": round((t2 - t1) * 1000, 3)},
        }
        if pre.selector is not None:
            row["selector"] = pre.to_dict()["selector"]
        if with_sweep:
            ranked = sorted(pre.considered, key=lambda h: -(h.probability or 0.0))
            row["open"] = {"names": [h.name for h in ranked], "p": [round(h.probability or 0.0, 4) for h in ranked],
                           "successor": [h.superseded_by for h in ranked]}
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
