"""The CLI about a session of another host: every hint it prints names ``--host NAME`` (so it
works as copied), and a session id as the grid shows it, ``box:ID``, means ``--host box ID``."""

import argparse
import io
import json

import pytest

from cockpit import events as ev
from cockpit import server_cli
from cockpit.attach_cli import _Shower
from cockpit.cli import main
from cockpit.headless import _print_report, format_report
from cockpit.host_cli import hint


def _shown(host, *events) -> str:
    out = io.StringIO()
    shower = _Shower("s1", out, host)
    for e in events:
        shower.show(e)
    return out.getvalue()


def test_attach_hints_name_the_host():
    ask = ev.ApprovalRequested("s1", "r1", "bash", "bash", "echo hi", "echo hi")
    out = _shown("box", ask, ev.StatusChanged("s1", ev.SessionStatus.WAITING))
    assert "cockpit approve --host box s1 [--session]" in out and "cockpit deny --host box s1 --reason" in out
    assert "cockpit send --host box s1 '…'" in out
    out = _shown("box", ev.StatusChanged("s1", ev.SessionStatus.BUDGET_REACHED, "session cap $1 — reached"))
    assert "cockpit budget --host box s1 --usd" in out
    assert "--host" not in _shown(None, ask, ev.StatusChanged("s1", ev.SessionStatus.WAITING))
    asking = _shown(None, ask, ev.StatusChanged("s1", ev.SessionStatus.NEEDS_APPROVAL, "echo hi"))
    assert asking.endswith("cockpit approve s1 [--session]  ·  cockpit deny s1 --reason '…'\n")
    # a headless session's ask is denied as it comes: no hint to run a command that can only fail
    denied = _shown(None, ask, ev.ApprovalResolved("s1", "r1", False, "auto", "headless: rerun with --approve"),
                    ev.StatusChanged("s1", ev.SessionStatus.WAITING))
    assert "cockpit approve" not in denied and "[denied: headless: rerun with --approve]" in denied


def _report(message: str = "server budget $1 reached") -> dict:
    usage = {"input": 1, "output": 1, "cache_write": 0, "cache_read": 0, "total": 2}
    s = {"id": "s1", "task": "t", "status": "error", "model": "m", "permission_mode": "default", "cwd": "/w",
         "placement": "in place", "preseed": False, "error": {"kind": "budget", "message": message},
         "answer": "", "usage": usage, "cost_usd": None, "requests": 1, "transcript": "/t",
         "budget": {"usd": None, "tokens": None, "reached": {"scope": "server", "caps": ["usd"]}}}
    return {"sessions": [s], "totals": {"usage": usage, "cost_usd": None}, "pricing": {"date": "d"}}


def test_run_hints_name_the_host(capsys):
    assert "cockpit budget --host box --server --usd N" in format_report(_report(), "box")
    assert "cockpit budget --server --usd N" in format_report(_report())
    args = argparse.Namespace(json=False, detach=True, host=["box"])
    _print_report(args, _report())
    out = capsys.readouterr().out
    assert "running in host box's server: cockpit ls --host box · cockpit attach --host box ID" in out


def test_a_command_run_whole_on_a_host_learns_its_name(monkeypatch):
    monkeypatch.setenv("COCKPIT_HINT_HOST", "box")
    assert hint(None) == " --host box"
    monkeypatch.delenv("COCKPIT_HINT_HOST")
    assert hint(None) == "" and hint("local") == ""


@pytest.fixture
def seen(monkeypatch):
    got: dict = {}

    def fake(args):
        got["args"] = args
        return 0

    for name in ("cmd_send", "cmd_approve", "cmd_deny", "cmd_kill", "cmd_attach", "cmd_budget"):
        monkeypatch.setattr(server_cli, name, fake)
    return got


@pytest.mark.parametrize("argv", [["send", "box:abcd1234", "hi"], ["approve", "box:abcd1234"],
                                  ["deny", "box:abcd1234"], ["kill", "box:abcd1234"], ["attach", "box:abcd1234"],
                                  ["budget", "box:abcd1234"],
                                  ["approve", "box:abcd1234", "--host", "box"]])
