"""Fit the relevance gate (``memory/gate.json``) on labelled queries. See :mod:`memory.gate`.
The gate now decides which of a project's instruction rules apply to a task
(:mod:`memory.instructions`); the preseed judges each note on its own (``bench/fit_judge.py``).

Usage (from the repo root; the development split lives beside the repo)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/fit_gate.py \\
        ../shared/recall-dev/queries.jsonl ../shared/recall-dev/queries_dev2.jsonl \\
        --notes ../shared/recall-dev/notes --write          # rewrite memory/gate.json

Method (nothing here looks at single queries; every choice is made on pooled data):

1. For every query, the ranking's first 24 notes (what the old block sent with the gate open)
   and the gate's three signals (best cosine, best term coverage, best lane agreement of the
   first ``pool`` candidates).
2. Weights: a logistic regression of "the notes cover this task" (gold not empty) on the three
   signals, standardised, L2-regularised (``--l2``), fitted by Newton's method in numpy; its
   coefficients divided by the cosine's give ``coverage_weight`` and ``agreement_weight``
   (clipped at 0). The score is then ``cosine + w₁ coverage + w₂ agreement``.
3. Threshold, for a score and a set of queries: the highest recall of the block whose
   false-inject rate on those queries is at most ``--target`` − ``--margin`` (0.15: the margin
   keeps the rate on unseen queries under ``--target``, 0.20) — both fall as the threshold
   rises — placed midway between the lowest covered query that opens and the highest no-match
   query under it (no recall lost, the widest margin, the fewest blocks sent to no-match tasks).
4. Estimate for unseen queries: ``--repeats`` repetitions of stratified ``--folds``-fold
   cross-validation (covered and no-match queries dealt separately into the folds); in every
   fold steps 2 and 3 are redone on the other folds only, and recall of the block and
   false-inject are measured on the held-out fold. The same for the cosine alone, for cosine +
   coverage (the gate before), and for other ``--l2`` values (how much the choice matters).
5. Cross-file check: steps 2 and 3 on each file alone, measured on the other.

Prints a Markdown summary (for docs/BENCHMARKS.md) and, with ``--write``, rewrites
``memory/gate.json`` (threshold, weights, pool, model, data, method, the curve and the checks).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory import MemoryEngine  # noqa: E402
from memory.eval import load_queries  # noqa: E402
from memory.gate import GATE_FILE, load_gate  # noqa: E402

SIGNALS = ("cosine", "coverage", "agreement")
L2_CHECK = (1.0, 3.0, 10.0)


def _recall(gold, names) -> float:
    g = {x.casefold() for x in gold}
    return len(g & {n.casefold() for n in names}) / len(g)


def collect(engine, queries) -> dict:
    """Per query: the three signals (``X``, n × 3), covered?, recall of the open block, file."""
    X, covered, rec, files = [], [], [], []
    from memory.gate import load_gate
    from memory.text import bound_query, coverage, query_terms

    pool = load_gate().pool
    for q in queries:
        query = bound_query(q["query"])
        cands, fetch = engine._rank(query, None)
        rows = fetch(cands[:24])
        top = [c for c in cands[:pool] if c.note_id in rows]
        terms = query_terms(query)
        X.append((max((c.cosine for c in top), default=0.0),
                  max((coverage(terms, *rows[c.note_id][1:4]) for c in top), default=0.0),
                  max((c.rrf for c in top), default=0.0)))
        covered.append(bool(q["gold"]))
        names = [rows[c.note_id][1] for c in cands[:24] if c.note_id in rows]  # the ranking's first 24
        rec.append(_recall(q["gold"], names) if q["gold"] else 0.0)
        files.append(q["file"])
    return {"X": np.array(X, float), "covered": np.array(covered), "recall": np.array(rec),
            "file": np.array(files)}


def logreg(X: np.ndarray, y: np.ndarray, l2: float, iters: int = 50) -> np.ndarray:
    """Coefficients (in the signals' own units, intercept dropped) of an L2-regularised logistic
    regression of ``y`` on ``X``, fitted on standardised columns by Newton's method."""
    mu, sd = X.mean(axis=0), X.std(axis=0) + 1e-9
    Z = np.hstack([(X - mu) / sd, np.ones((len(X), 1))])
    reg = l2 * np.r_[np.ones(X.shape[1]), 0.0]  # the intercept is not shrunk
    b = np.zeros(Z.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-Z @ b))
        step = np.linalg.solve((Z * (p * (1 - p))[:, None]).T @ Z + np.diag(reg), Z.T @ (p - y) + reg * b)
        b -= step
        if np.abs(step).max() < 1e-10:
            break
    return b[:-1] / sd


