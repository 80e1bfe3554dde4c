"""Should the encoder be int8? fp32 vs dynamically quantised int8 MiniLM under ONNX Runtime.

Usage (from the repo root; one notes folder and its query files per call)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/quantized_encoder.py \\
        --notes ../shared/recall-dev/notes ../shared/recall-dev/queries.jsonl ../shared/recall-dev/queries_dev2.jsonl
    HF_HUB_OFFLINE=1 .venv/bin/python bench/quantized_encoder.py --per-channel --notes-only \\
        --notes ../shared/recall-dev/realworld/notes ../shared/recall-dev/realworld/queries.jsonl

The fp32 graph is the engine's (``memory.onnx_model.ensure_onnx``); the int8 one is
``onnxruntime.quantization.quantize_dynamic`` of it (int8 weights, per tensor or with
``--per-channel`` per output column; activations quantised per batch). For each: the bulk
encoder's throughput on the notes' own texts (``memory.text.note_texts``, texts per CPU-second
of this process, one thread, best of two passes, variants alternated) and the cosine of each
int8 vector with fp32's; the query embedding p50 (one text, every query of the files, 3
passes); the top-10 overlap of the vector lane with fp32's over those queries; and recall@5 /
recall@10 / false-inject rate of the whole engine (``memory.eval.run_eval``) on an index built
with that variant. Queries go through the same graph as the index, unless ``--notes-only``:
then only the notes are int8 and every query is fp32 (a cold index at int8 speed, queries and
the judge's calibrated cosines unchanged).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

import memory.onnx_model as om  # noqa: E402
from memory import MemoryEngine  # noqa: E402
from memory.embedder import resolve_model  # noqa: E402
from memory.eval import load_queries, run_eval  # noqa: E402
from memory.text import note_texts  # noqa: E402


class _Pair:
    """An embedder for MemoryEngine: ``notes`` encodes while ``bulk`` is set (the sync), ``queries`` otherwise."""

    runtime = "onnxruntime"

    def __init__(self, notes, queries, model_id):
        self.notes, self.queries, self.model_id, self.dim, self.bulk = notes, queries, model_id, notes.dim, False
        self.ready = True

    def start(self):
        pass

    def wait(self, timeout=None):
        return True

    def encode(self, texts, batch_size=64):
        return (self.notes if self.bulk else self.queries).encode(list(texts))


def _encoder(path: Path) -> om.OnnxEncoder:
    real = om.ensure_onnx
    om.ensure_onnx = lambda *_a: path
    try:
        model_id, target = resolve_model(None)
        return om.OnnxEncoder(target, model_id, threads=1)
    finally:
        om.ensure_onnx = real


def _note_texts(folder: str) -> list[str]:
    """The texts the engine embeds for every note of ``folder``."""
    from memory.notes import FileEntry, read_note

    out = []
    for p in sorted(Path(folder).rglob("*.md")):
        st = p.stat()
        try:
            n = read_note(FileEntry(str(p.relative_to(folder)), str(p), st.st_mtime_ns, st.st_size))
        except Exception:
            continue
        out += note_texts(n.name, n.description, n.body)[0]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", required=True)
    ap.add_argument("--per-channel", action="store_true", help="int8 weights per output column")
    ap.add_argument("--notes-only", action="store_true", help="only the index int8; queries fp32")
    ap.add_argument("queries", nargs="+")
    args = ap.parse_args(argv)
    model_id, target = resolve_model(None)
    fp32 = om.ensure_onnx(target, model_id)
    assert isinstance(fp32, Path)
    int8 = Path(tempfile.gettempdir()) / f"cockpit-minilm.int8{'pc' if args.per_channel else ''}.onnx"
    if not int8.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=args.per_channel)
    encs = {"fp32": _encoder(fp32), "int8": _encoder(int8)}
    texts_n = _note_texts(args.notes)
    cpu: dict[str, list[float]] = {k: [] for k in encs}
    vecs: dict[str, np.ndarray] = {}
    for _ in range(2):
        for name, e in encs.items():
            c = time.process_time()
            vecs[name] = e.encode(texts_n)
            cpu[name].append(time.process_time() - c)
    cos = (vecs["fp32"] * vecs["int8"]).sum(1)
    qsets = {Path(f).name: load_queries(f) for f in args.queries}
    texts = [q["query"] for qs in qsets.values() for q in qs]
    tops, rows = {}, {}
    for name in encs:
        qenc = encs["fp32"] if args.notes_only else encs[name]
        emb = _Pair(encs[name], qenc, f"{model_id}#{name}")
        ms = []
        for _ in range(3):
            for t in texts:
                t0 = time.perf_counter()
                qenc.encode([t])
                ms.append((time.perf_counter() - t0) * 1000)
        with tempfile.TemporaryDirectory() as tmp:
            eng = MemoryEngine(args.notes, index_path=Path(tmp) / "i.sqlite", model=emb)
            emb.bulk = True
            eng.sync()
            emb.bulk = False
            tops[name] = [[n for n, _ in eng.mirror.top_notes(eng.embed_query(t), 10)[0]] for t in texts]
            rows[name] = {"encode_p50_ms": statistics.median(ms), "texts_per_cpu_s": len(texts_n) / min(cpu[name])}
            for f, qs in qsets.items():
                e = run_eval(eng, qs)["all"]
                rows[name][f] = (e["recall@5"], e["recall@10"], e["false_inject_lines"])
            eng.close()
    overlap = statistics.fmean(len(set(a) & set(b)) / 10 for a, b in zip(tops["fp32"], tops["int8"], strict=False))
    kind = f"int8 {'per channel' if args.per_channel else 'per tensor'}, {'notes only' if args.notes_only else 'notes and queries'}"
    print(f"{kind}; {len(texts_n)} note texts; int8 vs fp32 cosine: mean {cos.mean():.4f}, min {cos.min():.4f}")
    for name, r in rows.items():
        print(f"{name}: bulk {r['texts_per_cpu_s']:.0f} texts/CPU-s; query encode p50 {r['encode_p50_ms']:.2f} ms; " + "; ".join(
            f"{f}: recall@5 {v[0]:.3f}, recall@10 {v[1]:.3f}, false-inject {v[2]:.3f}"
            for f, v in r.items() if isinstance(v, tuple)))
    print(f"top-10 overlap of the vector lane, int8 vs fp32, over {len(texts)} queries: {overlap:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