def test_a_grid_id_means_that_host(seen, argv):
    assert main(argv) == 0
    assert seen["args"].host == ["box"] and seen["args"].id == "abcd1234"


@pytest.mark.parametrize("argv", [["shell", "box:abcd1234"], ["worktrees", "diff", "box:abcd1234"]])
def test_a_grid_id_runs_a_whole_command_on_that_host(monkeypatch, argv):
    from cockpit import host_cli

    ran: dict = {}
    monkeypatch.setattr(host_cli, "run_there", lambda args, words: ran.setdefault("words", words) and 0)
    assert main(argv) == 0
    assert ran["words"] == [*argv[:-1], "abcd1234", "--host", "box"]


def test_a_grid_id_of_the_local_host_is_plain(seen):
    assert main(["kill", "local:abcd1234"]) == 0
    assert seen["args"].id == "abcd1234" and not getattr(seen["args"], "host", None)


@pytest.mark.parametrize(("argv", "line"), [
    (["approve", "box:abcd1234", "--host", "other"], "--host other and box:abcd1234 name two hosts"),
    (["kill", "box:"], "'box:' names host box but no session"),
    (["kill", " b:x"], "is not HOST:ID"),
])
def test_a_clash_or_a_bad_grid_id_is_one_line(seen, capsys, argv, line):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and line in err and "args" not in seen


@pytest.mark.parametrize("argv", [["server", "status", "--host", "box"], ["server", "stop", "--host", "box"],
                                  ["--host", "box", "server", "start"], ["server", "--host", "box"]])
def test_server_management_with_host_runs_there(monkeypatch, argv):
    from cockpit import host_cli

    ran: dict = {}
    monkeypatch.setattr(host_cli, "run_there", lambda args, words: ran.setdefault("words", words) and 0)
    assert main(argv) == 0
    assert [w for w in ran["words"] if w not in ("--host", "box")] == [w for w in argv if w not in ("--host", "box")]


