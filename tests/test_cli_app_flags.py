"""The app's flags given before a sub-command (``cockpit --permission-mode plan run x``) apply to
it when it has the same option, and are refused in one line when it has not: never dropped."""

from pathlib import Path

import pytest

from cockpit import headless, memory_cli, server_cli
from cockpit.cli import main


@pytest.fixture
def seen(monkeypatch):
    """The parsed arguments each faked command got."""
    got: dict = {}

    def fake(name):
        def run(args):
            got[name] = args
            return 0
        return run

    monkeypatch.setattr(headless, "run", fake("run"))
    monkeypatch.setattr(memory_cli, "cmd_search", fake("search"))
    monkeypatch.setattr(server_cli, "cmd_ls", fake("ls"))
    return got


def test_flags_before_run_apply_to_run(seen, tmp_path):
    argv = ["--permission-mode", "plan", "--model", "my-model", "--workspace", str(tmp_path), "--top-k", "3",
            "--no-preseed", "--backend", "acp:claude", "--network", "on", "--no-worktree", "run", "x"]
    assert main(argv) == 0
    a = seen["run"]
    assert (a.permission_mode, a.model, a.workspace, a.top_k) == ("plan", ["my-model"], tmp_path, 3)
    assert a.no_preseed and a.no_worktree and a.backend == "acp:claude" and a.network == "on"
    assert a.tasks == ["x"]


def test_flags_before_a_nested_command_apply_to_it(seen):
    assert main(["--notes", "elsewhere", "memory", "search", "q", "--json"]) == 0
    assert seen["search"].notes == "elsewhere" and seen["search"].query == "q"


def test_global_flags_stay_as_they_are(seen, monkeypatch):
    monkeypatch.delenv("COCKPIT_NO_SERVER")
    assert main(["--no-server", "--host", "box", "--model", "m", "run", "x", "--", "-y"]) == 0
    a = seen["run"]
    assert a.host == ["box"] and a.no_server and a.model == ["m"] and a.tasks == ["x", "-y"]


def test_a_flag_the_command_has_not_is_one_line_naming_where_it_belongs(seen, capsys):
    assert main(["--permission-mode", "plan", "ls"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ls" not in seen
    assert err.startswith("cockpit: error: --permission-mode before `ls` is a flag of the app")


def test_a_flag_given_before_and_after_is_refused(seen, capsys):
    assert main(["--model", "a", "run", "x", "--model", "b"]) == 2
    assert "--model was given both before and after `run`" in capsys.readouterr().err and "run" not in seen


def test_without_a_sub_command_nothing_moves(monkeypatch):
    from cockpit import app_flags, cli

    parser = cli.build_parser(epilogs=False)
    args = parser.parse_args(["--model", "m"])
    assert app_flags.moved(parser, args, ["--model", "m"]) is None
    assert Path(args.workspace) == Path(".")
