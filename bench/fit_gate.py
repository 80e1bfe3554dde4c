"""Fit the preseed gate (``memory/gate.json``) on labelled queries. See :mod:`memory.gate`.

Usage (from the repo root; the development split lives beside the repo)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/fit_gate.py \\
        ../shared/recall-dev/queries.jsonl ../shared/recall-dev/queries_dev2.jsonl \\
        --notes ../shared/recall-dev/notes --write          # rewrite memory/gate.json

Method (nothing here looks at single queries; every choice is made on pooled data):

1. For every query, ``build_preseed(gate_threshold=0)``: the block the ranking sends with the
   gate open, and the gate's two signals (best cosine, best term coverage of the first
   ``pool`` candidates).
2. ``coverage_weight`` λ: for each λ on a grid (0 … 0.8, step 0.05), ``--splits`` random
   half/half splits of the queries (stratified: half of the covered, half of the no-match
   queries); on each, the threshold is fitted on one half (rule 3) and recall / false-inject
   measured on the other. The λ with the best mean held-out recall wins (ties: the smaller).
3. Threshold: over all queries pooled, the highest recall of the block whose false-inject
   rate is at most ``--target`` (0.20) — both fall as the threshold rises — and, among the
   thresholds giving it, the one midway between the lowest covered query that opens and the
   highest no-match query under it (no recall lost, the widest margin, the fewest blocks sent
   to no-match tasks).
4. Cross-file check: the threshold fitted on each file alone (same λ), measured on the other.

Prints a Markdown summary (for docs/BENCHMARKS.md) and, with ``--write``, rewrites
``memory/gate.json`` (threshold, weight, pool, model, data, method, the curve and the checks).
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

LAMBDAS = [round(0.05 * i, 2) for i in range(17)]


def _recall(gold, names) -> float:
    g = {x.casefold() for x in gold}
    return len(g & {n.casefold() for n in names}) / len(g)


def collect(engine, queries) -> dict:
    """Per query: covered?, recall of the open block, cosine and coverage signals, file."""
    cos, cov, covered, rec, files = [], [], [], [], []
    for q in queries:
        pre = engine.build_preseed(q["query"], gate_threshold=0.0)
        c, v = pre.gate_signals
        cos.append(c)
        cov.append(v)
        covered.append(bool(q["gold"]))
        rec.append(_recall(q["gold"], [h.name for h in pre.hits]) if q["gold"] else 0.0)
        files.append(q["file"])
    return {"cos": np.array(cos), "cov": np.array(cov), "covered": np.array(covered),
            "recall": np.array(rec), "file": np.array(files)}


def fit_threshold(score: np.ndarray, covered: np.ndarray, target: float) -> float:
    """Rule 3 of the module docstring."""
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


def choose_lambda(d: dict, target: float, splits: int, seed: int) -> tuple[float, dict]:
    rng = np.random.default_rng(seed)
    pos, neg = np.where(d["covered"])[0], np.where(~d["covered"])[0]
    held: dict[float, list] = {lam: [] for lam in LAMBDAS}
    for _ in range(splits):
        tr = np.concatenate([rng.choice(pos, len(pos) // 2, replace=False),
                             rng.choice(neg, len(neg) // 2, replace=False)])
        te = np.setdiff1d(np.arange(len(pos) + len(neg)), tr)
        for lam in LAMBDAS:
            s = d["cos"] + lam * d["cov"]
            t = fit_threshold(s[tr], d["covered"][tr], target)
            held[lam].append(measure(s[te], d["covered"][te], d["recall"][te], t))
    table = {lam: (float(np.mean([r for r, _ in v])), float(np.mean([f for _, f in v])))
             for lam, v in held.items()}
    best = max(LAMBDAS, key=lambda lam: (round(table[lam][0], 3), -lam))
    return best, table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("queries", nargs="+", help="JSONL query files (pooled)")
    ap.add_argument("--notes", required=True, help="the notes folder the queries are about")
    ap.add_argument("--index", default=None, help="index file (default: per-user cache)")
    ap.add_argument("--target", type=float, default=0.20, help="highest false-inject rate allowed")
    ap.add_argument("--splits", type=int, default=400, help="random half/half splits for λ")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--write", action="store_true", help=f"rewrite {GATE_FILE.relative_to(ROOT)}")
    args = ap.parse_args(argv)

    queries = [q for path in args.queries for q in load_queries(path)]
    engine = MemoryEngine(args.notes, index_path=args.index)
    engine.start_warmup()
    engine.wait_ready()
    engine.sync()
    d = collect(engine, queries)
    pool = load_gate().pool

    lam, table = choose_lambda(d, args.target, args.splits, args.seed)
    score = d["cos"] + lam * d["cov"]
    t = fit_threshold(score, d["covered"], args.target)
    files = list(dict.fromkeys(d["file"].tolist()))
    per_file = {f: measure(score[d["file"] == f], d["covered"][d["file"] == f],
                           d["recall"][d["file"] == f], t) for f in files}
    cross = []
    for a in files:
        for b in files:
            if a != b:
                ma, mb = d["file"] == a, d["file"] == b
                ta = fit_threshold(score[ma], d["covered"][ma], args.target)
                cross.append({"fit_on": a, "measured_on": b, "threshold": round(ta, 4),
                              "recall": round(measure(score[mb], d["covered"][mb], d["recall"][mb], ta)[0], 4),
                              "false_inject": round(measure(score[mb], d["covered"][mb], d["recall"][mb], ta)[1], 4)})
    base = d["cos"]
    t0 = fit_threshold(base, d["covered"], args.target)
    cosine_only = measure(base, d["covered"], d["recall"], t0)
    grid = sorted({round(x, 2) for x in np.arange(round(t, 2) - 0.20, round(t, 2) + 0.21, 0.01)} | {round(t, 4)})
    curve = []
    for g in grid:
        r, fi = measure(score, d["covered"], d["recall"], g)
        curve.append({"threshold": round(g, 4), "recall": round(r, 4), "false_inject": round(fi, 4)})
    r_all, fi_all = measure(score, d["covered"], d["recall"], t)

    out = {
        "threshold": round(t, 4),
        "coverage_weight": lam,
        "pool": pool,
        "model": engine.embedder.model_id,
        "target_false_inject": args.target,
        "fitted_on": files,
        "queries": {"covered": int(d["covered"].sum()), "no_match": int((~d["covered"]).sum())},
        "fitted": _dt.date.today().isoformat(),
        "command": "python bench/fit_gate.py " + " ".join(Path(p).name for p in args.queries)
                   + f" --notes <notes> --target {args.target} --splits {args.splits} --seed {args.seed} --write",
        "pooled": {"recall": round(r_all, 4), "false_inject": round(fi_all, 4)},
        "per_file": {f: {"recall": round(r, 4), "false_inject": round(fi, 4)} for f, (r, fi) in per_file.items()},
        "cross_file": cross,
        "cosine_only": {"threshold": round(t0, 4), "recall": round(cosine_only[0], 4),
                        "false_inject": round(cosine_only[1], 4)},
        "lambda_held_out": [{"coverage_weight": k, "recall": round(v[0], 4), "false_inject": round(v[1], 4)}
                            for k, v in table.items()],
        "curve": curve,
    }
    print(f"## Gate fit ({len(queries)} queries: {out['queries']['covered']} covered, "
          f"{out['queries']['no_match']} no-match; {', '.join(files)})\n")
    print(f"score = best cosine + {lam} × best term coverage (first {pool} candidates); "
          f"threshold {t:.4f} (false-inject ≤ {args.target:.2f}, pooled)\n")
    print("| data | recall of the block | false-inject |\n| --- | ---: | ---: |")
    print(f"| pooled | {r_all:.3f} | {fi_all:.3f} |")
    for f, (r, fi) in per_file.items():
        print(f"| {f} | {r:.3f} | {fi:.3f} |")
    print(f"| pooled, cosine only (threshold {t0:.3f}) | {cosine_only[0]:.3f} | {cosine_only[1]:.3f} |")
    for c in cross:
        print(f"| fit on {c['fit_on']} (threshold {c['threshold']:.3f}), measured on {c['measured_on']} "
              f"| {c['recall']:.3f} | {c['false_inject']:.3f} |")
    print("\nλ (coverage weight) → mean held-out recall / false-inject over "
          f"{args.splits} half/half splits:")
    print("  " + "  ".join(f"{k:.2f}: {v[0]:.3f}/{v[1]:.3f}" for k, v in table.items()))
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