@pytest.mark.parametrize("action", ["run", "bridge"])
def test_a_foreground_server_on_a_host_is_refused_in_one_line(capsys, action):
    assert main(["server", action, "--host", "box"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"cockpit: error: `cockpit server {action}` runs in this terminal")


HELD = ("1nh1abcdefgh: message queued; the session is at its spend cap, so it waits in 'budget reached' until "
        "the cap is raised: cockpit budget{} 1nh1abcdefgh --usd …")


SERVER_HELD = ("1nh1abcdefgh: message queued; the server's spend cap (all sessions together) is reached, so it "
               "waits in 'budget reached' until that cap is raised: cockpit budget{} --server --usd …")


@pytest.mark.parametrize(("status", "held_by", "host", "line"), [
    ("waiting for you", None, None, "1nh1abcdefgh: sent"),
    ("waiting for you", "session", None, HELD.format("")),  # over its cap, lowered while it waited
    ("waiting for you", "server", None, SERVER_HELD.format("")),  # the server's cap: raising its own does nothing
    ("working", None, None, "1nh1abcdefgh: queued (working): it takes the message when it next waits for you"),
    ("budget reached", "session", "box", HELD.format(" --host box")),
    ("budget reached", "server", "box", SERVER_HELD.format(" --host box")),
])
def test_send_says_what_became_of_the_message(monkeypatch, capsys, status, held_by, host, line):
    calls: list = []

    def call(method, timeout=None, host=None, **params):
        calls.append((method, host, params))
        if method == "get":
            return {"id": "1nh1abcdefgh", "status": status}
        return {"held_by": held_by} if method == "budget" else {}

    monkeypatch.setattr(server_cli, "_call", call)
    assert main(["send", f"{host}:1nh1" if host else "1nh1", "go on"]) == 0
    assert capsys.readouterr().out == line + "\n"
    assert ("send", host, {"id": "1nh1abcdefgh", "text": "go on"}) in calls


def test_worktrees_run_whole_on_a_host_name_it_in_their_hints(monkeypatch, capsys):
    monkeypatch.setenv("COCKPIT_HINT_HOST", "box")  # what run_there sets there
    assert main(["worktrees", "diff", "zzzz"]) == 2
    assert "(see `cockpit worktrees --host box`)" in capsys.readouterr().err


def test_run_there_tells_the_host_its_name(monkeypatch):
    from cockpit.server import ssh

    ran: dict = {}
    monkeypatch.setattr(ssh, "run_remote", lambda host, words, cwd=None, env=None: ran.update(words=words, env=env)
                        or 0)
    assert main(["worktrees", "merge", "box:abcd1234"]) == 0
    assert ran == {"words": ["worktrees", "merge", "abcd1234"], "env": {"COCKPIT_HINT_HOST": "box"}}


def test_send_with_an_empty_message_says_so_and_sends_nothing(monkeypatch, capsys):
    calls: list = []
    monkeypatch.setattr(server_cli, "_call", lambda method, **params: calls.append(method) or {})
    assert main(["send", "1nh1abcd", "  "]) == 2
    assert "give the message to send" in capsys.readouterr().err and calls == []


def test_server_status_while_a_server_starts_says_so(monkeypatch, capsys):
    """Just after a client started one (the hook's cold start), the server holds the lock before
    it listens: status says it is starting, not that none runs."""
    from cockpit.server import client as cl

    monkeypatch.setattr(cl, "server_running", lambda: False)
    monkeypatch.setattr(cl, "server_pid", lambda: 4242)
    assert main(["server", "status"]) == 0
    assert capsys.readouterr().out == "the Cockpit server (pid 4242) is starting: not listening yet\n"
    assert main(["server", "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"running": False, "starting": 4242}
    monkeypatch.setattr(cl, "server_pid", lambda: None)
    assert main(["server", "status"]) == 0
    assert capsys.readouterr().out == "no Cockpit server is running\n"


def test_a_hosts_refusal_names_the_host_in_the_commands_it_suggests():
    """`cockpit send --host box ID` said "cockpit resume ID goes on with it" and "(see cockpit ls)":
    copied, they asked this machine's server ("no session")."""
    from cockpit.host_cli import for_host

    said = ("session 1nh6 is headless (cockpit run): once it has ended, cockpit resume 1nh6 goes on with it; "
            "no session 'zz' (see cockpit ls); `cockpit approve zz`; cockpit worktrees diff 1nh6; the Cockpit server")
    assert for_host(said, "box") == (
        "session 1nh6 is headless (cockpit run): once it has ended, cockpit resume --host box 1nh6 goes on with it; "
        "no session 'zz' (see cockpit ls --host box); `cockpit approve --host box zz`; "
        "cockpit worktrees diff --host box 1nh6; the Cockpit server")
    assert for_host("cockpit ls --host box", "box") == "cockpit ls --host box"  # named already
    assert for_host(said, None) == said and for_host(said, "local") == said  # this machine's: as it is


def test_a_stopped_or_hung_server_run_whole_on_a_host_words_its_commands_for_that_host(monkeypatch):
    """`cockpit server status --host box` (run whole on box) said "`cockpit server stop --force`
    ends it": copied here, that killed this machine's server."""
    from cockpit.host_cli import HINT_ENV
    from cockpit.server.client import hung_message, stopped_message

    monkeypatch.setenv(HINT_ENV, "box")
    said = stopped_message(42)
    assert "`kill -CONT 42` on box" in said and "`cockpit server stop --force --host box`" in said
    assert "`cockpit server stop --force --host box`" in hung_message("/run/sock")
    monkeypatch.delenv(HINT_ENV)
    assert "`kill -CONT 42` lets" in stopped_message(42) and "--host" not in stopped_message(42)


def test_a_missing_notes_folder_on_a_host_says_it_is_the_hosts(monkeypatch, capsys, tmp_path):
    """`cockpit memory search x --host box` said "notes folder /…/notes does not exist" with
    nothing saying the folder is on box."""
    from cockpit.cli import main
    from cockpit.host_cli import HINT_ENV

    monkeypatch.setenv(HINT_ENV, "box")  # as run_there tells the command it runs for
    assert main(["memory", "search", "x", "--notes", str(tmp_path / "nope")]) == 2
    assert f"notes folder {tmp_path / 'nope'} on host box does not exist" in capsys.readouterr().err
