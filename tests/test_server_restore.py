"""A change no one reviewed survives its server's end: the next server restores each session that
ended (or was interrupted) with its change still in its worktree — listed as it ended, diffed,
reviewed, sent back and resumed as before — and a damaged record of one never keeps it from
starting. Real background servers over their socket; the model is the stand-in."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from helpers import git, make_repo, stop_server
from standin import Reply, ToolUse
from test_server_ship import EDIT, last_user_text, reviewed, spawn_bypassing, wait_for

from cockpit import wire
from cockpit.cli import main as cli_main
from cockpit.events import SessionSpawned
from cockpit.server import paths
from cockpit.server.client import BlockingClient, RemoteError, start_server, wait_for_stop


@pytest.fixture
def server_env(monkeypatch, tmp_path):
    """A real server may be started (and is stopped afterwards)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    yield
    stop_server()


def streaming_with_a_change(c: BlockingClient, sid: str) -> bool:
    """Session ``sid`` streams its answer after an edit that changed one file."""
    row = c.call("get", id=sid)
    return row["status"] == "streaming" and (row["diff"] or {}).get("files") == 1


def streaming(c: BlockingClient, sid: str) -> bool:
    return c.call("get", id=sid)["status"] == "streaming"


def crashed_while(api, repo: Path, task: str, ready=streaming, what: str = "the session's answer") -> dict:
    """Start a server, spawn ``task`` there (bypassPermissions) and, once ``ready(client, id)``,
    SIGKILL the server (the session is left mid-answer: the next server lists it interrupted);
    the stand-in's stalled answer is released. The session's row."""
    start_server()
    with BlockingClient() as c:
        pid = c.call("server.status")["pid"]
        row = spawn_bypassing(c, api, repo, task)
        wait_for(lambda: ready(c, row["id"]), what)
    os.kill(pid, signal.SIGKILL)
    assert wait_for_stop(pid, 10)
    api.release()
    return row


def test_changes_left_unreviewed_come_back_when_the_server_starts_again(api, server_env, tmp_path):
    """`cockpit server stop` (or a reboot) before the review: the next server lists each session
    whose worktree still holds its change — one that finished, one the stop killed — as it ended,
    with its events for an app's pane, and it is diffed, merged and closed as before; a merged or
    closed one does not come back the time after."""
    repo = make_repo(tmp_path / "repo")
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "one.txt", "file_text": "one\n"})]),
               Reply("Added one."),
               Reply("", [ToolUse(EDIT, {"command": "create", "path": "two.txt", "file_text": "two\n"})]),
               Reply("Adding two, and now a long explanation", stall_after=3))
    start_server()
    with BlockingClient() as c:
        done = spawn_bypassing(c, api, repo, "add one")
        c.call("wait", ids=[done["id"]], until="idle")
        killed = spawn_bypassing(c, api, repo, "add two")
        wait_for(lambda: streaming_with_a_change(c, killed["id"]), "the second session's edit")
    stop_server()
    api.release()
    start_server()
    with BlockingClient() as c:
        rows = {r["id"]: r for r in c.call("list")["sessions"]}
        assert {i: r["status"] for i, r in rows.items()} == {done["id"]: "done", killed["id"]: "killed"}
        assert rows[done["id"]]["answer"] == "Added one." and rows[done["id"]]["diff"]["files"] == 1
        assert rows[killed["id"]]["worktree"]["path"] == killed["worktree"]["path"]
        snapshot = [wire.event_from_json(e) for e in c.call("subscribe")["events"]]
        spawned = {e.session_id for e in snapshot if isinstance(e, SessionSpawned)}
        assert spawned == {done["id"], killed["id"]}  # an attaching app gets a pane for each
        assert [f["path"] for f in c.call("diff", id=killed["id"])["files"]] == ["two.txt"]
        assert reviewed(c.call("review", id=done["id"], action="merge")).ok
        assert (repo / "one.txt").read_text() == "one\n"
    stop_server()
    start_server()
    with BlockingClient() as c:  # merged: gone; the other still waits for its review
        assert [r["id"] for r in c.call("list")["sessions"]] == [killed["id"]]
        c.call("forget", id=killed["id"])  # closed: its worktree stays (`cockpit worktrees`), no pane
    stop_server()
    start_server()
    with BlockingClient() as c:
        assert c.call("list")["sessions"] == []
    assert Path(killed["worktree"]["path"], "two.txt").is_file()


