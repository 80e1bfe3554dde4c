"""The CLI's conventions: --version, config path/check, doctor, shell completion, and every
command's --help naming the config file and the keys it reads."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from cockpit import __version__, doctor
from cockpit.cli import build_parser, main
from cockpit.runtime import sandbox


def test_version_is_the_installed_distributions(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"cockpit {__version__}" == f"cockpit {version('cockpit')}"


def test_config_path_and_check(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COCKPIT_DATA_DIR", str(tmp_path))
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "config.toml")
    assert main(["config", "check"]) == 0
    assert "does not exist" in capsys.readouterr().out
    (tmp_path / "config.toml").write_text("modle = 'x'\n")
    assert main(["config", "check"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "config.toml") in err and "modle" in err
    # a keymap the app would refuse at start: refused here, and by doctor, with the same line
    (tmp_path / "config.toml").write_text('[keymap]\nspawn = "x"\n')
    assert main(["config", "check"]) == 2
    err = capsys.readouterr().err
    assert "[keymap] gives 'x' to kill and spawn on the main screen" in err
    check = doctor.check_config()
    assert check.state == doctor.FAIL and "gives 'x' to kill and spawn" in check.detail and "[keymap]" in check.fix
    (tmp_path / "config.toml").write_text('[keymap]\nspawn = "ctrl+n"\n')
    assert main(["config", "check"]) == 0 and doctor.check_config().state == doctor.OK


def test_every_commands_help_names_the_config_file_and_its_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("COCKPIT_DATA_DIR", str(tmp_path))
    parser = build_parser()
    assert "config keys read: model, base_url" in parser.format_help()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, command in sub.choices.items():  # type: ignore[attr-defined]
        assert f"config file: {tmp_path / 'config.toml'}" in command.format_help(), name
    assert "check_command" in sub.choices["worktrees"].format_help()  # type: ignore[attr-defined]
    memory = sub.choices["memory"]  # type: ignore[attr-defined]
    preseed = next(a for a in memory._actions if isinstance(a, argparse._SubParsersAction)).choices["preseed"]
    assert "config keys read: top_k" in preseed.format_help()  # and the sub-commands' own --help


def _doctor(capsys, notes) -> tuple[int, dict[str, str]]:
    rc = main(["doctor", "--notes", str(notes)])
    out = capsys.readouterr().out
    lines = {}
    for line in out.splitlines():
        if line[:2] in ("✓ ", "! ", "✗ "):
            label = line[2:].split(":", 1)[0]
            lines[label] = line
    return rc, lines


def test_doctor_on_a_healthy_machine_says_ok_and_never_prints_the_key(tmp_path, monkeypatch, capsys, httpserver):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("---\nname: a\ndescription: d\n---\nbody\n")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value-123")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", httpserver.url_for("/"))
    monkeypatch.setattr(sandbox, "detect", lambda: sandbox.Availability(sandbox.Bubblewrap()))
    rc, lines = _doctor(capsys, notes)
    assert all(not line.startswith("✗") for line in lines.values()), lines
    assert rc == 0
    assert lines["API key"].startswith("✓") and "sk-ant" not in "".join(lines.values())
    assert "1 markdown file" in lines["notes"] and lines["base URL"].startswith("✓")
    assert "not running" in lines["server"]


def test_doctor_names_three_broken_things_with_their_fixes(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COCKPIT_DATA_DIR", str(tmp_path))
    (tmp_path / "config.toml").write_text("[runtime\nmodel = 1\n")  # not TOML
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(sandbox, "detect", lambda: sandbox.Availability(None, "bwrap: not found"))
    rc, lines = _doctor(capsys, tmp_path / "no-notes")
    assert rc == 1
    assert lines["config"].startswith("✗") and "config.toml" in lines["config"]
    assert lines["sandbox"].startswith("✗") and "bwrap: not found" in lines["sandbox"]
    assert lines["base URL"].startswith("✗") and "not reachable" in lines["base URL"]
    assert lines["API key"].startswith("!") and lines["notes"].startswith("!")


def test_doctor_reports_a_running_servers_version(monkeypatch, capsys, tmp_path):
    from cockpit.server import paths

    sock_path = paths.socket_path()
    paths.ensure_private_dir(sock_path.parent)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(sock_path))
    srv.listen(1)

    import json
    import threading

    def answer() -> None:  # a server that says hello with another version
        conn, _ = srv.accept()
        with conn:
            msg = json.loads(conn.makefile("rb").readline())
            conn.sendall((json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                      "result": {"pid": 4242, "version": "0.0.9"}}) + "\n").encode())

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        check = doctor.check_server()
    finally:
        t.join(10)
        srv.close()
    assert check.state == doctor.WARN and "pid 4242" in check.detail and "0.0.9" in check.detail


def test_shell_completion_completes_subcommands(tmp_path):
    for shell in ("bash", "zsh", "fish"):
        out = subprocess.run([sys.executable, "-m", "cockpit", "completion", shell], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0 and "cockpit" in out.stdout and "_ARGCOMPLETE" in out.stdout, out.stderr
    answer = tmp_path / "answer"
    env = dict(os.environ, _ARGCOMPLETE="1", COMP_LINE="cockpit mem", COMP_POINT="11",
               _ARGCOMPLETE_STDOUT_FILENAME=str(answer), _ARGCOMPLETE_IFS="\n")
    subprocess.run([sys.executable, "-m", "cockpit"], env=env, timeout=60, capture_output=True)
    assert answer.read_text().split() == ["memory"]
    env.update(COMP_LINE="cockpit memory pre", COMP_POINT="18")
    subprocess.run([sys.executable, "-m", "cockpit"], env=env, timeout=60, capture_output=True)
    assert answer.read_text().split() == ["preseed"]


@pytest.fixture
def stopped_server():
    """A socket where the server's is that accepts (the kernel does) and never answers: a
    stopped (SIGSTOP) server."""
    from cockpit.server import paths

    sock_path = paths.socket_path()
    paths.ensure_private_dir(sock_path.parent)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(sock_path))
    srv.listen(4)
    yield sock_path
    srv.close()


def test_doctor_names_a_hung_server_and_does_not_hang_with_it(monkeypatch, stopped_server):
    monkeypatch.setattr(doctor, "NET_TIMEOUT_S", 0.3)
    check = doctor.check_server()
    assert check.state == doctor.FAIL and "does not answer" in check.detail and "--force" in check.fix


def test_server_status_and_stop_name_a_hung_server_quickly(monkeypatch, capsys, stopped_server):
    from cockpit import server_cli

    monkeypatch.setattr(server_cli, "STATUS_TIMEOUT_S", 0.3)
    for action in ("status", "stop"):
        assert main(["server", action]) != 0
        err = capsys.readouterr().err
        assert "does not answer" in err and "--force" in err, (action, err)


def test_doctor_names_a_slow_key_helper_while_it_waits_and_reports_it_hung(tmp_path, monkeypatch, capsys):
    from cockpit.runtime import keyhelper

    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(doctor, "_key_helper", lambda: "sleep 60")
    monkeypatch.setattr(doctor, "HELPER_NOTICE_S", 0.0)
    monkeypatch.setattr(keyhelper, "HELPER_TIMEOUT_S", 2.0)
    check = doctor.check_key()
    assert check.state == doctor.FAIL and "within 2 s" in check.detail
    assert "waiting for api_key_helper (stopped after 2 s)" in capsys.readouterr().err
    monkeypatch.setattr(doctor, "_key_helper", lambda: "echo the-key")
    monkeypatch.setattr(doctor, "HELPER_NOTICE_S", 60.0)
    assert doctor.check_key().state == doctor.OK
    assert capsys.readouterr().err == ""  # a quick helper: no notice


def test_doctor_names_each_agents_cli_and_hook(tmp_path, monkeypatch):
    import cockpit.doctor as d

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for exe in ("codex", "gemini"):
        (bin_dir / exe).write_text("#!/bin/sh\n")
        (bin_dir / exe).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text(
        '{"hooks": {"BeforeAgent": [{"hooks": [{"type": "command", "command": "cockpit memory hook"}]}]}}')
    checks = {c.label: c for c in d.check_agents()}
    claude = checks["agent claude"]
    assert claude.state == d.ABSENT and "(npm install -g @anthropic-ai/claude-code" in claude.detail
    if d._bundled_claude():  # the claude-code extra: its CLI is named, so nobody hunts for it
        assert "not on PATH" in claude.detail and "bundled with claude-agent-sdk" in claude.detail
        assert d._bundled_claude() in claude.detail
    assert checks["agent codex"].state == d.WARN and "--agent codex" in checks["agent codex"].fix
    assert checks["agent gemini"].state == d.OK and "hook installed (project)" in checks["agent gemini"].detail
    plugin = tmp_path / ".opencode" / "plugins" / "cockpit-memory.js"
    plugin.parent.mkdir(parents=True)
    from cockpit.opencode_plugin import plugin_text

    plugin.write_text(plugin_text(None, portable=True))
    checks = {c.label: c for c in d.check_agents()}
    assert "hook installed (project)" in checks["agent opencode"].detail
    acp = {c.label: c for c in d.check_acp_agents()}
    assert "not installed (cockpit agents install opencode)" in acp["backend acp:opencode"].detail
    assert acp["backend acp:opencode"].state == d.ABSENT  # optional: counted apart from what works
    (bin_dir / "opencode").write_text("#!/bin/sh\n")
    (bin_dir / "opencode").chmod(0o755)
    acp = {c.label: c for c in d.check_acp_agents()}
    assert acp["backend acp:opencode"].detail == f"OpenCode over ACP: {bin_dir / 'opencode'}"


def test_the_cockpit_command_is_a_script_that_imports_only_the_cli():
    """`cockpit` is a script file, not a console-script entry point: pip's template for those
    imports `re` before Cockpit's code (≈ 3 ms on every prompt the hook answers, the project
    form of the hook included). The script runs the CLI and nothing else."""
    import ast

    root = Path(__file__).resolve().parents[1]
    script = root / "scripts" / "cockpit"
    assert script.read_text().startswith("#!python\n")
    tree = ast.parse(script.read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported == {"sys", "cockpit.cli"}
    out = subprocess.run([sys.executable, str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("cockpit ")
    assert 'script-files = ["scripts/cockpit"]' in (root / "pyproject.toml").read_text()


def test_doctor_warns_about_the_optional_claude_code_backend_only_when_it_is_chosen(monkeypatch):
    """A fresh install without the claude-code extra is healthy: doctor warns only when the config
    (here the environment) chooses that backend and its package is missing."""
    import importlib.util

    from cockpit import doctor

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "claude_agent_sdk" else real(name, *a))
    monkeypatch.delenv("COCKPIT_BACKEND", raising=False)
    (check,) = doctor.check_backends()  # (and no line about its sandbox)
    assert check.state == doctor.ABSENT and "optional" in check.detail and check.line().startswith("·")
    monkeypatch.setenv("COCKPIT_BACKEND", "claude-code")
    (check,) = doctor.check_backends()
    assert check.state == doctor.WARN and "chooses it" in check.detail


def test_doctor_says_when_claude_codes_own_sandbox_cannot_run(monkeypatch):
    import shutil

    from cockpit import doctor

    if not doctor.importlib.util.find_spec("claude_agent_sdk"):
        pytest.skip("the claude-code extra is not installed")
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda exe, *a, **k: None if exe == "socat" else which(exe, *a, **k))
    _backend, sandbox = doctor.check_backends()
    assert sandbox.state == doctor.WARN and "needs socat" in sandbox.detail and "unconfined" in sandbox.detail


def test_every_usage_line_lists_every_sub_command():
    """A hand-written metavar (``{index,search,…}``) went stale once: `misses` and `calibrate`
    were missing from ``cockpit memory --help``. Every parser's list names all its sub-commands."""
    def walk(p: argparse.ArgumentParser, prog: str):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                listed = set((action.metavar or "").strip("{}").split(","))
                assert listed == set(action.choices), f"{prog}: {sorted(set(action.choices) - listed)} not in usage"
                for name, child in action.choices.items():
                    walk(child, f"{prog} {name}")

    walk(build_parser(epilogs=False), "cockpit")


