"""`cockpit run` end to end against the stand-in (in-process CLI)."""

import json

import pytest
from helpers import git, make_repo
from standin import HTTPError, Reply, StandIn

from cockpit.cli import main


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
    # no ./notes here, and not a repository: a warning each, then one error line
    in_place, notes, error = cap.err.splitlines()
    assert notes.startswith(f"cockpit: warning: no notes folder at {(tmp_path / 'notes').resolve()} ")
    assert in_place.startswith(f"cockpit: warning: {ws} is not a git repository: the sessions work in place")
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


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", {"README.md": "demo\n"})


def test_coding_run_reports_worktree_and_diff_then_worktrees_merge(tmp_path, repo, monkeypatch, capsys):
    from standin import ToolUse

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)
    with StandIn() as api:
        api.script(
            Reply("", [ToolUse("str_replace_based_edit_tool", {"command": "create", "path": "app.py",
                                                                 "file_text": "print(1)\nprint(2)\n"})]),
            Reply("", [ToolUse("bash", {"command": "python3 app.py"})]),
            Reply("Created app.py; it prints 1 and 2."),
        )
        code = main(["run", "create app.py", "--base-url", api.base_url, "--workspace", str(repo),
                     "--permission-mode", "bypassPermissions", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    s = out["sessions"][0]
    assert s["status"] == "done" and s["permission_mode"] == "bypassPermissions"
    assert s["worktree"]["branch"].startswith(f"cockpit/{s['id']}/") and s["diff"] == {"files": 1, "added": 2, "removed": 0}
    assert (tmp_path / "repo" / "app.py").exists() is False
    from pathlib import Path
    assert (Path(s["worktree"]["path"]) / "app.py").exists()
    assert main(["worktrees", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["worktrees"]
    assert [w["session"] for w in listed] == [s["id"]] and listed[0]["state"] == "changed"
    assert main(["worktrees", "merge", s["id"][:8]]) == 0
    assert "merged" in capsys.readouterr().out
    assert (repo / "app.py").read_text() == "print(1)\nprint(2)\n"
    assert main(["worktrees", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["worktrees"] == []


def test_headless_default_mode_denies_and_says_how(tmp_path, repo, monkeypatch, capsys):
    from standin import ToolUse

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)
    with StandIn() as api:
        api.script(Reply("", [ToolUse("bash", {"command": "ls"})]), Reply("could not run it"))
        code = main(["run", "list files", "--base-url", api.base_url, "--workspace", str(repo), "--json"])
        result = api.message_requests[1]["messages"][-1]["content"][0]
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["sessions"][0]["status"] == "done"
    assert result["is_error"] and "--permission-mode" in result["content"]
    assert out["sessions"][0]["diff"] == {"files": 0, "added": 0, "removed": 0}  # unchanged: worktree removed
    assert "cockpit/" not in git(repo, "branch", "--list")
    assert out["sessions"][0]["denied"] == ["ls"]
    with StandIn() as api:  # the text report tells the user too, not only the model
        api.script(Reply("", [ToolUse("bash", {"command": "ls"})]), Reply("could not run it"))
        assert main(["run", "list files", "--base-url", api.base_url, "--workspace", str(repo)]) == 0
    text = capsys.readouterr().out
    assert "denied: 1 ask nobody could answer (ls) — each denial told the model what would run it" in text


@pytest.mark.parametrize("argv, message", [
    (["run", ""], "task 1 is empty"),
    (["run", "good", "  "], "task 2 is empty"),
    (["run"], "no task given"),
    (["run", "a", "b", "--model", "m1", "--model", "m2", "--model", "m3"], "--model was given 3 times"),
])
def test_task_usage_errors(argv, message, monkeypatch, capsys, ws):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    code = main(argv + ["--workspace", str(ws)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_task_file_stdin_non_utf8_and_per_task_models(tmp_path, ws, monkeypatch, capsys):
    import io
    import os

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)
    long_task = tmp_path / "task.txt"
    long_task.write_bytes(b"summarise this log:\n" + b"line of log text\n" * 70_000)  # ~1 MB
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"from stdin \xff\xfe task")))
    bad = os.fsdecode(b"caf\xe9 task")  # what argv holds for a non-UTF-8 byte
    with StandIn() as api:
        api.responder = lambda body: Reply("ok")
        code = main(["run", bad, "--task-file", str(long_task), "--task-file", "-", "--base-url", api.base_url,
                     "--workspace", str(ws), "--model", "m-a", "--model", "m-b", "--model", "m-c", "--json"])
    cap = capsys.readouterr()
    out = json.loads(cap.out)
    assert code == 0
    tasks = [s["task"] for s in out["sessions"]]
    assert tasks[0] == "caf\ufffd task" and len(tasks[1]) > 1_000_000 and tasks[2] == "from stdin \ufffd\ufffd task"
    assert not tasks[1].endswith("\n")  # a task file's final newline is not part of the task
    assert [s["model"] for s in out["sessions"]] == ["m-a", "m-b", "m-c"]
    assert cap.err.count("not valid UTF-8") == 2


def test_unwritable_transcripts_folder_is_a_usage_error(tmp_path, ws, monkeypatch, capsys):
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "sessions").write_text("a file where the folder should be")
    monkeypatch.setenv("COCKPIT_DATA_DIR", str(locked))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    code = main(["run", "t", "--workspace", str(ws), "--base-url", "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write session transcripts" in err
    assert os.path.isfile(locked / "sessions")


def _report(files: int) -> dict:
    usage = {"input": 1, "output": 2, "cache_write": 0, "cache_read": 0, "total": 3}
    s = {"id": "abc123", "status": "done", "model": "m", "permission_mode": "default", "task": "fix it",
         "worktree": {"path": "/w", "branch": "cockpit/abc123-fix-it", "base_commit": "0123456789ab", "removed": None},
         "diff": {"files": files, "added": 1, "removed": 1}, "preseed": True, "injected": [], "preseed_tokens": 0,
         "error": None, "answer": "done", "usage": usage, "cost_usd": 0.0, "requests": 1, "transcript": "/t.jsonl"}
    return {"sessions": [s], "totals": {"usage": usage, "cost_usd": 0.0}, "pricing": {"date": "d"}}


def test_text_report_counts_files_in_the_singular_and_plural():
    from cockpit.headless import format_report

    assert "· 1 file +1 -1" in format_report(_report(1))
    assert "· 2 files +1 -1" in format_report(_report(2))


def test_text_report_says_what_to_do_with_a_change_until_it_is_reviewed():
    from cockpit.headless import format_report

    nxt = [x for x in format_report(_report(1)).splitlines() if x.startswith("next:")]
    assert nxt == ["next: cockpit worktrees diff abc123 · then merge, keep or discard it"
                   " (cockpit worktrees merge abc123; or in the app: d)"]
    assert "cockpit worktrees diff --host box abc123" in format_report(_report(1), "box")
    merged = _report(1)
    merged["sessions"][0]["reviewed"] = {"action": "merge", "ok": True, "message": "merged"}
    assert "next:" not in format_report(merged)


def test_an_acp_agents_report_counts_prompt_turns_not_model_requests():
    """An ACP agent reports its prompt turns, not its model calls: "1 request" where the model
    server logged two read as a miscount."""
    from cockpit.headless import format_report

    report = _report(1)
    report["sessions"][0]["requests"] = 1

    def tokens_line(backend: str) -> str:
        report["sessions"][0]["backend"] = backend
        return next(x for x in format_report(report).splitlines() if x.startswith("tokens:"))

    assert tokens_line("acp:opencode").endswith("· 1 prompt turn")
    assert tokens_line("cockpit").endswith("· 1 request")


def test_detach_names_the_commands_that_reach_the_sessions(capsys):
    from argparse import Namespace

    from cockpit.headless import _print_report

    assert _print_report(Namespace(json=False, detach=True), _report(0)) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "running in the server: cockpit ls · cockpit attach ID · cockpit kill ID"


def test_text_report_names_no_branch_for_a_removed_worktree():
    from cockpit.headless import format_report

    report = _report(0)
    report["sessions"][0]["worktree"]["removed"] = "no changes"
    line = next(x for x in format_report(report).splitlines() if x.startswith("worktree:"))
    assert "changed nothing" in line and "cockpit/abc123" not in line  # the branch is gone too


def test_reports_and_listings_show_escape_sequences_as_nothing():
    from cockpit.headless import format_report
    from cockpit.server_cli import _fmt_row

    s = {"id": "abc", "status": "done", "model": "m", "permission_mode": "default", "task": "t\x1b]0;x\x07ask\nline",
         "worktree": None, "cwd": "/w", "placement": "in place", "preseed": True, "preseed_tokens": 3,
         "injected": [{"name": "n\x1b[2Jote", "score": 0.5, "priority": False}], "error": None,
         "answer": "ans\x1b[31mwer\x07\nsecond", "usage": {"input": 1, "output": 1, "cache_write": 0, "cache_read": 0},
         "cost_usd": 0.0, "requests": 1, "transcript": "/t.jsonl"}
    report = format_report({"sessions": [s], "totals": {"usage": s["usage"], "cost_usd": 0.0}, "pricing": {"date": "d"}})
    assert "\x1b" not in report and "\x07" not in report
    assert "task: task line" in report and "  answer\n  second" in report and "note (0.50)" in report
    row = _fmt_row({**s, "worktree": {"branch": "b\x1b[1m"}})
    assert "\x1b" not in row and row.endswith("task line")


def test_headless_accept_edits_denial_names_only_modes_that_would_allow_it(tmp_path, repo, monkeypatch, capsys):
    from standin import ToolUse

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)
    with StandIn() as api:
        api.script(Reply("", [ToolUse("bash", {"command": "pytest -q"})]), Reply("could not run it"))
        code = main(["run", "run the tests", "--base-url", api.base_url, "--workspace", str(repo),
                     "--permission-mode", "acceptEdits", "--json"])
        result = api.message_requests[1]["messages"][-1]["content"][0]
    capsys.readouterr()
    assert code == 0 and result["is_error"]
    text = result["content"]
    assert "--permission-mode auto or bypassPermissions" in text
    assert "--permission-mode acceptEdits" not in text  # the mode it ran in allows no command
    assert "Bash(pytest *)" in text  # the allow rule that would


def test_headless_denial_text_per_kind_and_mode():
    from cockpit.runtime.permissions import PermissionMode as M
    from cockpit.runtime.session_base import headless_denial

    assert "--permission-mode acceptEdits or auto or bypassPermissions" in headless_denial(M.DEFAULT, "edit")
    assert "--permission-mode auto or bypassPermissions" in headless_denial(M.DEFAULT, "bash")
    # a protected path asks in acceptEdits too: no mode to suggest, an allow rule
    protected = headless_denial(M.ACCEPT_EDITS, "edit", "Edit(.git/hooks/**)")
    assert "--permission-mode" not in protected and "Edit(.git/hooks/**)" in protected
    assert "--permission-mode bypassPermissions" in headless_denial(M.AUTO, "memory_save")
    inline = headless_denial(M.DEFAULT, "bash", "")  # python -c …: no rule can name it, none offered
    assert "--permission-mode auto or bypassPermissions (no allow rule can name this command)" in inline
    assert "add" not in inline


def test_a_base_url_ending_in_v1_gets_a_hint_on_404(tmp_path, ws, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("COCKPIT_MAX_RETRIES", "0")
    monkeypatch.chdir(tmp_path)
    with StandIn(exact_paths=True) as api:
        api.script(Reply("never sent"))
        code = main(["run", "t", "--base-url", api.base_url + "/v1", "--workspace", str(ws), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    error = json.dumps(out["sessions"][0])
    assert "404" in error and "drop the trailing /v1" in error


def test_the_report_names_notes_only_listed_in_the_index_as_listed_not_given():
    from cockpit.headless import format_report

    s = {"id": "abc", "status": "done", "model": "m", "permission_mode": "default", "task": "t", "worktree": None,
         "cwd": "/w", "placement": "in place", "preseed": True, "preseed_tokens": 30, "error": None, "answer": "a",
         "injected": [{"name": "staging", "score": 0.61, "priority": True, "kind": "line"},
                      {"name": "error-format", "score": 0.0, "priority": False, "kind": "index"}],
         "usage": {"input": 1, "output": 1, "cache_write": 0, "cache_read": 0}, "cost_usd": 0.0, "requests": 1,
         "transcript": "/t.jsonl"}
    report = format_report({"sessions": [s], "totals": {"usage": s["usage"], "cost_usd": 0.0}, "pricing": {"date": "d"}})
    line = next(x for x in report.splitlines() if x.startswith("preseed:"))
    assert line == "preseed: ★ staging (0.61), listed: error-format · 30 tokens"


def test_ls_rows_name_the_agent_of_each_session():
    from cockpit.server_cli import _fmt_row

    base = {"id": "abc", "status": "done", "model": "m", "task": "t", "worktree": None, "placement": "in place",
            "usage": {"total": 1}, "cost_usd": 0.0}
    assert _fmt_row({**base, "backend": "acp:opencode"}).split()[2] == "acp:opencode"
    assert _fmt_row(base).split()[2] == "cockpit"


def test_ls_says_how_a_reviewed_worktree_ended_instead_of_its_gone_branch():
    """After a merge the branch is deleted: `ls` says where it went, not the stale branch name."""
    from cockpit.server_cli import _fmt_row

    base = {"id": "abc", "status": "done", "model": "m", "task": "t", "placement": "worktree",
            "worktree": {"branch": "cockpit/abc/t", "base_branch": "main"}, "usage": {"total": 1}, "cost_usd": 0.0}
    assert " …/t " in _fmt_row(base)  # (the id is its own column)
    merged = _fmt_row({**base, "reviewed": {"action": "merge", "ok": True, "message": "merged"}})
    assert "merged into main" in merged and "…/t" not in merged
    assert "discarded" in _fmt_row({**base, "reviewed": {"action": "discard", "ok": True, "message": ""}})
    failed = _fmt_row({**base, "reviewed": {"action": "merge", "ok": False, "message": "conflict"}})
    assert " …/t " in failed  # a refused merge left the branch where it was


def test_ls_cuts_long_fields_with_an_ellipsis():
    from cockpit.server_cli import _fmt_row

    row = _fmt_row({"id": "abc", "status": "done", "model": "claude-sonnet-4-5-20250929-extra", "placement": "worktree",
                    "task": "Fix Cart.total: apply the discount once on the subtotal and round half-up to cents",
                    "worktree": {"branch": "cockpit/abc/fix-cart-total-apply-the-discount-once-on-the-subtotal"},
                    "usage": {"total": 1}, "cost_usd": 0.0})
    assert "…/fix-cart-total-apply-the-discou… " in row and "claude-sonnet-4-5-202… " in row
    assert row.endswith("once on the subtotal and…")


def test_a_folder_where_no_worktree_can_be_made_is_said_before_the_sessions_start(tmp_path, monkeypatch, capsys):
    """In a repository with no commit yet `cockpit run` edited the user's files in place, said only
    in the report afterwards (nothing to diff or discard)."""
    import subprocess

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)
    unborn, plain = tmp_path / "unborn", tmp_path / "plain"
    unborn.mkdir()
    plain.mkdir()
    subprocess.run(["git", "init", "-q", str(unborn)], check=True)
    with StandIn() as api:
        api.script(Reply("one"), Reply("two"))
        for folder, what in ((unborn, "a git repository with no commit yet"), (plain, "not a git repository")):
            assert main(["run", "look", "--base-url", api.base_url, "--workspace", str(folder), "--no-server"]) == 0
            err = capsys.readouterr().err
            assert f"warning: {folder} is {what}: the sessions work in place, in your files" in err


def test_uncommitted_changes_the_worktree_will_not_have_are_said(tmp_path, monkeypatch, capsys):
    """A session's worktree is made from HEAD: a checkout's uncommitted edits were silently not in
    it (the session worked on what the user no longer sees)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)
    repo = make_repo(tmp_path / "repo")
    with StandIn() as api:
        api.script(Reply("clean"), Reply("dirty"))
        assert main(["run", "look", "--base-url", api.base_url, "--workspace", str(repo)]) == 0
        assert "uncommitted change" not in capsys.readouterr().err
        (repo / "calc.py").write_text((repo / "calc.py").read_text() + "# WIP\n")
        assert main(["run", "look", "--base-url", api.base_url, "--workspace", str(repo)]) == 0
    assert f"1 uncommitted change in {repo} is not in the sessions' worktrees" in capsys.readouterr().err