def test_a_session_interrupted_with_a_change_is_diffed_and_resumed_by_the_next_server(api, server_env, tmp_path):
    """A server killed while a session worked in its worktree: the next server lists it
    ``interrupted`` and its change can be diffed (an app's `d` said "no session"); it is resumed
    by its id (the resumed session works on in the same worktree) and leaves the list."""
    repo = make_repo(tmp_path / "repo")
    cfg = {"api_key": "test-key", "base_url": api.base_url}
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "two.txt", "file_text": "two\n"})]),
               Reply("Adding two, and now a long explanation", stall_after=3))
    row = crashed_while(api, repo, "add two", streaming_with_a_change, "the session's edit")
    start_server()
    with BlockingClient() as c:
        assert [(r["id"], r["status"]) for r in c.call("list")["sessions"]] == [(row["id"], "interrupted")]
        assert [f["path"] for f in c.call("diff", id=row["id"])["files"]] == ["two.txt"]
        with pytest.raises(RemoteError, match="was interrupted .*resume it first"):
            c.call("send", id=row["id"], text="go on")
        api.script(Reply("Resumed: two.txt is there."))
        new = c.call("resume", id=row["id"][:6], config=cfg, interactive=False)
        c.call("wait", ids=[new["id"]], until="final")
        assert [r["id"] for r in c.call("list")["sessions"]] == [new["id"]]
        assert new["worktree"]["path"] == row["worktree"]["path"]


def test_a_restored_sessions_conflict_is_sent_back_with_the_reviewing_clients_settings(api, server_env, tmp_path,
                                                                                      monkeypatch, capsys):
    """Send-back of a change the previous server left for review resumes the session with the
    settings of the client that sends it back (its model server and key), as a resume does: the
    new server never held the session's own (it called the server's default URL and hung)."""
    repo = make_repo(tmp_path / "repo")
    cfg = {"api_key": "test-key", "base_url": api.base_url}
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "two.txt", "file_text": "two\n"})]),
               Reply("Added two."))
    start_server()
    with BlockingClient() as c:
        row = c.call("spawn", task="add two", workspace=str(repo), interactive=False,
                     permission_mode="bypassPermissions", config=cfg)
        c.call("wait", ids=[row["id"]], until="final")
    stop_server()
    (repo / "two.txt").write_text("two, on main\n")
    git(repo, "add", "two.txt")
    git(repo, "commit", "-q", "-m", "two on main")
    start_server()
    api.script(Reply("Merging main now."))
    with BlockingClient() as c:
        assert not reviewed(c.call("review", id=row["id"], action="merge")).ok  # a conflict
    # as the conflict hint says, from a terminal whose settings name the stand-in
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    assert cli_main(["worktrees", "send-back", row["id"]]) == 0
    assert "resolving two.txt" in capsys.readouterr().out
    wait_for(lambda: len(api.message_requests) == 3, "the resumed session's request")
    assert "conflicts in these files:\n- two.txt" in last_user_text(api, 2)
    with BlockingClient() as c:  # discarded by its first id: the resumed session's row says so too
        resumed = next(r["id"] for r in c.call("list")["sessions"] if r["id"] != row["id"])
        c.call("wait", ids=[resumed], until="idle")
        assert reviewed(c.call("review", id=row["id"], action="discard")).ok
        after = c.call("get", id=resumed)
        assert after["status"] == "done" and after["reviewed"]["action"] == "discard", after["reviewed"]


