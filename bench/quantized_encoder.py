"""Should the encoder be int8? fp32 vs dynamically quantised int8 MiniLM under ONNX Runtime.

Usage (from the repo root)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/quantized_encoder.py \\
        --notes ../shared/recall-dev/notes ../shared/recall-dev/queries.jsonl ../shared/recall-dev/queries_dev2.jsonl

The fp32 graph is the engine's (``memory.onnx_model.ensure_onnx``); the int8 one is
``onnxruntime.quantization.quantize_dynamic`` of it (int8 weights, activations quantised per
batch). For each: the query embedding p50 (one text, one thread, every query of the files,
3 passes), the top-10 overlap of the vector lane with fp32's over those queries (each variant
searching its own vectors), and recall@5 / false-inject rate of the whole engine
(``memory.eval.run_eval``) on an index built with that variant — index and queries embedded by
the same graph, as the engine would if it adopted int8.
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

import memory.onnx_model as om  # noqa: E402
from memory import MemoryEngine  # noqa: E402
from memory.embedder import Embedder, resolve_model  # noqa: E402
from memory.eval import load_queries, run_eval  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", required=True)
    ap.add_argument("queries", nargs="+")
    args = ap.parse_args(argv)
    model_id, target = resolve_model(None)
    fp32 = om.ensure_onnx(target, model_id)
    int8 = fp32.with_name("model.int8.onnx")
    if not int8.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    real = om.ensure_onnx
    qsets = {Path(f).name: load_queries(f) for f in args.queries}
    texts = [q["query"] for qs in qsets.values() for q in qs]
    tops, rows = {}, {}
    for name, path in (("fp32", fp32), ("int8", int8)):
        om.ensure_onnx = lambda *_a, _p=path: _p
        emb = Embedder(runtime="onnx")
        emb.model_id = f"{model_id}#{name}"
        assert emb.wait(), emb.error
        ms = []
        for _ in range(3):
            for t in texts:
                t0 = time.perf_counter()
                emb.encode([t])
                ms.append((time.perf_counter() - t0) * 1000)
        with tempfile.TemporaryDirectory() as tmp:
            eng = MemoryEngine(args.notes, index_path=Path(tmp) / "i.sqlite", model=emb)
            eng.sync()
            tops[name] = [[n for n, _ in eng.mirror.top_notes(eng.embed_query(t), 10)[0]] for t in texts]
            names = dict(eng.store.query("SELECT id, name FROM notes"))
            tops[name] = [[names[i] for i in top] for top in tops[name]]
            rows[name] = {"encode_p50_ms": statistics.median(ms)}
            for f, qs in qsets.items():
                e = run_eval(eng, qs)["engine"]
                rows[name][f] = (e["recall@5"], e["false_inject_rate"])
            eng.close()
    om.ensure_onnx = real
    overlap = statistics.fmean(len(set(a) & set(b)) / 10 for a, b in zip(tops["fp32"], tops["int8"], strict=False))
    for name, r in rows.items():
        print(f"{name}: query encode p50 {r['encode_p50_ms']:.2f} ms; " + "; ".join(
            f"{f}: recall@5 {v[0]:.3f}, false-inject {v[1]:.3f}" for f, v in r.items() if isinstance(v, tuple)))
    print(f"top-10 overlap of the vector lane, int8 vs fp32, over {len(texts)} queries: {overlap:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
