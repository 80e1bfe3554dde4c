"""Export a sentence-transformers model folder to one ONNX graph: tokens → pooled, L2-normalised
sentence vector. Run as a script in a child process by :mod:`memory.onnx_model` (so torch and
transformers are loaded there, never in the engine's process)::

    python onnx_export.py MODEL_DIR OUT.onnx

Inputs ``input_ids``, ``attention_mask`` (int64, ``(batch, tokens)``); output ``embedding``
(float32, ``(batch, dim)``). The pooling (mean / CLS / max over tokens, from the model's
``1_Pooling/config.json``) and the normalisation are inside the graph, so the vectors are the
ones ``SentenceTransformer.encode(..., normalize_embeddings=True)`` returns. After exporting,
the script runs the graph with ONNX Runtime and ``SentenceTransformer.encode`` on a few texts
and fails
(exit 1) when any vector differs by more than ``TOLERANCE`` (max absolute difference).

Nothing is downloaded: ``MODEL_DIR`` is a local folder (the packaged MiniLM copy by default).
This file imports nothing from the ``memory`` package (it runs as a plain script).
"""

from __future__ import annotations

import json
import os
import sys

OPSET = 17
TOLERANCE = 1e-4
CHECK_TEXTS = ["warm up", "Deploy with make ship-v2 from the repository root.",
               "Staging runs on port 6443 and we deploy to the host callisto. " * 8]


def pooling_mode(model_dir: str) -> str:
    """``"mean"`` | ``"cls"`` | ``"max"`` from ``1_Pooling/config.json`` (mean when absent).
    Raises ``ValueError`` for a pooling this exporter does not reproduce."""
    path = os.path.join(model_dir, "1_Pooling", "config.json")
    if not os.path.exists(path):
        return "mean"
    with open(path, encoding="utf-8") as fh:
        cfg = json.load(fh)
    modes = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v]
    table = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
             "pooling_mode_max_tokens": "max"}
    if len(modes) != 1 or modes[0] not in table:
        raise ValueError(f"unsupported pooling {modes} in {path}")
    return table[modes[0]]


def check_modules(model_dir: str) -> None:
    """Refuse models whose sentence-transformers pipeline has more than transformer → pooling →
    normalize (a Dense layer, say): the exported graph would not reproduce them."""
    path = os.path.join(model_dir, "modules.json")
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as fh:
        mods = json.load(fh)
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in mods]
    extra = [k for k in kinds if k not in ("Transformer", "Pooling", "Normalize")]
    if extra:
        raise ValueError(f"modules {extra} in {path} are not exported; use COCKPIT_EMBED_RUNTIME=torch")


def export(model_dir: str, out: str) -> None:
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    check_modules(model_dir)
    mode = pooling_mode(model_dir)
    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()

    class Sentence(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            h = self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(h.dtype)
            if mode == "cls":
                v = h[:, 0]
            elif mode == "max":
                v = (h + (mask - 1.0) * 1e9).max(dim=1).values
            else:
                v = (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(v, p=2.0, dim=1)

    wrapped = Sentence(model)
    ids = torch.ones(2, 8, dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(
            wrapped, (ids, torch.ones_like(ids)), out, input_names=["input_ids", "attention_mask"],
            output_names=["embedding"], opset_version=OPSET, dynamo=False,
            dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                          "attention_mask": {0: "batch", 1: "tokens"}, "embedding": {0: "batch"}})

    # check: the graph under ONNX Runtime gives SentenceTransformer.encode's vectors
    import onnxruntime as ort
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(model_dir, device="cpu")
    want = st.encode(CHECK_TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    batch = AutoTokenizer.from_pretrained(model_dir)(
        CHECK_TEXTS, padding=True, truncation=True, max_length=st.max_seq_length, return_tensors="np")
    sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    got = sess.run(None, {"input_ids": batch["input_ids"].astype(np.int64),
                          "attention_mask": batch["attention_mask"].astype(np.int64)})[0]
    diff = float(np.abs(got - want).max())
    if not diff <= TOLERANCE:
        raise RuntimeError(f"exported graph differs from SentenceTransformer.encode by {diff:.2e} "
                           f"(> {TOLERANCE})")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: onnx_export.py MODEL_DIR OUT.onnx", file=sys.stderr)
        return 2
    try:
        export(argv[0], argv[1])
    except Exception as exc:  # one line for the parent's error message
        print(f"export failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
