"""Cold index throughput: notes per CPU-second (and per wall second) of one ``sync()`` of a new
corpus, the model loaded before the clock starts.

Usage (from the repo root)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/cold_index.py --size 10000 --seed 5

The corpus is ``bench/memory_bench.py``'s generator (a new ``--seed``: texts no run has seen);
CPU time is this process's (every thread: the encoder's batches run side by side).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import memory_bench as mb  # noqa: E402

from memory import MemoryEngine  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="cold-index-"))
    try:
        os.environ.setdefault("COCKPIT_DATA_DIR", str(tmp / "data"))
        mb.generate(tmp / "notes", args.size, args.seed, 4)
        eng = MemoryEngine(tmp / "notes", index_path=tmp / "idx.sqlite")
        eng.start_warmup()
        assert eng.wait_ready(600), eng.status().model_error
        load0 = os.getloadavg()[0]
        t, c = time.perf_counter(), time.process_time()
        rep = eng.sync()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        print(f"{rep.added} notes, {rep.embedded} texts: wall {wall:.1f} s, CPU {cpu:.1f} s → "
              f"{rep.added / cpu:.1f} notes per CPU-second, {rep.added / wall:.1f} per second "
              f"(load average {load0:.1f} → {os.getloadavg()[0]:.1f})")
        eng.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