def _two_sessions_with_changes(api, repo: Path) -> tuple[dict, dict]:
    cfg = {"api_key": "test-key", "base_url": api.base_url}
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "one.txt", "file_text": "one\n"})]),
               Reply("Added one."),
               Reply("", [ToolUse(EDIT, {"command": "create", "path": "two.txt", "file_text": "two\n"})]),
               Reply("Added two."))
    start_server()
    with BlockingClient() as c:
        rows = []
        for task in ("add one", "add two"):
            row = c.call("spawn", task=task, workspace=str(repo), interactive=False,
                         permission_mode="bypassPermissions", config=cfg)
            c.call("wait", ids=[row["id"]], until="final")
            rows.append(row)
    stop_server()
    return rows[0], rows[1]


def test_a_damaged_record_or_registry_section_loses_only_itself_and_the_server_starts(api, server_env, tmp_path):
    """A worktree record with a field of the wrong type (`"cwd": null`) kept every server from
    starting (a TypeError at recovery); a damaged section of live.json lost the other two. A record
    missing what names the worktree (its branch) leaves that session out, logged; one missing
    what can be told without it (where the session works: its root) is read."""
    import json

    repo = make_repo(tmp_path / "repo")
    one, two = _two_sessions_with_changes(api, repo)
    meta = Path(one["worktree"]["path"]).with_suffix(".json")
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "branch": None}))
    other = Path(two["worktree"]["path"]).with_suffix(".json")
    other.write_text(json.dumps({**json.loads(other.read_text()), "cwd": None}))
    registry = paths.registry_path()
    data = json.loads(registry.read_text())
    registry.write_text(json.dumps({**data, "interrupted": None}))  # another section damaged
    start_server()
    with BlockingClient() as c:
        assert [r["id"] for r in c.call("list")["sessions"]] == [two["id"]]
    log = paths.log_path().read_text()
    assert f"session {one['id']} could not be restored" in log and str(meta) in log and "Traceback" not in log
    assert "'interrupted' section is damaged" in log
    assert Path(one["worktree"]["path"], "one.txt").is_file()  # its change stays where it was


def test_an_interrupted_session_stays_listed_when_its_unchanged_worktree_is_pruned(api, server_env, tmp_path):
    """Interrupted before it changed anything, restored with its (empty) worktree, then that
    worktree pruned while no server ran: it is still listed, to be resumed (it vanished)."""
    repo = make_repo(tmp_path / "repo")
    api.script(Reply("Thinking about it for a long while", stall_after=3))
    row = crashed_while(api, repo, "think")
    for _restart in range(2):
        start_server()
        with BlockingClient() as c:
            assert [(r["id"], r["status"]) for r in c.call("list")["sessions"]] == [(row["id"], "interrupted")]
        stop_server()
    git(repo, "worktree", "remove", "--force", row["worktree"]["path"])
    start_server()
    with BlockingClient() as c:
        assert [(r["id"], r["status"]) for r in c.call("list")["sessions"]] == [(row["id"], "interrupted")]


