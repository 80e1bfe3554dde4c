"""The gate's calibration file (one place, documented) and the per-script token estimate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.gate import GATE_FILE, Gate, GateFileError, load_gate, read_gate
from memory.tokens import estimate_tokens

ROOT = Path(__file__).resolve().parent.parent


def test_estimate_is_chars_over_four_for_ascii():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 400) == 100


@pytest.mark.parametrize("text,at_least", [
    ("ステージング環境のポートは6443です", 14 + 1),       # kana/kanji: a token each
    ("部署命令是make ship-v2", 4 + 3),                    # Chinese + ASCII
    ("배포 명령은 make ship-v2 입니다", 6 + 4),           # hangul
    ("Развёртывание через make ship-v2", 13 // 2 + 5),   # Cyrillic: two per token
    ("deploy 🚀🚀", 2 + 4),                                # outside the BMP: two each
])
def test_estimate_holds_across_scripts(text, at_least):
    n = estimate_tokens(text)
    assert n >= at_least
    assert n > (len(text) + 3) // 4 or text.isascii()  # chars/4 undercounts these


def test_cjk_is_about_a_token_per_character_not_a_quarter():
    text = "部署到卡利斯托主机" * 20  # 180 CJK characters
    assert estimate_tokens(text) == 180
    assert (len(text) + 3) // 4 == 45  # what chars/4 said: a quarter


def test_the_gate_is_loaded_from_its_one_file():
    data = json.loads(GATE_FILE.read_text(encoding="utf-8"))
    gate = load_gate()
    assert gate == read_gate(GATE_FILE)
    assert (gate.threshold, gate.pool, gate.coverage_weight, gate.agreement_weight, gate.model) == (
        data["threshold"], data["pool"], data["coverage_weight"], data["agreement_weight"], data["model"])
    assert load_gate() is gate  # read once


def test_the_gate_file_documents_its_fit():
    data = json.loads(GATE_FILE.read_text(encoding="utf-8"))
    assert data["target_false_inject"] <= 0.20 and data["pooled"]["false_inject"] <= data["target_false_inject"]
    assert set(data["fitted_on"]) == {"queries.jsonl", "queries_dev2.jsonl"}
    assert data["queries"]["no_match"] >= 20  # enough no-match queries to price a gate
    curve = data["curve"]
    assert [p["threshold"] for p in curve] == sorted(p["threshold"] for p in curve)
    at = next(p for p in curve if p["threshold"] == data["threshold"])
    assert at["false_inject"] <= data["target_false_inject"] and at["recall"] == data["pooled"]["recall"]
    # recall and false-inject both fall as the threshold rises: the curve is a trade-off
    assert all(a["recall"] >= b["recall"] and a["false_inject"] >= b["false_inject"]
               for a, b in zip(curve, curve[1:], strict=False))
    assert data["cross_file"] and "bench/fit_gate.py" in data["command"]
    # fitted with a margin under the target, and estimated on queries it was not fitted on
    assert data["fit_false_inject"] < data["target_false_inject"]
    held = data["held_out"]
    assert {"shipped", "cosine_and_coverage", "cosine_only"} <= set(held) and held["repeats"] >= 20
    assert held["shipped"]["false_inject"] <= data["target_false_inject"]
    # the docs show the fitted numbers
    bench = (ROOT / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8")
    for key in ("threshold", "coverage_weight", "agreement_weight"):
        assert f"{data[key]}" in bench, key
    assert f"{held['shipped']['recall']:.3f}" in bench


def test_gate_score_and_opening():
    gate = Gate(threshold=0.6, pool=2, model="m", coverage_weight=0.5, agreement_weight=0.25)
    assert gate.score([0.5, 0.55, 0.99], [0.0, 0.2, 1.0]) == pytest.approx(0.55 + 0.1)  # first 2 only
    assert gate.score([0.5, 0.55, 0.99], [0.0, 0.2, 1.0], [0.4, 0.2, 0.5]) == pytest.approx(0.55 + 0.1 + 0.1)
    assert gate.score([], []) == 0.0
    assert gate.opens(0.65) and not gate.opens(0.59) and gate.opens(0.59, threshold=0.5)


@pytest.mark.parametrize("content", ['{"pool": 12, "model": "m"}', '{"threshold": "high", "pool": 1, "model": "m"}',
                                     '{"threshold": 0.5, "pool": 0, "model": "m"}', "not json", "[1, 2]",
                                     '{"threshold": 0.5, "pool": 3, "model": "m", "agreement_weight": -1}',
                                     '{"threshold": 0.5, "pool": 3, "model": "m", "coverage_weight": "x"}'])
def test_a_broken_gate_file_is_a_clear_error(tmp_path, content):
    p = tmp_path / "gate.json"
    p.write_text(content)
    with pytest.raises(GateFileError, match="gate.json"):
        read_gate(p)