@pytest.mark.parametrize("argv, usage", [
    (["ls", "--bogus"], "usage: cockpit ls "),
    (["memory", "search", "x", "--bogus"], "usage: cockpit memory search "),
])
def test_an_unknown_flag_is_refused_with_its_sub_commands_usage(argv, usage, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith(usage) and "unrecognized arguments: --bogus" in err
    assert "[--version]" not in err  # not the whole CLI's usage


@pytest.mark.parametrize("argv, line", [
    (["lss"], "cockpit: error: unknown command 'lss' — did you mean ls?"),
    (["memory", "serch", "x"], "cockpit memory: error: unknown command 'serch' — did you mean search?"),
    (["run", "x", "--permission-mode", "acceptedits"],
     "cockpit run: error: argument --permission-mode: no choice 'acceptedits' — did you mean acceptEdits?"),
])
def test_a_mistyped_choice_names_the_closest_one(argv, line, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and capsys.readouterr().err.splitlines()[-1] == line


def test_doctor_says_when_a_note_was_not_indexed(tmp_path, capsys):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("---\nname: a\ndescription: d\n---\nbody\n")
    (notes / "broken.md").write_text('---\nname: b\ndescription: "unclosed\n---\nbody\n')
    (notes / "MEMORY.md").write_text("- [a](a.md)\n")  # Claude Code's index of its folder: not a note
    assert main(["memory", "index", "--notes", str(notes), "--no-server"]) == 0
    capsys.readouterr()
    index = next(c for c in doctor.check_notes(notes) if c.label == "index")
    assert index.state == doctor.WARN and index.detail.startswith("1 of 2 markdown file(s) skipped")
    assert "cockpit memory lint" in index.fix
    (notes / "broken.md").unlink()  # MEMORY.md alone is no warning (every --notes auto folder has one)
    assert main(["memory", "index", "--notes", str(notes), "--no-server"]) == 0
    index = next(c for c in doctor.check_notes(notes) if c.label == "index")
    assert index.state == doctor.OK, index.detail


def test_memory_index_says_the_folders_warnings_every_time(tmp_path, capsys):
    """A second `memory index` read no file, and so said no warning: the folder's are said each time."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plain.md").write_text("a note with no frontmatter\n")
    for _ in range(2):
        assert main(["memory", "index", "--notes", str(notes), "--no-server"]) == 0
        out = capsys.readouterr().out
        assert "  warning plain.md: no frontmatter; name from file name" in out


@pytest.mark.parametrize("argv, says", [
    (["worktrees", "list", "no-such-session"], "worktrees list takes no session id (got 'no-such-session')"),
    (["worktrees", "diff", "abcd1234", "--title", "T"], "--title is for worktrees pr, not diff"),
    (["worktrees", "discard", "abcd1234", "--check"], "--check is for worktrees merge and pr, not discard"),
    (["worktrees", "list", "--yes"], "--yes is for worktrees merge, discard, check and pr, not list"),
    (["worktrees", "diff", "abcd1234", "--notes", "n"], "--notes is for worktrees merge, keep, check and pr, not diff"),
    (["budget", "abcd1234", "--server"], "not both (got abcd1234 and --server)"),
])
def test_a_sub_commands_argument_that_does_not_apply_is_refused_not_dropped(argv, says, capsys):
    """`worktrees list ID` listed everything, `diff --title` dropped the title, and `budget ID
    --server` said to give one of the two."""
    assert main(argv) == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize("row, says", [
    ({"reviewed": {"action": "merge", "ok": True}, "worktree": {"branch": "b"}}, "its change was merged, so HEAD has it"),
    ({"reviewed": {"action": "keep", "ok": True}, "worktree": {"branch": "cockpit/x"}}, "on the kept branch cockpit/x"),
    ({"reviewed": {"action": "discard", "ok": True}, "worktree": {}}, "discarded: what it changed before is not there"),
    ({"reviewed": None, "worktree": {"removed": True}}, "it had changed nothing"),
])
def test_a_resume_in_a_new_worktree_says_where_the_earlier_change_is(row, says):
    """It said "what it changed before is not there" after a merge (HEAD had it) and a keep (the
    branch had it), and "merged, kept or discarded" for a session that changed nothing."""
    from cockpit.server_cli import _where_its_change_went

    assert says in _where_its_change_went(row)


def test_worktrees_refuses_a_notes_folder_given_that_does_not_exist(tmp_path, capsys):
    """`worktrees keep/check ID --notes /nope` took the missing folder as no notes, silently."""
    from helpers import make_repo

    from cockpit.runtime import load_config
    from cockpit.runtime import worktree as wt

    repo = make_repo(tmp_path / "repo")
    info = wt.create(repo, "abcd1234efgh", "task", load_config().resolved_worktrees_dir())
    assert main(["worktrees", "keep", info.session_id, "--notes", str(tmp_path / "nope")]) == 2
    assert "notes folder" in capsys.readouterr().err and Path(info.path).is_dir()


def test_an_option_between_an_action_and_its_session_id_is_taken(monkeypatch):
    """`cockpit worktrees diff --host box ID` — as `cockpit run --host box`'s own hint prints it —
    failed: "unrecognized arguments: ID" (argparse takes `diff`, then the option, and leaves the
    id of the second optional positional over)."""
    from cockpit import worktrees_cli

    got = []
    monkeypatch.setattr(worktrees_cli, "run", lambda args: got.append((args.action, args.session, args.json)) or 0)
    assert main(["worktrees", "diff", "--json", "1nh6cx51"]) == 0
    assert main(["worktrees", "list", "--json"]) == 0
    assert got == [("diff", "1nh6cx51", True), ("list", None, True)]
    with pytest.raises(SystemExit):
        main(["worktrees", "diff", "--json", "a", "b"])  # one id only: the second is refused