def fit_weights(X: np.ndarray, covered: np.ndarray, l2: float) -> np.ndarray:
    """Step 2: the weights of the signals against the cosine's (the first is 1)."""
    coef = logreg(X, covered.astype(float), l2)
    if coef[0] <= 0:
        raise SystemExit("the fitted cosine weight is not positive: the labels or signals are broken")
    return np.maximum(coef / coef[0], 0.0)


def fit_threshold(score: np.ndarray, covered: np.ndarray, target: float) -> float:
    """Step 3 (``target``: the false-inject rate allowed on these queries, the margin taken off)."""
    neg = np.sort(score[~covered])[::-1]
    allowed = int(np.floor(target * len(neg) + 1e-9))  # no-match queries that may open
    if allowed >= len(neg):
        return float(score.min())
    shut = neg[allowed]  # the highest no-match score that must stay below the threshold
    kept = score[covered & (score > shut)]  # covered queries that can open
    if not len(kept):
        return float(shut + 1e-6)
    lowest = kept.min()
    # as high as it goes without losing a covered query: midway between the lowest covered
    # score that opens and the highest no-match score under it
    below = neg[neg < lowest].max()
    return float((lowest + below) / 2)


def measure(score, covered, recall, t) -> tuple[float, float]:
    opened = score >= t
    return (float(np.mean(np.where(opened[covered], recall[covered], 0.0))),
            float(np.mean(opened[~covered])) if (~covered).any() else 0.0)


def folds(idx: np.ndarray, covered: np.ndarray, k: int, rng) -> list[np.ndarray]:
    """``idx`` dealt into ``k`` folds, covered and no-match queries separately (stratified)."""
    pos, neg = rng.permutation(idx[covered[idx]]), rng.permutation(idx[~covered[idx]])
    return [np.concatenate([pos[i::k], neg[i::k]]) for i in range(k)]


def fit(d: dict, idx: np.ndarray, columns: list[int], l2: float, fit_target: float) -> tuple[np.ndarray, float]:
    """Steps 2 and 3 on the queries ``idx`` with the signals ``columns`` (the cosine first):
    ``(weights of all three signals, threshold)``."""
    w = np.zeros(len(SIGNALS))
    w[0] = 1.0
    if len(columns) > 1:
        w[columns] = fit_weights(d["X"][idx][:, columns], d["covered"][idx], l2)
    score = d["X"] @ w
    return w, fit_threshold(score[idx], d["covered"][idx], fit_target)


