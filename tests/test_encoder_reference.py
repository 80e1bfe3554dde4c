"""Cockpit's encoder: the packaged MiniLM as an ONNX graph that setup.py built from the model's
own weights (no torch). It gives the vectors sentence-transformers gives (stored by
``bench/make_reference_embeddings.py``); the builder reproduces BERT for another model too (a
tiny random one, checked against a numpy forward pass); and the engine runs with torch,
sentence-transformers, transformers, onnx and safetensors all absent."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory.embedder import Embedder, packaged_model_path
from memory.onnx_build import UnsupportedModel

REFERENCE = Path(__file__).parent / "data" / "encoder_reference.npz"
RUNTIME_ONLY = ("torch", "sentence_transformers", "transformers", "onnx", "safetensors")

# blocks packages from import in a child process: any attempt is an ImportError
BLOCK = (
    "import sys, importlib.abc\n"
    "class Block(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    f"        if name.split('.')[0] in {RUNTIME_ONLY!r}:\n"
    "            raise ImportError('blocked: ' + name)\n"
    "sys.meta_path.insert(0, Block())\n"
)


def _reference() -> tuple[list[str], np.ndarray]:
    data = np.load(REFERENCE)
    vecs = data["vectors"].astype(np.float32)
    return json.loads(str(data["texts"])), vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def test_the_reference_covers_varied_texts():
    texts, vecs = _reference()
    assert len(texts) >= 200 and vecs.shape == (len(texts), 384)
    assert "" in texts and any(len(t) > 3000 for t in texts)  # empty, and past the 256-token window
    assert any(ord(c) > 0x3000 for t in texts for c in t)  # CJK
    assert any("def " in t for t in texts)  # code


def test_the_packaged_graph_equals_sentence_transformers_on_every_reference_text():
    texts, want = _reference()
    emb = Embedder(runtime="onnx")
    assert emb.wait(120), emb.error
    assert emb.runtime == "onnxruntime" and emb.fallback is None
    assert emb._backend.path == packaged_model_path() / "model.onnx"  # shipped built, not built here
    batch = emb.encode(texts)  # length-sorted batches, padded
    single = np.vstack([emb.encode([t]) for t in texts])  # one text, no padding
    for got in (batch, single):
        cos = (got * want).sum(axis=1)
        worst = int(cos.argmin())
        assert cos.min() >= 0.9999, (cos.min(), texts[worst][:80])


# ---- the builder on another model: a tiny random BERT -------------------------------------------
HIDDEN, HEADS, LAYERS, INNER = 8, 2, 2, 16


def _tiny_model(folder: Path, pooling: str = "mean") -> dict[str, np.ndarray]:
    """A BERT folder with MiniLM's tokenizer and random weights (as sentence-transformers saves one)."""
    from safetensors.numpy import save_file

    folder.mkdir()
    shutil.copy(packaged_model_path() / "tokenizer.json", folder / "tokenizer.json")
    vocab = 30522
    (folder / "config.json").write_text(json.dumps({
        "model_type": "bert", "hidden_size": HIDDEN, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS,
        "intermediate_size": INNER, "hidden_act": "gelu", "layer_norm_eps": 1e-12, "vocab_size": vocab,
        "max_position_embeddings": 64, "type_vocab_size": 2}))
    (folder / "1_Pooling").mkdir()
    modes = {"mean": "mean_tokens", "cls": "cls_token", "max": "max_tokens"}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {f"pooling_mode_{m}": name == pooling for name, m in modes.items()}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64}))
    rng = np.random.default_rng(7)
    r = lambda *shape: (rng.standard_normal(shape) * 0.5).astype(np.float32)  # noqa: E731
    w = {"embeddings.word_embeddings.weight": r(vocab, HIDDEN), "embeddings.position_embeddings.weight": r(64, HIDDEN),
         "embeddings.token_type_embeddings.weight": r(2, HIDDEN),
         "embeddings.LayerNorm.weight": 1 + r(HIDDEN), "embeddings.LayerNorm.bias": r(HIDDEN)}
    for n in range(LAYERS):
        p = f"encoder.layer.{n}"
        for kind in ("query", "key", "value"):
            w[f"{p}.attention.self.{kind}.weight"], w[f"{p}.attention.self.{kind}.bias"] = r(HIDDEN, HIDDEN), r(HIDDEN)
        w[f"{p}.attention.output.dense.weight"], w[f"{p}.attention.output.dense.bias"] = r(HIDDEN, HIDDEN), r(HIDDEN)
        w[f"{p}.attention.output.LayerNorm.weight"], w[f"{p}.attention.output.LayerNorm.bias"] = 1 + r(HIDDEN), r(HIDDEN)
        w[f"{p}.intermediate.dense.weight"], w[f"{p}.intermediate.dense.bias"] = r(INNER, HIDDEN), r(INNER)
        w[f"{p}.output.dense.weight"], w[f"{p}.output.dense.bias"] = r(HIDDEN, INNER), r(HIDDEN)
        w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"] = 1 + r(HIDDEN), r(HIDDEN)
    save_file(w, str(folder / "model.safetensors"))
    return w


