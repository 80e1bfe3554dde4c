"""Issue 24, target 4: the preseed against the bare encoder forward, paired in one process.

Usage (from the repo root)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/preseed_ratio.py --work /tmp/preseed-10k --rounds 7
    HF_HUB_OFFLINE=1 .venv/bin/python bench/preseed_ratio.py --work /tmp/preseed-10k --profile 200

Method
------
* **Corpus**: ``bench/memory_bench.py``'s generator at ``--size`` notes (default 10k, seed 2, the
  peers run's corpus) and its ``--queries`` target-note queries plus 4 off-topic tasks. The
  folder and its index are kept in ``--work``: a second run reuses them (the cold index of 10k
  notes takes 10-20 minutes on two cores).
* **Pairs**: each query text gets a tag no run has used (the run's random id and the round), so
  no cache keyed by the text has seen it; the engine's query-vector cache is cleared before
  every call as well. Each text is timed as (a) ``build_preseed(text, 5)`` — a real forward pass,
  both lanes, fusion, the judge and the rendered block — and (b) ``embed_query(text)``, the bare
  forward pass, one right after the other, the order alternating from pair to pair. Then the
  same for (c) ``search(text, 5, query_vector=v)`` and (d) a numpy scan of the same matrix
  (``mat @ v``, top 5: the floor of an exact vector lane) on one BLAS thread, as the engine runs
  its mat-vecs. The scan on numpy's default BLAS threads (as ``bench/peers_bench.py`` times it)
  is timed after all rounds, paired with the same searches: a threaded mat-vec leaves BLAS
  workers spinning, which would bill CPU to the next call timed.
* **Like for like**: that threaded scan runs again and again over a matrix it keeps in the
  caches, while each search follows a forward pass (90 MB of weights through the caches). So
  both are also timed in the same two states, each round's searches before its scans: right
  after a forward pass (``search_over_scan_both_after_forward``: what a preseed's search meets)
  and right after the same call (``search_over_scan_both_warm``), each with a fresh text.
* **Figures**: per round the median of the per-pair ratios a/b and c/d; the run's figure is the
  median over all pairs, with the spread of the round medians beside it. Wall time
  (``perf_counter``) and CPU time (``process_time``: every thread of the process, the preseed's
  side thread included) are both given: on a loaded box the wall ratio moves with the other
  processes, the CPU ratio much less.
* ``--profile N``: instead, cProfile ``N`` preseeds with the query vector given (the part that
  is not the forward pass) and print the top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import secrets
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
import memory_bench as mb  # noqa: E402 - the corpus generator


def _engine(work: Path, size: int, seed: int, n_queries: int):
    from memory import MemoryEngine

    notes_dir = work / "notes"
    stamp = work / "corpus.json"
    if stamp.exists() and json.loads(stamp.read_text()) == [size, seed, n_queries]:
        queries = json.loads((work / "queries.json").read_text())
    else:
        _notes, queries = mb.generate(notes_dir, size, seed, n_queries)
        (work / "queries.json").write_text(json.dumps(queries))
        stamp.write_text(json.dumps([size, seed, n_queries]))
    eng = MemoryEngine(notes_dir, index_path=work / "cockpit.sqlite")
    eng.start_warmup()
    if not eng.wait_ready(600):
        raise SystemExit(f"the model did not load: {eng.status().model_error}")
    t = time.perf_counter()
    rep = eng.sync()
    print(f"sync: {rep.added} notes added, {rep.embedded} texts embedded, {time.perf_counter() - t:.1f} s",
          file=sys.stderr)
    return eng, [q for q, _ in queries]


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, (time.perf_counter() - w) * 1000, (time.process_time() - c) * 1000


def measure(eng, texts: list[str], rounds: int) -> dict:
    """The pairs, in two passes: every round's preseed/forward and search/one-thread-scan pairs
    first, then the scans on numpy's default BLAS threads — a threaded mat-vec leaves BLAS
    workers spinning for a while, which would bill their CPU to whatever is timed next."""
    import numpy as np

    from memory.search import one_blas_thread

    run = secrets.token_hex(3)
    keys = ("pre_w", "pre_c", "enc_w", "enc_c", "srch_w", "srch_c", "scan1_w", "scan1_c", "scan_w", "scan_c")
    pairs: dict[str, list[list[float]]] = {k: [] for k in keys}
    hits_before = eng.query_cache_hits
    m = eng.mirror
    mat = m._mat[: m._n]
    vectors: list[list] = []

    def scan(v):
        return np.argpartition(mat @ v, len(mat) - 5)[-5:]

    def scan1(v):
        with one_blas_thread():
            return scan(v)

    for r in range(rounds):
        per: dict[str, list[float]] = {k: [] for k in keys}
        vectors.append([])
        for i, q in enumerate(texts):
            text = f"{q} (#{run}-{r})"  # never seen: no cache keyed by the text has it

            def pre(text=text):
                eng._qcache.clear()
                return eng.build_preseed(text, 5)

            def enc(text=text):
                eng._qcache.clear()
                return eng.embed_query(text)

            first = (i + r) % 2 == 0  # the order alternates from pair to pair
            if first:
                _, pw, pc = _timed(pre)
                v, ew, ec = _timed(enc)
            else:
                v, ew, ec = _timed(enc)
                _, pw, pc = _timed(pre)
            vectors[r].append(v)

            def srch(text=text, v=v):
                return eng.search(text, 5, query_vector=v)

            if first:
                _, sw, sc = _timed(srch)
                _, nw, nc = _timed(lambda v=v: scan1(v))
            else:
                _, nw, nc = _timed(lambda v=v: scan1(v))
                _, sw, sc = _timed(srch)
            for k, x in zip(keys, (pw, pc, ew, ec, sw, sc, nw, nc), strict=False):
                per[k].append(x)
        for k in keys[:8]:
            pairs[k].append(per[k])
        print(f"round {r + 1}/{rounds}: preseed/forward {_ratio(per, 'pre_w', 'enc_w'):.3f} wall, "
              f"{_ratio(per, 'pre_c', 'enc_c'):.3f} CPU; search/scan(1 thread) {_ratio(per, 'srch_w', 'scan1_w'):.3f} "
              f"wall (load {os.getloadavg()[0]:.1f})", file=sys.stderr)
    for r in range(rounds):  # the scans on numpy's default threads, paired with the same searches
        pairs["scan_w"].append([])
        pairs["scan_c"].append([])
        for v in vectors[r]:
            _, nw, nc = _timed(lambda v=v: scan(v))
            pairs["scan_w"][r].append(nw)
            pairs["scan_c"][r].append(nc)
    for k in ("srch_cold_w", "srch_cold_c", "scan_cold_w", "scan_cold_c",
              "srch_warm_w", "srch_warm_c", "scan_warm_w", "scan_warm_c"):
        pairs[k] = []
    for r in range(rounds):  # the search and the threaded scan in the same state of the caches
        per = {k: [] for k in ("srch_cold_w", "srch_cold_c", "scan_cold_w", "scan_cold_c",
                               "srch_warm_w", "srch_warm_c", "scan_warm_w", "scan_warm_c")}
        # each round's searches first, then its scans: a threaded scan leaves BLAS workers spinning,
        # which would bill CPU to a search timed after it
        for kind in ("srch", "scan"):
            for q, v in zip(texts, vectors[r], strict=True):
                def fresh(tag: str, q=q, r=r) -> str:
                    return f"{q} (#{run}-{tag}{r}-{secrets.token_hex(2)})"

                def call(v=v, kind=kind):
                    return eng.search(fresh("s"), 5, query_vector=v) if kind == "srch" else scan(v)

                eng._qcache.clear()
                eng.embed_query(fresh("f"))  # as in a preseed: the model's weights have just gone through
                _, w, c = _timed(call)
                per[f"{kind}_cold_w"].append(w)
                per[f"{kind}_cold_c"].append(c)
                call()  # then warm: the caches hold what the call reads
                _, w, c = _timed(call)
                per[f"{kind}_warm_w"].append(w)
                per[f"{kind}_warm_c"].append(c)
        for k, xs in per.items():
            pairs[k].append(xs)
    if eng.query_cache_hits != hits_before:
        raise SystemExit("a query-cache hit: the figures would not be of new texts")
    return pairs


def _ratio(per: dict[str, list[float]], a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(per[a], per[b], strict=True) if y > 0)


def report(pairs: dict[str, list[list[float]]]) -> dict:
    rounds = len(pairs["pre_w"])
    flat = {k: [x for rr in v for x in rr] for k, v in pairs.items()}
    out: dict = {"rounds": rounds, "pairs": len(flat["pre_w"]), "loadavg": os.getloadavg()[0]}
    for name, a, b in (("preseed_over_forward", "pre", "enc"), ("search_over_scan", "srch", "scan"),
                       ("search_over_scan_one_blas_thread", "srch", "scan1"),
                       ("search_over_scan_both_after_forward", "srch_cold", "scan_cold"),
                       ("search_over_scan_both_warm", "srch_warm", "scan_warm")):
        for clock in ("w", "c"):
            by_round = [_ratio({k: pairs[k][r] for k in pairs}, f"{a}_{clock}", f"{b}_{clock}")
                        for r in range(rounds)]
            out[f"{name}_{'wall' if clock == 'w' else 'cpu'}"] = {
                "median": _ratio(flat, f"{a}_{clock}", f"{b}_{clock}"),
                "round_min": min(by_round), "round_max": max(by_round)}
    for k, xs in flat.items():
        out[f"{k}_p50_ms"] = statistics.median(xs)
    return out


def profile(eng, texts: list[str], n: int) -> None:
    vecs = [eng.embed_query(f"{q} (#profile)") for q in texts]
    for q, v in zip(texts, vecs, strict=True):  # warm every path once
        eng.build_preseed(q, 5, query_vector=v)
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    for i in range(n):
        j = i % len(texts)
        eng.build_preseed(f"{texts[j]} (#p{i})", 5, query_vector=vecs[j])
    prof.disable()
    print(f"{n} preseeds without the forward pass: {(time.perf_counter() - t) / n * 1000:.2f} ms each "
          "(under the profiler)", file=sys.stderr)
    pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(30)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, help="folder for the corpus and its index (kept, reused)")
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--queries", type=int, default=40, help="target-note queries (+4 off-topic)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--profile", type=int, metavar="N", help="cProfile N preseeds (query vector given) instead")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    eng, texts = _engine(work, args.size, args.seed, args.queries)
    for q in texts[:8]:  # warm every path once
        eng._qcache.clear()
        eng.build_preseed(f"{q} (#warm)", 5)
        eng.search(q, 5)
    if args.profile:
        profile(eng, texts, args.profile)
        return 0
    res = report(measure(eng, texts, args.rounds))
    print(json.dumps(res, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
