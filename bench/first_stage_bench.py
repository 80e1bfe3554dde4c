"""The vector lane's first stage at 100k notes: speed and what it costs in recall.

Builds (once, into ``--work``) the 100k-note bench corpus of ``bench/memory_bench.py`` and its
Cockpit index (a cold index: 15-25 minutes on two cores), then, for each first-stage setting
given, runs the corpus's labelled queries through ``MemoryEngine.search`` (the vector given:
retrieval alone) and compares with the exact scan (first stage off):

- ``search p50``: the whole search (vector lane, keyword lane, fusion), the query vector given;
- ``hit@10``: the target note among the ten results;
- ``overlap``: the share of the exact scan's top ten that the setting also returns.

Usage::

    HF_HUB_OFFLINE=1 python bench/first_stage_bench.py [--size 100000] [--work /tmp/first-stage]
        [--settings 96:25,48:100,32:100]     # dims:share (share: 1/share of the rows re-scored)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--work", default="/tmp/first-stage")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--settings", default="32:100,48:100")
    args = ap.parse_args()

    import memory_bench as mb

    import memory.search as S
    from memory import MemoryEngine

    work = Path(args.work) / str(args.size)
    notes, index, qfile = work / "notes", work / "index.sqlite", work / "queries.json"
    if not qfile.exists():
        _, queries = mb.generate(notes, args.size, 2, args.queries)
        print(f"building the {args.size}-note index (once)…", file=sys.stderr, flush=True)
        e = MemoryEngine(notes, index_path=index)
        e.start_warmup()
        e.wait_ready(600)
        e.sync()
        e.close()
        qfile.write_text(json.dumps(queries))
    queries = json.loads(qfile.read_text())
    e = MemoryEngine(notes, index_path=index)
    e.start_warmup()
    e.wait_ready(600)
    vectors = [e.embed_query(q) for q, _ in queries]

    def run() -> tuple[list[list[str]], float]:
        tops, ms = [], []
        for (q, _), v in zip(queries, vectors, strict=True):
            t = time.perf_counter()
            hits = e.search(q, 10, query_vector=v)
            ms.append((time.perf_counter() - t) * 1000)
            tops.append([str(h.path.relative_to(e.notes_dir)) for h in hits])
        return tops, statistics.median(ms)

    def hit10(tops: list[list[str]]) -> float:
        pairs = [(t, top) for (_, t), top in zip(queries, tops, strict=True) if t]
        return sum(t in top for t, top in pairs) / len(pairs)

    default = (S.FIRST_STAGE_MIN_ROWS, S.FIRST_STAGE_DIMS, S.FIRST_STAGE_SHARE)
    S.FIRST_STAGE_MIN_ROWS = 10**12
    e.mirror.reload(e.store)
    run()
    exact, exact_ms = run()
    print(f"exact scan: search p50 {exact_ms:.2f} ms, hit@10 {hit10(exact):.3f}")
    S.FIRST_STAGE_MIN_ROWS = default[0]
    for setting in args.settings.split(","):
        dims, share = (int(x) for x in setting.split(":"))
        S.FIRST_STAGE_DIMS, S.FIRST_STAGE_SHARE = dims, share
        e.mirror.reload(e.store)
        run()
        tops, ms = run()
        overlap = statistics.mean(len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(tops, exact, strict=True))
        print(f"{dims} dims, 1/{share} of the rows: search p50 {ms:.2f} ms, hit@10 {hit10(tops):.3f}, "
              f"top-10 overlap with the exact scan {overlap:.3f}")
    S.FIRST_STAGE_DIMS, S.FIRST_STAGE_SHARE = default[1], default[2]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
