"""`cockpit run`'s report is its sessions' folded events: the transcripts a run wrote, folded by
the one reducer (`cockpit.runtime.history.fold`), give exactly the report it printed."""

import json
import re
from pathlib import Path

from helpers import make_repo
from standin import HTTPError, Reply, StandIn, ToolUse

from cockpit.cli import main
from cockpit.headless import format_report
from cockpit.runtime.history import fold
from cockpit.runtime.pricing import load_pricing
from cockpit.runtime.report import build_report, session_row
from cockpit.runtime.transcript import read_events

KEY = "sk-ant-api03-headless-fold-0123456789"


def _turn(body: dict):
    """Each task its own script, whatever order the sessions' requests arrive in."""
    first = json.dumps(body["messages"][0]["content"])
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if "TASK-EDIT" in first:
        return [Reply("", [ToolUse("str_replace_based_edit_tool",
                                   {"command": "create", "path": "app.py", "file_text": "print(1)\nprint(2)\n"}),
                           ToolUse("bash", {"command": "python3 app.py"})]),
                Reply("Created app.py; running it was denied.")][step]
    if "TASK-FAIL" in first:
        return HTTPError(500)
    return Reply(f"Nothing to change. (Your key is {KEY}.)")  # what is written is redacted: the report too


def _run(tmp_path, repo, monkeypatch, capsys, *flags) -> tuple[int, str]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("COCKPIT_MAX_RETRIES", "0")
    monkeypatch.chdir(tmp_path)  # no ./notes: no engine
    with StandIn(responder=_turn) as api:
        code = main(["run", "TASK-EDIT: create app.py and run it", "TASK-ANSWER: say so", "TASK-FAIL: fail",
                     "--base-url", api.base_url, "--workspace", str(repo), "--model", "claude-haiku-4-5",
                     "--permission-mode", "acceptEdits", *flags])
    return code, capsys.readouterr().out


def _folded(paths: list[str]) -> dict:
    return build_report([session_row(fold(read_events(Path(p), []))) for p in paths], load_pricing())


def test_the_transcripts_a_run_wrote_folded_give_the_report_it_printed(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path / "repo", {"README.md": "demo\n"})
    code, out = _run(tmp_path, repo, monkeypatch, capsys, "--json")
    printed = json.loads(out)
    assert code == 1  # the failing task
    rebuilt = _folded([s["transcript"] for s in printed["sessions"]])
    assert rebuilt == printed  # every key of every row, and the totals
    edit, answer, fail = printed["sessions"]  # the rows say what happened, so equal rows mean something
    assert edit["diff"] == {"files": 1, "added": 2, "removed": 0} and edit["denied"] == ["python3 app.py"]
    assert edit["answer"] == "Created app.py; running it was denied." and edit["requests"] == 2
    assert answer["diff"] == {"files": 0, "added": 0, "removed": 0} and answer["worktree"]["removed"]
    assert answer["answer"] == "Nothing to change. (Your key is ***.)" and KEY not in out
    assert fail["status"] == "error" and fail["error"]["kind"] and fail["requests"] == 1 and fail["answer"] == ""

    code, text = _run(tmp_path, repo, monkeypatch, capsys)
    assert code == 1
    paths = re.findall(r"^transcript: (.+)$", text, re.M)
    assert len(paths) == 3
    assert format_report(_folded(paths)) + "\n" == text  # the text report, byte for byte
    assert KEY not in text
