"""Paired A/B of ``build_preseed`` between a past commit's ``memory/`` and the working tree's.

Usage (from the repo root)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/preseed_ab.py --old c2b8742 [--size 10000] [--rounds 30]

Both engines run in one process on one index (the generated corpus of ``bench/memory_bench.py``,
``--size`` notes, indexed with its hash embedder so the index takes seconds, not the 20 minutes
MiniLM needs at 10k), alternating query by query (the order flips every round), each query's
vector given — so the figure is the engine's own cost of a preseed (ranking, gate, rows, lines),
the part a code change can move; the query embedding is the same model call in both. The gates
are forced open (``gate_threshold=0`` for the new engine, ``GATE_COS``/``MEMBER_COS`` = −1 for an
engine of before the calibrated gate), so both build a full block: the worst case.

Prints p50/p95 of each and the median and quartiles of the per-pair ratio new/old. On a shared
machine the pairing is what makes the ratio meaningful: both sides of a pair see the same load.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def old_package(rev: str, dest: Path) -> None:
    """``memory/`` at ``rev`` as the package ``memory_old`` under ``dest``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "memory"], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    (dest / "memory").rename(dest / "memory_old")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, help="commit of the engine to compare against")
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="preseed-ab-"))
    old_package(args.old, tmp)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(1, str(tmp))
    sys.path.insert(2, str(ROOT / "bench"))
    import memory_bench as mb
    import memory_old
    import memory_old.preseed as old_preseed

    import memory

    _, queries = mb.generate(tmp / "notes", args.size, 2, args.queries)
    qs = [q for q, _ in queries]
    emb = mb.HashEmbedder()
    new = memory.MemoryEngine(tmp / "notes", index_path=tmp / "idx.sqlite", model=emb)
    new.sync()
    old = memory_old.MemoryEngine(tmp / "notes", index_path=tmp / "idx.sqlite", model=emb)
    old.sync()
    if hasattr(old_preseed, "GATE_COS"):  # the engine before the calibrated gate
        old_preseed.GATE_COS = old_preseed.MEMBER_COS = -1.0

        def f_old(q):
            return old.build_preseed(q, 5, query_vector=vecs[q])
    else:
        def f_old(q):
            return old.build_preseed(q, query_vector=vecs[q], gate_threshold=0.0)

    def f_new(q):
        return new.build_preseed(q, query_vector=vecs[q], gate_threshold=0.0)

    vecs = {q: new.embed_query(q) for q in qs}
    for q in qs:  # warm: row caches, snippets, the gate file
        f_new(q)
        f_old(q)
    tn: list[float] = []
    to: list[float] = []
    for r in range(args.rounds):
        for i, q in enumerate(qs):
            pair = [(f_old, to), (f_new, tn)] if (i + r) % 2 else [(f_new, tn), (f_old, to)]
            for f, acc in pair:
                t0 = time.perf_counter()
                f(q)
                acc.append((time.perf_counter() - t0) * 1000)
    ratios = sorted(a / b for a, b in zip(tn, to, strict=False))
    pct = lambda xs, p: sorted(xs)[int(p * len(xs))]  # noqa: E731
    print(json.dumps({
        "old": args.old, "size": args.size, "pairs": len(tn),
        "old_ms": {"p50": round(statistics.median(to), 3), "p95": round(pct(to, 0.95), 3)},
        "new_ms": {"p50": round(statistics.median(tn), 3), "p95": round(pct(tn, 0.95), 3)},
        "lines": {"old": len(f_old(qs[0]).hits), "new": len(f_new(qs[0]).hits)},
        "ratio_new_over_old": {"p50": round(statistics.median(ratios), 3),
                               "p25": round(pct(ratios, 0.25), 3), "p75": round(pct(ratios, 0.75), 3)},
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