def _reference_forward(w: dict[str, np.ndarray], ids: list[int], pooling: str = "mean") -> np.ndarray:
    """BERT by hand (Hugging Face's BertModel, eager attention), then pooling and L2 norm."""
    def ln(x, name):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def lin(x, name):
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    t = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:t] \
        + w["embeddings.token_type_embeddings.weight"][0]
    x = ln(x.astype(np.float64), "embeddings.LayerNorm")
    d = HIDDEN // HEADS
    for n in range(LAYERS):
        p = f"encoder.layer.{n}"
        q, k, v = (lin(x, f"{p}.attention.self.{kind}").reshape(t, HEADS, d).transpose(1, 0, 2)
                   for kind in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        a = np.exp(s - s.max(-1, keepdims=True))
        ctx = ((a / a.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(t, HIDDEN)
        x = ln(lin(ctx, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        h = lin(x, f"{p}.intermediate.dense")
        h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
        x = ln(lin(h, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    v = {"mean": x.mean(0), "cls": x[0], "max": x.max(0)}[pooling]
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_the_builder_reproduces_bert_for_another_model(tmp_path, monkeypatch, pooling):
    monkeypatch.setenv("COCKPIT_MODEL_CACHE", str(tmp_path / "models"))
    folder = tmp_path / "tiny"
    w = _tiny_model(folder, pooling)
    emb = Embedder(folder, runtime="onnx")
    assert emb.wait(60), emb.error
    texts = ["", "hello world", "Deploy with make ship-v2 from the repository root.", "日本語"]
    got = emb.encode(texts)  # a padded batch: the mask must keep padding out of attention and pooling
    for text, vec in zip(texts, got, strict=True):
        ids = emb._backend._tok.encode(text).ids
        assert np.abs(vec - _reference_forward(w, ids, pooling)).max() < 1e-4, text
    assert list((tmp_path / "models").glob("*/model.onnx"))  # built once, kept for the next start


def test_the_graph_is_built_in_memory_when_the_cache_cannot_be_written(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("COCKPIT_MODEL_CACHE", str(blocker / "models"))
    folder = tmp_path / "tiny"
    w = _tiny_model(folder)
    emb = Embedder(folder, runtime="onnx")
    assert emb.wait(60), emb.error
    assert emb.runtime == "onnxruntime" and emb._backend.path is None
    ids = emb._backend._tok.encode("staging port").ids
    assert np.abs(emb.encode(["staging port"])[0] - _reference_forward(w, ids)).max() < 1e-4


def test_a_model_the_builder_does_not_reproduce_is_refused_by_name(tmp_path):
    from memory.onnx_build import build_model

    folder = tmp_path / "other"
    _tiny_model(folder)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(cfg | {"model_type": "roberta"}))
    with pytest.raises(UnsupportedModel, match="roberta"):
        build_model(folder)
    (folder / "config.json").write_text(json.dumps(cfg))
    (folder / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Transformer"},
                                                     {"type": "sentence_transformers.models.Dense"}]))
    with pytest.raises(UnsupportedModel, match="Dense"):
        build_model(folder)


def test_the_engine_indexes_and_searches_with_only_the_runtime_installed(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "staging.md").write_text("---\nname: staging\ndescription: staging runs on port 6443\n---\n"
                                      "Staging listens on 6443 on the host callisto.\n")
    (notes / "db.md").write_text("---\nname: database\ndescription: we use postgres 16\n---\nNo mongo.\n")
    code = BLOCK + (
        "from memory import MemoryEngine\n"
        f"e = MemoryEngine({str(notes)!r}, {str(tmp_path / 'index.db')!r})\n"
        "e.sync()\n"
        "hits = e.search('which port does staging use?', 2)\n"
        f"print(hits[0].name, e.embedder.runtime, e.embedder.fallback, "
        f"any(m.split('.')[0] in {RUNTIME_ONLY!r} for m in sys.modules))\n"
    )
    env = dict(os.environ, COCKPIT_MODEL_CACHE=str(tmp_path / "models"), COCKPIT_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.stdout.split() == ["staging", "onnxruntime", "None", "False"], proc.stderr[-3000:]
    assert not (tmp_path / "models").exists()  # nothing built at run time


def test_onnx_runtime_writes_no_telemetry_store(tmp_path):
    """ONNX Runtime's own telemetry (a device id and events in ~/.cache/Microsoft/…) stays off."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    code = "from memory.embedder import Embedder; e = Embedder(); assert e.wait(60), e.error; e.encode(['hello'])"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not (home / ".cache" / "Microsoft").exists()