def held_out(d: dict, columns: list[int], l2: float, fit_target: float, k: int, repeats: int,
             seed: int) -> dict:
    """Step 4: mean held-out recall and false-inject (and the false-inject's 90th percentile
    over the repetitions)."""
    rng = np.random.default_rng(seed)
    n = len(d["covered"])
    cov, rec = d["covered"], d["recall"]
    rs, fs = [], []
    for _ in range(repeats):
        opened = np.zeros(n, bool)
        for te in folds(np.arange(n), cov, k, rng):
            tr = np.setdiff1d(np.arange(n), te)
            w, t = fit(d, tr, columns, l2, fit_target)
            opened[te] = d["X"][te] @ w >= t
        rs.append(float(np.mean(np.where(opened[cov], rec[cov], 0.0))))
        fs.append(float(np.mean(opened[~cov])))
    return {"recall": round(float(np.mean(rs)), 4), "false_inject": round(float(np.mean(fs)), 4),
            "false_inject_p90": round(float(np.percentile(fs, 90)), 4)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("queries", nargs="+", help="JSONL query files (pooled)")
    ap.add_argument("--notes", required=True, help="the notes folder the queries are about")
    ap.add_argument("--index", default=None, help="index file (default: per-user cache)")
    ap.add_argument("--target", type=float, default=0.20,
                    help="highest false-inject rate allowed on unseen queries (held out)")
    ap.add_argument("--margin", type=float, default=0.05,
                    help="the threshold is fitted for target − margin on the fitting data")
    ap.add_argument("--l2", type=float, default=3.0, help="L2 penalty of the logistic regression")
    ap.add_argument("--folds", type=int, default=5, help="cross-validation folds")
    ap.add_argument("--repeats", type=int, default=100, help="repetitions of the k-fold split")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--write", action="store_true", help=f"rewrite {GATE_FILE.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    fit_target = round(args.target - args.margin, 4)

    queries = [q for path in args.queries for q in load_queries(path)]
    engine = MemoryEngine(args.notes, index_path=args.index)
    engine.start_warmup()
    engine.wait_ready()
    engine.sync()
    d = collect(engine, queries)
    pool = load_gate().pool
    every = np.arange(len(d["covered"]))
    all3 = [0, 1, 2]

    w, t = fit(d, every, all3, args.l2, fit_target)
    score = d["X"] @ w
    cv = {"shipped": held_out(d, all3, args.l2, fit_target, args.folds, args.repeats, args.seed),
          "cosine_and_coverage": held_out(d, [0, 1], args.l2, fit_target, args.folds, args.repeats, args.seed),
          "cosine_only": held_out(d, [0], args.l2, fit_target, args.folds, args.repeats, args.seed)}
    cv_l2 = [{"l2": l2, **held_out(d, all3, l2, fit_target, args.folds, args.repeats, args.seed)} for l2 in L2_CHECK]
    files = list(dict.fromkeys(d["file"].tolist()))
    per_file = {f: measure(score[d["file"] == f], d["covered"][d["file"] == f], d["recall"][d["file"] == f], t)
                for f in files}
    cross = []
    for a in files:
        for b in files:
            if a != b:
                wa, ta = fit(d, np.flatnonzero(d["file"] == a), all3, args.l2, fit_target)
                mb = d["file"] == b
                rb, fb = measure(d["X"][mb] @ wa, d["covered"][mb], d["recall"][mb], ta)
                cross.append({"fit_on": a, "measured_on": b, "threshold": round(ta, 4),
                              "recall": round(rb, 4), "false_inject": round(fb, 4)})
    grid = sorted({round(x, 2) for x in np.arange(round(t, 2) - 0.20, round(t, 2) + 0.21, 0.01)} | {round(t, 4)})
    curve = []
    for g in grid:
        r, fi = measure(score, d["covered"], d["recall"], g)
        curve.append({"threshold": round(g, 4), "recall": round(r, 4), "false_inject": round(fi, 4)})
    r_all, fi_all = measure(score, d["covered"], d["recall"], t)
    open_recall = float(d["recall"][d["covered"]].mean())

    out = {
        "threshold": round(t, 4),
        "coverage_weight": round(float(w[1]), 4),
        "agreement_weight": round(float(w[2]), 4),
        "pool": pool,
        "model": engine.embedder.model_id,
        "target_false_inject": args.target,
        "fit_false_inject": fit_target,
        "l2": args.l2,
        "fitted_on": files,
        "queries": {"covered": int(d["covered"].sum()), "no_match": int((~d["covered"]).sum())},
        "fitted": _dt.date.today().isoformat(),
        "command": "python bench/fit_gate.py " + " ".join(Path(p).name for p in args.queries)
                   + f" --notes <notes> --target {args.target} --margin {args.margin} --l2 {args.l2}"
                   + f" --folds {args.folds} --repeats {args.repeats} --seed {args.seed} --write",
        "pooled": {"recall": round(r_all, 4), "false_inject": round(fi_all, 4)},
        "open_block_recall": round(open_recall, 4),
        "per_file": {f: {"recall": round(r, 4), "false_inject": round(fi, 4)} for f, (r, fi) in per_file.items()},
        "held_out": {**cv, "repeats": args.repeats, "folds": args.folds, "by_l2": cv_l2},
        "cross_file": cross,
        "curve": curve,
    }
    print(f"## Gate fit ({len(queries)} queries: {out['queries']['covered']} covered, "
          f"{out['queries']['no_match']} no-match; {', '.join(files)})\n")
    print(f"score = best cosine + {out['coverage_weight']} × best term coverage + {out['agreement_weight']} × "
          f"best lane agreement (first {pool} candidates); threshold {out['threshold']} (false-inject ≤ "
          f"{fit_target:.2f} on the fitting data, ≤ {args.target:.2f} held out); recall of the open block "
          f"{open_recall:.3f}\n")
    print("| data | recall of the block | false-inject |\n| --- | ---: | ---: |")
    print(f"| pooled (fitting data) | {r_all:.3f} | {fi_all:.3f} |")
    for f, (r, fi) in per_file.items():
        print(f"| {f} (fitting data) | {r:.3f} | {fi:.3f} |")
    for key, label in (("shipped", "held out: this gate's fit, redone per fold"),
                       ("cosine_and_coverage", "held out: cosine + coverage only"),
                       ("cosine_only", "held out: cosine only")):
        c = cv[key]
        print(f"| {label} ({args.repeats} × {args.folds}-fold; false-inject p90 {c['false_inject_p90']:.3f}) "
              f"| {c['recall']:.3f} | {c['false_inject']:.3f} |")
    for c in cv_l2:
        print(f"| held out, L2 penalty {c['l2']:g} | {c['recall']:.3f} | {c['false_inject']:.3f} |")
    for c in cross:
        print(f"| fit on {c['fit_on']} (threshold {c['threshold']:.3f}), measured on {c['measured_on']} "
              f"| {c['recall']:.3f} | {c['false_inject']:.3f} |")
    print("\n| threshold | recall | false-inject |\n| ---: | ---: | ---: |")
    for p in curve:
        mark = " **(fitted)**" if abs(p["threshold"] - round(t, 4)) < 1e-9 else ""
        print(f"| {p['threshold']:.4g}{mark} | {p['recall']:.3f} | {p['false_inject']:.3f} |")
    if args.write:
        GATE_FILE.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"\nwrote {GATE_FILE}")
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