def test_a_session_resumed_in_an_interrupted_ones_worktree_keeps_it_and_answers_to_its_own_id(
        api, server_env, tmp_path, capsys, monkeypatch):
    """An interrupted session, resumed by the next server (`cockpit resume ID`: the command line had
    no way to), works on in its worktree — whose record is the first session's, which the server forgot. `cockpit worktrees prune` pruned that
    (unchanged) worktree under the working session; `worktrees diff` with the new id said "no
    session worktree"; a discard by the old id bypassed the server that runs a session in it."""
    repo = make_repo(tmp_path / "repo")
    api.script(Reply("Thinking about it for a long while", stall_after=3), Reply("Resumed and waiting."))
    old = crashed_while(api, repo, "think")
    tree = Path(old["worktree"]["path"])
    start_server()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)  # the resuming terminal's settings (the key: test-key)
    capsys.readouterr()
    assert cli_main(["resume", old["id"][-5:]]) == 0  # from the command line, as the app's r, o
    line = capsys.readouterr().out
    assert line.startswith(f"{old['id']} resumed as ") and "cockpit attach" in line, line
    new = {"id": line.split(" resumed as ", 1)[1].split()[0]}
    with BlockingClient() as c:
        c.call("wait", ids=[new["id"]], until="idle")
        assert api.message_requests[-1]["messages"][0]["content"]  # it went on with the conversation
        assert [r["id"] for r in c.call("list")["sessions"]] == [new["id"]]
        assert c.call("get", id=new["id"])["worktree"]["path"] == str(tree)
    capsys.readouterr()
    assert cli_main(["worktrees", "prune"]) == 0
    out = capsys.readouterr().out
    assert f"left {old['id']}: session {new['id']} works in it and is waiting for you" in out, out
    assert tree.is_dir() and "0 pruned" in out
    (tree / "note.txt").write_text("from the resumed session\n")
    assert cli_main(["worktrees", "diff", new["id"]]) == 0
    out, err = capsys.readouterr()
    assert "note.txt" in out and f"session {new['id']} works in session {old['id']}'s worktree" in err
    assert cli_main(["worktrees", "discard", old["id"], "--yes"]) == 0  # through the server: it ends the session
    assert "discarded" in capsys.readouterr().out and not tree.exists()
    with BlockingClient() as c:  # its row says its change went too (it still showed the branch)
        row = c.call("get", id=new["id"])
        assert row["status"] == "done" and (row["reviewed"]["action"], row["reviewed"]["ok"]) == ("discard", True)


async def test_a_new_server_answers_while_it_reads_what_the_last_one_left(monkeypatch, tmp_path):
    """Reading the last server's transcripts (30 MB each took seconds) ran on the event loop after
    the socket was up: clients were told the server did not answer. Now it is read in a thread:
    `hello` answers at once, a request about sessions waits for it."""
    import asyncio
    import threading

    from cockpit.runtime import RuntimeConfig
    from cockpit.server import daemon
    from cockpit.server.client import AsyncClient

    reading, release = threading.Event(), threading.Event()
    real = daemon._read_left

    def slow(sid, transcript):
        reading.set()
        release.wait(60)
        return real(sid, transcript)

    monkeypatch.setattr(daemon, "_read_left", slow)
    registry = paths.registry_path()  # one session left by the last server (its transcript gone since)
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text('{"sessions": {"s1": "%s"}}' % (tmp_path / "gone.jsonl"))
    srv = daemon.Server(RuntimeConfig(api_key="test-key"))
    await srv.start()
    try:
        c = await AsyncClient.connect(srv.socket_path)
        await asyncio.to_thread(reading.wait, 60)
        assert (await c.call("hello"))["server"] == "cockpit"  # while the thread reads
        listed = asyncio.ensure_future(c.call("list"))
        done, _ = await asyncio.wait([listed], timeout=0.2)  # (load can only make this pass)
        assert not done  # it waits for what the last server left
        release.set()
        assert (await asyncio.wait_for(listed, 60))["sessions"] == []
        await c.close()
    finally:
        release.set()
        await srv.shutdown()


