"""Issue #22 through the server: the ``review`` actions ``check`` and ``send-back`` and the ``pr``
RPC (draft, then push + ``gh pr create``) over the real socket of a real background server, a
fake ``gh`` on its PATH recording its arguments; the model is the stand-in."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest
from helpers import CALC, fake_gh, git, make_repo, stop_server
from standin import Reply, StandIn, ToolUse

from cockpit import wire
from cockpit.cli import main as cli_main
from cockpit.events import Reviewed
from cockpit.runtime.config import config_path
from cockpit.server import rpc
from cockpit.server.client import BlockingClient, RemoteError, start_server

EDIT = "str_replace_based_edit_tool"
TEST_CALC = "from calc import add\nassert add(2, 2) == 4, 'add is wrong'\nprint('ok')\n"


@pytest.fixture
def server_env(monkeypatch, tmp_path):
    """A real server may be started (and is stopped afterwards); a fake ``gh`` first on PATH."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    record = fake_gh(tmp_path, monkeypatch, with_cwd=True)
    yield record
    stop_server()


def tree_digest(path: Path) -> dict[str, str]:
    skip = (".git/objects/", ".git/worktrees/", ".git/refs/heads/cockpit/", ".git/logs/refs/heads/cockpit/")
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file() and not str(p.relative_to(path)).startswith(skip)}


def reviewed(reply: dict) -> Reviewed:
    event = wire.event_from_json(reply)
    assert isinstance(event, Reviewed), reply
    return event


def last_user_text(api: StandIn, index: int) -> str:
    content = api.message_requests[index]["messages"][-1]["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


def spawn_bypassing(c, api: StandIn, repo: Path, task: str, **extra) -> dict:
    """Spawn an interactive session on ``repo`` in ``bypassPermissions`` against the stand-in
    ``api``; its row (``extra``: more spawn parameters)."""
    return c.call("spawn", task=task, workspace=str(repo), interactive=True, permission_mode="bypassPermissions",
                  config={"api_key": "test-key", "base_url": api.base_url}, **extra)


def wait_for(cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_check_send_back_and_pr_over_the_servers_socket(api, server_env, tmp_path, capsys):
    record = server_env
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC})
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    config_path().write_text('check_command = "python3 test_calc.py"\n')  # the server's own config
    api.script(
        Reply("", [ToolUse(EDIT, {"command": "str_replace", "path": "calc.py", "old_str": "a - b",
                                  "new_str": "b - a"})]),  # still wrong: the check fails
        Reply("Changed add."),
        Reply("Merging main into my branch now."),  # the answer to the send-back follow-up
    )
    start_server()
    with BlockingClient() as c:
        row = spawn_bypassing(c, api, repo, "fix add")
        sid, branch = row["id"], row["worktree"]["branch"]
        assert c.call("wait", ids=[sid], until="idle")["sessions"][0]["status"] == "waiting for you"

        # check: the change merged onto the current base, the output's tail in the message
        res = reviewed(c.call("review", id=sid, action="check"))
        assert res.session_id == sid and res.action == "check" and not res.ok
        assert res.message.startswith("check failed: `python3 test_calc.py`") and "add is wrong" in res.message

        # a conflicting merge changes nothing; send-back gives the session a follow-up naming the file
        (repo / "calc.py").write_text(CALC.replace("a - b", "b + a  # fixed on main"))
        git(repo, "commit", "-q", "-am", "a fix on main")
        before = tree_digest(repo)
        res = reviewed(c.call("review", id=sid, action="merge"))
        assert not res.ok and "conflict in calc.py" in res.message and tree_digest(repo) == before
        # (as the conflict hint says: `cockpit worktrees send-back ID`, through the server)
        assert cli_main(["worktrees", "send-back", sid[-6:]]) == 0
        assert capsys.readouterr().out == f"sent back to session {sid}: merge main into its branch, resolving calc.py\n"
        wait_for(lambda: len(api.message_requests) == 3, "the session's next request")
        followup = last_user_text(api, 2)
        assert "conflicts in these files:\n- calc.py" in followup and "`git merge main`" in followup
        assert branch in followup
        wait_for(lambda: c.call("list")["sessions"][0]["status"] == "waiting for you", "the session's answer")
        assert tree_digest(repo) == before

        # pr: the draft (task, the session's last answer, the last check), nothing pushed
        draft = c.call("pr", id=sid, draft=True)
        assert draft["title"] == "fix add"
        body = draft["body"]
        assert body.startswith("## Task\n\nfix add") and "Merging main into my branch now." in body
        assert "check failed: `python3 test_calc.py`" in body and "add is wrong" in body
        assert not record.exists() and branch not in git(remote, "branch", "--list")

        # pr with an edited title and body: pushed, then gh pr create with exactly those
        res = reviewed(c.call("pr", id=sid, title="Fix add (edited)", body="Edited body.\n\n" + body))
        assert res.action == "pr" and res.ok and res.message == "pull request opened: https://github.com/acme/calc/pull/7"
        gh = json.loads(record.read_text())
        argv = gh["argv"]
        assert argv[:2] == ["pr", "create"] and Path(gh["cwd"]).resolve() == repo.resolve()
        assert argv[argv.index("--title") + 1] == "Fix add (edited)"
        assert argv[argv.index("--body") + 1] == "Edited body.\n\n" + body
        assert argv[argv.index("--head") + 1] == branch and argv[argv.index("--base") + 1] == "main"
        assert git(remote, "rev-parse", branch).strip() == git(repo, "rev-parse", branch).strip()
        assert "b - a" in git(remote, "show", f"{branch}:calc.py")  # the session's change, pushed

        # wrong input is refused with a reason; the server stays up
        with pytest.raises(ValueError, match="review action must be") as refused:
            c.call("review", id=sid, action="frobnicate")
        assert refused.value.code == rpc.REFUSED
        with pytest.raises(RemoteError) as bad:
            c.call("pr", id=sid, title=3)
        assert bad.value.code == rpc.INVALID_PARAMS
        with pytest.raises(KeyError):
            c.call("review", id="nope", action="check")
        assert c.call("hello")["server"] == "cockpit"


def test_check_without_a_command_and_pr_without_a_remote_say_why(api, server_env, tmp_path):
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "x.py", "file_text": "x = 1\n"})]),
               Reply("Done."))
    start_server()
    with BlockingClient() as c:
        row = spawn_bypassing(c, api, repo, "add x")
        sid = row["id"]
        c.call("wait", ids=[sid], until="idle")
        res = reviewed(c.call("review", id=sid, action="check"))
        assert not res.ok and res.message.startswith("no check command: set check_command in config.toml")
        res = reviewed(c.call("review", id=sid, action="send-back"))  # no conflict: nothing to send
        assert not res.ok and res.message == "no conflict with the base branch: nothing to send back"
        assert len(api.message_requests) == 2  # the session got nothing
        res = reviewed(c.call("pr", id=sid, title="add x", body="b"))
        assert not res.ok and res.message.startswith("not pushed:") and "no remote" in res.message
        assert not server_env.exists()  # gh never ran
