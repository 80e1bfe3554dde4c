"""Does the second vector per note pay for itself? Recall with one vs two+ texts embedded per note.

Usage (from the repo root)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/vectors_per_note.py \\
        --notes ../shared/recall-dev/notes ../shared/recall-dev/queries.jsonl ../shared/recall-dev/queries_dev2.jsonl

For each variant of what the engine embeds per note, a fresh index of the notes is built and
``memory.eval.run_eval`` (the code behind ``cockpit memory eval``) runs every queries file:

* ``title+body`` — the engine: the title (name + description) and the body in chunks of
  ≤ 120 words (``memory.text.note_texts``); a note's cosine is the max over its vectors;
* ``title`` — the title vector only;
* ``whole`` — one vector of title and body together (what the peers in
  ``bench/peers_bench.py`` embed).

Everything else (BM25 lane, fusion, floor, budget) is the engine's. The texts embedded and the
cold-index seconds are printed beside recall@5 and the false-inject rate, so the cost of the
extra vectors sits next to what they buy.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import memory.engine as engine_mod  # noqa: E402
from memory import MemoryEngine  # noqa: E402
from memory.eval import load_queries, run_eval  # noqa: E402
from memory.text import note_texts, title_text  # noqa: E402


def _title(name, description, body):
    return [title_text(name, description)], ["title"]


def _whole(name, description, body):
    return [f"{title_text(name, description)}\n{body}".strip()], ["title"]


VARIANTS = {"title+body": note_texts, "title": _title, "whole": _whole}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", required=True)
    ap.add_argument("queries", nargs="+")
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    out = {}
    for name, fn in VARIANTS.items():
        engine_mod.note_texts = fn
        with tempfile.TemporaryDirectory() as tmp:
            eng = MemoryEngine(args.notes, index_path=Path(tmp) / "idx.sqlite")
            eng.start_warmup()
            eng.wait_ready()
            t = time.perf_counter()
            rep = eng.sync()
            row = {"texts": rep.embedded, "cold_s": round(time.perf_counter() - t, 2)}
            for qf in args.queries:
                res = run_eval(eng, load_queries(qf), top_k=args.top_k)["engine"]
                row[Path(qf).name] = {"recall": res[f"recall@{args.top_k}"],
                                      "false_inject": res["false_inject_rate"],
                                      "task": res["per_kind"].get("task")}
            eng.close()
        out[name] = row
        print(f"{name:12} texts {row['texts']:5}  cold {row['cold_s']:6.2f} s  " + "  ".join(
            f"{k}: recall@{args.top_k} {v['recall']:.3f} false-inject {v['false_inject']:.3f}"
            for k, v in row.items() if isinstance(v, dict)))
    engine_mod.note_texts = note_texts
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
