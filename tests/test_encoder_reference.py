"""Cockpit's encoder (an ONNX graph built from the packaged MiniLM's own weights, no torch) gives
the vectors sentence-transformers gives, and the engine runs with torch and sentence-transformers
absent. The reference vectors come from ``bench/make_reference_embeddings.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory.embedder import Embedder, packaged_model_path
from memory.onnx_build import UnsupportedModel, build_model

REFERENCE = Path(__file__).parent / "data" / "encoder_reference.npz"

# blocks the torch stack from import in a child process: any attempt is an ImportError
BLOCK = (
    "import sys, importlib.abc\n"
    "class Block(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('torch', 'sentence_transformers', 'transformers'):\n"
    "            raise ImportError('blocked: ' + name)\n"
    "sys.meta_path.insert(0, Block())\n"
)


def _reference() -> tuple[list[str], np.ndarray]:
    data = np.load(REFERENCE)
    return json.loads(str(data["texts"])), data["vectors"].astype(np.float32)


def test_the_reference_covers_varied_texts():
    texts, vecs = _reference()
    assert len(texts) >= 200 and vecs.shape == (len(texts), 384)
    assert "" in texts and any(len(t) > 3000 for t in texts)  # empty, and past the 256-token window
    assert any(ord(c) > 0x3000 for t in texts for c in t)  # CJK
    assert any("def " in t for t in texts)  # code


def test_the_onnx_encoder_equals_sentence_transformers_on_every_reference_text(tmp_path, monkeypatch):
    monkeypatch.setenv("COCKPIT_MODEL_CACHE", str(tmp_path / "models"))  # built now, from the weights
    texts, want = _reference()
    emb = Embedder(runtime="onnx")
    assert emb.wait(120), emb.error
    assert emb.runtime == "onnxruntime" and emb.fallback is None
    batch = emb.encode(texts)  # length-sorted batches, padded
    single = np.vstack([emb.encode([t]) for t in texts])  # one text, no padding
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    for got in (batch, single):
        cos = (got * want).sum(axis=1)
        worst = int(cos.argmin())
        assert cos.min() >= 0.9999, (cos.min(), texts[worst][:80])
    assert list((tmp_path / "models").glob("*/model.onnx"))  # kept for the next start


def test_the_graph_is_built_in_memory_when_the_cache_cannot_be_written(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.write_text("a file, not a folder")
    monkeypatch.setenv("COCKPIT_MODEL_CACHE", str(ro / "models"))
    emb = Embedder(runtime="onnx")
    assert emb.wait(120), emb.error
    assert emb.runtime == "onnxruntime"
    texts, want = _reference()
    assert float(emb.encode([texts[10]])[0] @ want[10]) > 0.999


def test_a_model_the_builder_does_not_reproduce_is_refused_by_name(tmp_path):
    import shutil

    copy = tmp_path / "other"
    shutil.copytree(packaged_model_path(), copy)
    cfg = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps(cfg | {"model_type": "roberta"}))
    with pytest.raises(UnsupportedModel, match="roberta"):
        build_model(copy)


def test_the_engine_indexes_and_searches_with_torch_and_sentence_transformers_blocked(tmp_path):
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
        "print(hits[0].name, e.embedder.runtime, e.embedder.fallback, "
        "any(m.split('.')[0] in ('torch', 'sentence_transformers', 'transformers') for m in sys.modules))\n"
    )
    env = dict(os.environ, COCKPIT_MODEL_CACHE=str(tmp_path / "models"), COCKPIT_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.stdout.split() == ["staging", "onnxruntime", "None", "False"], proc.stderr[-3000:]
