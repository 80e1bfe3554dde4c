"""Embedder resolution (offline first) and background warm-up."""

from __future__ import annotations

import pytest

from memory.embedder import DEFAULT_MODEL, Embedder, get_embedder, packaged_model_path, resolve_model


def test_resolution_prefers_configured_then_packaged(tmp_path, monkeypatch):
    monkeypatch.delenv("COCKPIT_EMBED_MODEL", raising=False)
    model_id, target = resolve_model(None)
    assert model_id == DEFAULT_MODEL and target == str(packaged_model_path())
    assert isinstance(target, str)  # a PosixPath crashes sentence-transformers 6
    assert resolve_model("some-org/some-model") == ("some-org/some-model", "some-org/some-model")
    local = tmp_path / "my-model"
    local.mkdir()
    assert resolve_model(local) == ("path:my-model", str(local.resolve()))
    monkeypatch.setenv("COCKPIT_EMBED_MODEL", str(local))
    assert resolve_model(None)[1] == str(local.resolve())


def test_get_embedder_is_a_process_wide_singleton():
    assert get_embedder() is get_embedder(None)


def test_warmup_runs_in_background_and_reports_errors(tmp_path):
    broken = tmp_path / "not-a-model"
    broken.mkdir()
    emb = Embedder(broken)
    assert emb.state == "warming" and not emb.ready
    emb.start()  # returns at once; loading happens in a thread
    assert emb.wait(60) is False
    assert emb.state == "error" and emb.error
    with pytest.raises(RuntimeError, match="failed to load"):
        emb.encode(["x"])


def test_onnx_runtime_gives_sentence_transformers_vectors():
    """With the optional torch extra installed: the ONNX graph (built from the packaged weights)
    and SentenceTransformer.encode give the same vectors, so either runtime serves the same
    index. (Without it, tests/test_encoder_reference.py checks against stored vectors.)"""
    import numpy as np

    pytest.importorskip("sentence_transformers")

    texts = ["what port does staging run on?", "Deploy with make ship-v2 from the repository root.",
             "a longer text " * 40, ""]
    onnx = get_embedder()
    assert onnx.wait(300) and onnx.runtime == "onnxruntime", onnx.fallback
    torch_emb = Embedder(runtime="torch")
    assert torch_emb.wait(300) and torch_emb.runtime == "sentence-transformers"
    a, b = onnx.encode(texts), torch_emb.encode(texts)
    assert a.dtype == np.float32 and a.shape == (4, 384)
    assert np.abs(a - b).max() < 1e-5
    single = np.vstack([onnx.encode([t]) for t in texts])  # one text vs a length-sorted batch
    assert np.abs(single - a).max() < 1e-5
    assert onnx.model_id == torch_emb.model_id  # same vectors, same index identity


def test_onnx_runtime_keeps_torch_out_of_the_process():
    """Loading the default embedder and encoding must not import torch or sentence-transformers
    (≈ 400 MiB and ≈ 2 s), even when they are installed."""
    import subprocess
    import sys

    code = ("from memory.embedder import Embedder; import sys; e = Embedder(); assert e.wait(300), e.error; "
            "e.encode(['a', 'b c']); print(e.runtime, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.stdout.split() == ["onnxruntime", "False", "False"], out.stderr[-2000:]


def test_model_without_tokenizer_json_falls_back_to_torch_and_says_why(tmp_path):
    import shutil

    pytest.importorskip("sentence_transformers")

    src = packaged_model_path()
    copy = tmp_path / "minilm-no-fast-tokenizer"
    shutil.copytree(src, copy)
    (copy / "tokenizer.json").unlink()
    emb = Embedder(copy)
    assert emb.wait(300), emb.error
    assert emb.runtime == "sentence-transformers" and "tokenizer.json" in emb.fallback


def test_unknown_runtime_is_a_clear_error(monkeypatch):
    with pytest.raises(ValueError, match="COCKPIT_EMBED_RUNTIME"):
        Embedder(runtime="tensorflow")


def test_without_torch_a_model_the_onnx_route_cannot_run_fails_with_both_reasons(tmp_path, monkeypatch):
    import shutil
    import sys

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import → ImportError
    copy = tmp_path / "minilm-no-fast-tokenizer"
    shutil.copytree(packaged_model_path(), copy)
    (copy / "tokenizer.json").unlink()
    emb = Embedder(copy)
    assert emb.wait(60) is False
    assert "tokenizer.json" in (emb.error or "") and "cockpit[torch]" in (emb.error or "")


def test_a_missing_packaged_model_is_one_clear_line(monkeypatch):
    import memory.embedder as embedder_module

    monkeypatch.setattr(embedder_module, "packaged_model_path", lambda: None)
    monkeypatch.setitem(__import__("sys").modules, "sentence_transformers", None)
    emb = Embedder(runtime="onnx")
    assert emb.wait(60) is False
    assert "not installed here" in (emb.error or "") and "reinstall cockpit" in (emb.error or "")
