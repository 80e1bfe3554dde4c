"""Fit the per-note judge (memory/judge.json) on every labelled development file, pooled.

    HF_HUB_OFFLINE=1 python bench/fit_judge.py [--shared ../shared/recall-dev] [--write]

For each file: index its notes folder (a fresh temporary data folder), rank each query, take the
first ``POOL`` candidates by lane agreement (no priority lift), compute
:func:`memory.judge.features` and label each candidate by the query's gold names. A logistic
regression (L2, Newton steps, standardised features) is fitted on all candidates of all files.

The line threshold is the one with the highest pooled line recall among those keeping, on the
fitting data, at most ``MAX_EXTRA`` not-needed lines per query on average and a false-inject rate
(no-match tasks that get a line) at most ``MAX_FI``. The index floor is ``INDEX_FLOOR``: the index lists the next candidates but the
negligible ones, as far as its budget goes. Held out: the same fit and threshold choice in each fold of a repeated 5-fold
split of the queries (stratified by file), measured on the left-out queries; and on each file
with the model fitted on the two others (the "new corpus" check). Also printed: BM25 alone and
the plain fused ranking at the same number of lines, on the held-out folds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.judge import FEATURES, JUDGE_FILE, features, name_words  # noqa: E402
from memory.text import content_terms, query_terms  # noqa: E402

POOL = 20
MAX_LINES = 6
MAX_EXTRA = 1.5      # margin under the 2 extra lines a query, for unseen tasks
MAX_FI = 0.08        # margin under 0.10
INDEX_FLOOR = 0.005  # the index lists every candidate but the negligible ones (a task no note
                     # covers gets at most the index: "may be relevant", never a line)
L2 = 1.0


def collect(shared: Path) -> list[dict]:
    """One record a query: file, kind, gold, names, X (features), bm25 order."""
    from memory import MemoryEngine
    from memory.text import bound_query

    sets = [("queries.jsonl", shared / "queries.jsonl", shared / "notes"),
            ("queries_dev2.jsonl", shared / "queries_dev2.jsonl", shared / "notes"),
            ("realworld", shared / "realworld" / "queries.jsonl", shared / "realworld" / "notes")]
    out = []
    engines: dict[Path, object] = {}
    tmp = tempfile.mkdtemp(prefix="fit-judge-")
    os.environ["COCKPIT_DATA_DIR"] = tmp
    for label, qfile, notes in sets:
        if notes not in engines:
            eng = MemoryEngine(notes, Path(tmp) / f"{len(engines)}.sqlite")
            eng.sync()
            engines[notes] = eng
        eng = engines[notes]
        for line in qfile.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            q = json.loads(line)
            query = bound_query(q["query"])
            cands, fetch = eng._rank(query, None)  # type: ignore[attr-defined]
            cands = sorted(cands, key=lambda c: (-c.rrf, -c.cosine, c.note_id))
            rows = fetch(cands[: POOL * 2])
            seen, pool = set(), []
            for c in cands[: POOL * 2]:
                row = rows.get(c.note_id)
                if row is None or row[1].casefold() in seen:
                    continue
                seen.add(row[1].casefold())
                pool.append(c)
                if len(pool) == POOL:
                    break
            x = features(pool, rows, query_terms(query), set(content_terms(query)))
            names = [rows[c.note_id][1] for c in pool]
            bm25 = [rows[c.note_id][1] for c in sorted((c for c in pool if c.bm25_rank), key=lambda c: c.bm25_rank)]
            out.append({"file": label, "kind": q.get("kind", ""), "gold": [g.casefold() for g in q["gold"]],
                        "names": [n.casefold() for n in names], "x": x, "bm25": [n.casefold() for n in bm25]})
    return out


def fit(recs: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    x = np.vstack([r["x"] for r in recs])
    y = np.concatenate([[n in r["gold"] for n in r["names"]] for r in recs]).astype(float)
    mean, scale = x.mean(0), x.std(0)
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    reg = np.full(z.shape[1], L2)
    reg[-1] = 0.0
    for _ in range(50):  # Newton / IRLS
        p = 1 / (1 + np.exp(-np.clip(z @ w, -40, 40)))
        grad = z.T @ (p - y) + reg * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return mean, scale, w[:-1], float(w[-1])


def probs(r: dict, model) -> np.ndarray:
    mean, scale, w, b = model
    return 1 / (1 + np.exp(-np.clip(((r["x"] - mean) / scale) @ w + b, -40, 40)))


def measure(recs: list[dict], model, line: float, index: float | None = None) -> dict:
    rec, extra, fi, fi_any, nlines = [], [], [], [], []
    for r in recs:
        p = probs(r, model)
        lines = [n for n, q in zip(r["names"], p, strict=True) if q >= line][:MAX_LINES]
        indexed = [n for n, q in zip(r["names"], p, strict=True) if index is not None and index <= q < line]
        extra.append(sum(n not in r["gold"] for n in lines))
        nlines.append(len(lines))
        if r["gold"]:
            rec.append(len(set(lines) & set(r["gold"])) / len(r["gold"]))
        else:
            fi.append(bool(lines))
            fi_any.append(bool(lines or indexed))
    return {"line_recall": float(np.mean(rec)), "extra_lines": float(np.mean(extra)),
            "false_inject_lines": float(np.mean(fi)) if fi else 0.0,
            "false_inject_any": float(np.mean(fi_any)) if fi_any else 0.0, "lines": float(np.mean(nlines))}


def choose(recs: list[dict], model) -> tuple[float, float]:
    best = None
    for t in np.arange(0.05, 0.96, 0.01):
        m = measure(recs, model, float(t))
        if m["extra_lines"] <= MAX_EXTRA and m["false_inject_lines"] <= MAX_FI:
            if best is None or m["line_recall"] > best[1]:
                best = (float(t), m["line_recall"])
    line = best[0] if best else 0.95
    return round(line, 2), INDEX_FLOOR


def recall_at(recs, order_of, k) -> float:
    vals = [len(set(order_of(r)[:k]) & set(r["gold"])) / len(r["gold"]) for r in recs if r["gold"]]
    return float(np.mean(vals))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "recall-dev"))
    ap.add_argument("--write", action="store_true", help=f"write {JUDGE_FILE.name}")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    recs = collect(Path(args.shared))
    model = fit(recs)
    line, index = choose(recs, model)
    files = sorted({r["file"] for r in recs})
    report = {"fit": {f: measure([r for r in recs if r["file"] == f], model, line, index) for f in files}}
    report["fit"]["pooled"] = measure(recs, model, line, index)
    rng = np.random.default_rng(0)
    held: list[dict] = []
    for _ in range(args.repeats):
        folds = [[] for _ in range(5)]
        for f in files:
            idx = [i for i, r in enumerate(recs) if r["file"] == f]
            rng.shuffle(idx)
            for j, i in enumerate(idx):
                folds[j % 5].append(i)
        for k in range(5):
            test = [recs[i] for i in folds[k]]
            train = [recs[i] for j in range(5) if j != k for i in folds[j]]
            m = fit(train)
            t_line, t_index = choose(train, m)
            mm = measure(test, m, t_line, t_index)
            lines = max(1, round(mm["lines"]))
            mm["judge_recall@lines"] = recall_at(test, lambda r, m=m: [n for _, n in sorted(
                zip(-probs(r, m), r["names"], strict=True))], lines)
            mm["bm25_recall@lines"] = recall_at(test, lambda r: r["bm25"], lines)
            mm["fused_recall@lines"] = recall_at(test, lambda r: r["names"], lines)
            mm["judge_recall@3"] = recall_at(test, lambda r, m=m: [n for _, n in sorted(
                zip(-probs(r, m), r["names"], strict=True))], 3)
            mm["bm25_recall@3"] = recall_at(test, lambda r: r["bm25"], 3)
            held.append(mm)
    report["held_out"] = {k: round(float(np.mean([h[k] for h in held])), 3) for k in held[0]}
    cross = {}
    for f in files:
        train = [r for r in recs if r["file"] != f]
        m = fit(train)
        t_line, t_index = choose(train, m)
        cross[f] = measure([r for r in recs if r["file"] == f], m, t_line, t_index)
    report["leave_one_file_out"] = cross
    report["line"], report["index"] = line, index
    print(json.dumps(report, indent=1, default=lambda v: round(v, 3)))
    if args.write:
        mean, scale, w, b = model
        JUDGE_FILE.write_text(json.dumps({
            "features": list(FEATURES), "mean": mean.round(6).tolist(), "scale": scale.round(6).tolist(),
            "weights": w.round(6).tolist(), "bias": round(b, 6), "line": line, "index": index, "pool": POOL,
            "max_lines": MAX_LINES, "model": "sentence-transformers/all-MiniLM-L6-v2",
            "fitted_on": ["queries.jsonl", "queries_dev2.jsonl", "realworld/queries.jsonl"],
            "report": json.loads(json.dumps(report, default=lambda v: round(v, 3))),
        }, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {JUDGE_FILE}")


if __name__ == "__main__":
    _ = name_words  # (re-exported for the features' documentation)
    main()