def test_cockpit_resume_takes_an_ended_session_and_refuses_a_live_one(api, server_env, tmp_path, capsys,
                                                                      monkeypatch):
    """`cockpit resume ID` (the command line had no way to go on with an ended session); the
    resumed session keeps the spend cap it was spawned with (it had none), and a second resume
    while the first works in the worktree is refused (two sessions, two copies of the
    conversation, one tree)."""
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "one.txt", "file_text": "one\n"})]),
               Reply("First answer."), Reply("Back again."))
    start_server()
    with BlockingClient() as c:
        row = spawn_bypassing(c, api, repo, "look", max_budget_usd=5.0)
        c.call("wait", ids=[row["id"]], until="idle")
    capsys.readouterr()
    assert cli_main(["resume", row["id"]]) == 1
    assert "is waiting for you: it has not ended" in capsys.readouterr().err
    assert cli_main(["kill", row["id"]]) == 0
    capsys.readouterr()
    assert cli_main(["resume", row["id"]]) == 0
    new = capsys.readouterr().out.split(" resumed as ", 1)[1].split()[0]
    with BlockingClient() as c:  # its conversation back, waiting for a follow-up, in its worktree, with its cap
        assert c.call("wait", ids=[new], until="idle")["sessions"][0]["status"] == "waiting for you"
        got = c.call("get", id=new)
        assert got["worktree"]["path"] == row["worktree"]["path"] and got["budget"]["usd"] == 5.0
    assert cli_main(["resume", row["id"]]) == 1  # again, while that one works in the tree
    assert f"session {new} already works in this session's worktree" in capsys.readouterr().err
    assert cli_main(["send", new, "go on"]) == 0 and f"{new}: sent" in capsys.readouterr().out
    with BlockingClient() as c:
        c.call("wait", ids=[new], until="idle")
        assert c.call("get", id=new)["answer"] == "Back again."
        assert [m["role"] for m in api.message_requests[-1]["messages"]][-1] == "user"
        c.call("kill", id=new)


def test_cockpit_resume_of_a_discarded_session_says_it_starts_from_head(api, server_env, tmp_path, capsys,
                                                                          monkeypatch):
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "one.txt", "file_text": "one\n"})]),
               Reply("Added one."))
    start_server()
    with BlockingClient() as c:
        row = spawn_bypassing(c, api, repo, "add one")
        c.call("wait", ids=[row["id"]], until="idle")
        assert reviewed(c.call("review", id=row["id"], action="discard")).ok
    capsys.readouterr()
    assert cli_main(["resume", row["id"]]) == 0
    out = capsys.readouterr().out
    assert "it goes on in a new worktree from HEAD" in out and "its change was discarded: what it changed before " \
        "is not there" in out, out
    new = out.split(" resumed as ", 1)[1].split()[0]
    with BlockingClient() as c:
        assert not (Path(c.call("get", id=new)["worktree"]["path"]) / "one.txt").exists()
        c.call("kill", id=new)


def test_cockpit_resume_finds_a_session_the_server_no_longer_lists_by_its_transcript(api, server_env, tmp_path,
                                                                                     capsys, monkeypatch):
    """A session that ended with nothing to review is not restored by the next server: `cockpit
    resume ID` said "no session" though its transcript is there."""
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    api.script(Reply("Nothing to change."))
    start_server()
    with BlockingClient() as c:
        row = c.call("spawn", task="look", workspace=str(repo), interactive=False,
                     config={"api_key": "test-key", "base_url": api.base_url})
        c.call("wait", ids=[row["id"]], until="final")
    stop_server()
    start_server()
    with BlockingClient() as c:
        assert c.call("list")["sessions"] == []
    capsys.readouterr()
    assert cli_main(["resume", row["id"][-6:]]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{row['id']} resumed as "), out
    new = out.split(" resumed as ", 1)[1].split()[0]
    with BlockingClient() as c:
        assert c.call("wait", ids=[new], until="idle")["sessions"][0]["status"] == "waiting for you"
        c.call("kill", id=new)
    assert cli_main(["resume", "zzzzzz"]) == 2
    assert "no session 'zzzzzz'" in capsys.readouterr().err


def test_cockpit_resume_of_a_working_headless_session_says_to_wait_for_its_end(api, server_env, tmp_path, capsys):
    repo = make_repo(tmp_path / "repo")
    api.script(Reply("Thinking about it for a long while", stall_after=3))
    start_server()
    with BlockingClient() as c:
        row = c.call("spawn", task="think", workspace=str(repo), interactive=False,
                     config={"api_key": "test-key", "base_url": api.base_url})
        wait_for(lambda: c.call("get", id=row["id"])["status"] == "streaming", "the session's answer")
        assert c.call("get", id=row["id"])["interactive"] is False
    capsys.readouterr()
    assert cli_main(["resume", row["id"]]) == 1
    assert "it is headless (cockpit run): resume it once it has ended" in capsys.readouterr().err
    api.release()
