"""`cockpit run` end to end against the stand-in (in-process CLI)."""

import json

import pytest

from cockpit.cli import main
from standin import HTTPError, Reply, StandIn


@pytest.fixture
def ws(tmp_path):
    w = tmp_path / "ws"
    w.mkdir()
    (w / "README.md").write_text("Staging runs on port 8080.\n")
    return w


def test_run_json_report(tmp_path, ws, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)  # no ./notes → no engine
    with StandIn() as api:
        api.script(Reply("answer one"), Reply("answer two"))
        code = main(["run", "task one", "task two", "--base-url", api.base_url, "--workspace", str(ws),
                     "--model", "claude-haiku-4-5", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert sorted(s["answer"] for s in out["sessions"]) == ["answer one", "answer two"]
    for s in out["sessions"]:
        assert s["status"] == "done" and s["usage"]["total"] > 0 and s["cost_usd"] > 0
        assert s["transcript"].endswith(".jsonl")
    assert out["totals"]["usage"]["total"] == sum(s["usage"]["total"] for s in out["sessions"])
    assert out["pricing"]["date"]


def test_run_text_report_and_error_exit(tmp_path, ws, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("COCKPIT_MAX_RETRIES", "0")
    monkeypatch.chdir(tmp_path)
    with StandIn() as api:
        api.script(HTTPError(500))
        code = main(["run", "t", "--base-url", api.base_url, "--workspace", str(ws), "--model", "my-local"])
    out = capsys.readouterr().out
    assert code == 1
    assert "· error ·" in out and "cost n/a" in out and "transcript:" in out


def test_missing_key_is_one_line(monkeypatch, capsys, ws):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code = main(["run", "t", "--workspace", str(ws)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "ANTHROPIC_API_KEY" in err


def test_bad_key_is_one_line_without_the_key(tmp_path, ws, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong-secret")
    monkeypatch.chdir(tmp_path)
    with StandIn(require_key="right") as api:
        code = main(["run", "t", "--base-url", api.base_url, "--workspace", str(ws)])
    cap = capsys.readouterr()
    assert code == 1
    warning, error = cap.err.splitlines()  # no ./notes here: a warning says so, then one error line
    assert warning.startswith("cockpit: warning: no ./notes folder")
    assert error.startswith("cockpit: error: authentication failed")
    assert "sk-wrong-secret" not in cap.err + cap.out


def test_missing_notes_folder(ws, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    code = main(["run", "t", "--notes", str(tmp_path / "nope"), "--workspace", str(ws)])
    assert code == 2 and "notes folder not found" in capsys.readouterr().err


def test_run_help_names_the_real_default_model():
    from cockpit.cli import build_parser
    from cockpit.runtime.config import DEFAULT_MODEL

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert DEFAULT_MODEL in sub.choices["run"].format_help()
