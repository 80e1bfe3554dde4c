"""The Cockpit server: protocol round trips, a real background process, durability, bad input."""

import asyncio
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest
from helpers import stop_server
from seed_data import write_seed
from standin import Reply, ToolUse

from cockpit import events as ev
from cockpit import wire
from cockpit.cli import main
from cockpit.runtime import RuntimeConfig, read_events
from cockpit.runtime.config import worktrees_dir
from cockpit.server import paths, rpc
from cockpit.server.client import (
    AsyncClient,
    BlockingClient,
    RemoteError,
    ensure_server,
    server_running,
    start_server,
    wait_for_stop,
)
from cockpit.server.daemon import Server


@pytest.fixture
def server_proc(monkeypatch, tmp_path):
    """Clients may use (and start) a real server; it is stopped afterwards. The current folder
    has no ./notes (no engine, no model load)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    yield
    _stop_server()


def _stop_server():
    stop_server()


def _pid() -> int:
    with BlockingClient() as c:
        return c.call("server.status")["pid"]


@pytest.fixture
def ws(tmp_path):
    w = tmp_path / "ws"
    w.mkdir()
    (w / "README.md").write_text("Staging runs on port 8080.\n")
    return w


async def _events_until(client, pred, timeout=30):
    async def go():
        while True:
            payload = await client.events.get()
            assert payload is not None, "connection closed"
            e = wire.event_from_json(payload)
            if pred(e):
                return e
    return await asyncio.wait_for(go(), timeout)


# -- in-process server ---------------------------------------------------------------------------
async def test_round_trip_in_process(api, ws, monkeypatch):
    cfg = RuntimeConfig(api_key="test-key", base_url=api.base_url, max_retries=0, timeout=10)
    srv = Server(cfg)
    await srv.start()
    try:
        a = await AsyncClient.connect(srv.socket_path)
        b = await AsyncClient.connect(srv.socket_path)
        hello = await a.call("hello", client="test")
        assert hello["protocol"] == rpc.PROTOCOL_VERSION and hello["pid"] == os.getpid()
        await a.call("subscribe")
        await b.call("subscribe")
        api.script(Reply("", [ToolUse("bash", {"command": "echo hi"})]), Reply("all done"))
        payload = {"api_key": "test-key", "base_url": api.base_url, "max_retries": 0}
        row = await a.call("spawn", task="say hi", workspace=str(ws), config=payload, interactive=True)
        ask = await _events_until(b, lambda e: isinstance(e, ev.ApprovalRequested))
        assert ask.session_id == row["id"] and ask.detail == "echo hi"
        for bad in ("false", 0, None):  # only a JSON boolean answers: bool("false") would allow
            with pytest.raises(RemoteError) as err:
                await b.call("answer", id=row["id"], request_id=None, allow=bad)
            assert err.value.code == rpc.INVALID_PARAMS
        await b.call("answer", id=row["id"], request_id=None, allow=True)  # the other client answers
        for client in (a, b):  # both clients see the whole session
            await _events_until(client, lambda e: isinstance(e, ev.StatusChanged) and e.status is ev.SessionStatus.WAITING)
        listed = (await a.call("list"))["sessions"]
        assert [r["id"] for r in listed] == [row["id"]] and listed[0]["answer"] == "all done"
        # a late client gets everything so far in its snapshot
        c = await AsyncClient.connect(srv.socket_path)
        snap = [wire.event_from_json(e) for e in (await c.call("subscribe"))["events"]]
        kinds = [type(e).__name__ for e in snap]
        assert kinds[0] == "SessionSpawned" and "ApprovalResolved" in kinds and "ToolResult" in kinds
        status = await c.call("server.status")  # three connections, one process (this test's)
        assert status["connections"] == 3 and status["clients"] == 1
        text = "".join(e.text for e in snap if isinstance(e, ev.TextDelta))
        assert text == "all done"
        # errors are replies; the server stays up
        with pytest.raises(RemoteError) as err:
            await a.call("frobnicate")
        assert err.value.code == rpc.METHOD_NOT_FOUND
        with pytest.raises(RemoteError, match="no session"):
            await a.call("send", id="nope", text="x")
        with pytest.raises(RemoteError):
            await a.call("spawn", task="", workspace=str(ws))
        with pytest.raises(RemoteError):
            await a.call("answer", id=row["id"], request_id="none", allow=True)
        # the runtime's own error types over the wire too: not found is a KeyError, refused a ValueError
        with pytest.raises(KeyError) as missing:
            await a.call("send", id="nope", text="x")
        assert str(missing.value) == "no session 'nope' (see cockpit ls)" and missing.value.code == rpc.NOT_FOUND
        with pytest.raises(ValueError) as refused:
            await a.call("diff", id=row["id"])  # it runs in place: no diff
        assert refused.value.code == rpc.REFUSED and "runs in place" in str(refused.value)
        assert (await a.call("hello"))["server"] == "cockpit"
        for client in (a, b, c):
            await client.close()
    finally:
        await srv.shutdown()
    assert not srv.socket_path.exists()


# -- a real background server ------------------------------------------------------------------
def test_detached_run_ls_attach_then_stop(api, ws, server_proc, capsys):
    api.responder = lambda body: Reply("answered: " + body["messages"][0]["content"][-1]["text"])
    assert main(["run", "first task", "second task", "--base-url", api.base_url, "--workspace", str(ws),
                 "--detach", "--json"]) == 0
    ids = [s["id"] for s in json.loads(capsys.readouterr().out)["sessions"]]
    assert len(ids) == 2
    environ = Path(f"/proc/{_pid()}/environ")  # what a session's shell could read of its parent
    try:
        assert b"ANTHROPIC_API_KEY" not in environ.read_bytes()  # the key came with the spawns
    except (FileNotFoundError, PermissionError):  # no /proc; or not dumpable (not root): unreadable
        pass
    assert main(["attach", ids[0]]) == 0
    out = capsys.readouterr().out
    assert "answered: first task" in out and f"[{ids[0]} done]" in out
    assert main(["attach", ids[1][-5:]]) == 0  # a unique suffix works
    assert "answered: second task" in capsys.readouterr().out
    assert main(["ls", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["sessions"]
    assert sorted(r["id"] for r in rows) == sorted(ids) and {r["status"] for r in rows} == {"done"}
    assert main(["ls"]) == 0
    assert "first task" in capsys.readouterr().out
    assert main(["kill", ids[0]]) == 0  # already done: says so (it printed nothing)
    assert "already ended (done): nothing to kill" in capsys.readouterr().out
    assert main(["attach", "zzzzzz"]) == 2
    assert main(["attach"]) == 2  # no id and nothing running: says so, names no session
    assert "no session is running" in capsys.readouterr().err
    other = subprocess.Popen(  # another client process (as an open app): stopping says it may start one again
        [sys.executable, "-c", "import sys, time\nfrom cockpit.server.client import BlockingClient\n"
         "c = BlockingClient().__enter__()\nc.call('list')\nprint('connected', flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline() == "connected\n"
        assert main(["server", "stop"]) == 0
    finally:
        other.kill()
        other.wait()
    out = capsys.readouterr().out
    assert out.startswith("Cockpit server stopped (pid ")
    assert "1 other client was connected (an open app, an agent's MCP server): it starts a server again" in out
    assert not server_running()


def test_attach_without_an_id_picks_the_session_that_needs_you_or_the_only_one():
    from cockpit.attach_cli import _only
    from cockpit.errors import CockpitError

    def rows(*states):
        return {"sessions": [{"id": f"s{i}", "status": st, "task": f"task {i}"} for i, st in enumerate(states)]}

    assert _only(rows("done", "streaming")) == "s1"  # the only one running
    assert _only(rows("streaming", "needs approval", "done")) == "s1"  # the one that needs you
    assert _only(rows("waiting for you", "streaming", "streaming")) == "s0"
    with pytest.raises(CockpitError, match=r"2 sessions could be meant: give an id — s0 \(streaming: task 0\)"):
        _only(rows("streaming", "running tool"))
    with pytest.raises(CockpitError, match="2 sessions could be meant"):
        _only(rows("needs approval", "waiting for you"))
    with pytest.raises(CockpitError, match="no session is running"):
        _only(rows("done", "killed"))


def test_attach_says_how_each_ask_was_answered(api, ws, server_proc, capsys):
    api.script(Reply("", [ToolUse("bash", {"command": "ls"})]), Reply("could not\x1b]0;pwned\x07 list\x1b[2J"))
    assert main(["run", "list files", "--base-url", api.base_url, "--workspace", str(ws), "--detach", "--json"]) == 0
    sid = json.loads(capsys.readouterr().out)["sessions"][0]["id"]
    assert main(["attach", sid]) == 0
    out = capsys.readouterr().out
    assert "could not list" in out and "\x1b" not in out and "\x07" not in out  # shown, not obeyed
    # a detached run is headless: its ask is denied at once, and attach says so after the ask
    assert out.index("! needs approval: ls") < out.index("[denied: nobody can answer approvals in a headless run")


def test_run_waits_for_results_through_the_server(api, ws, server_proc, capsys):
    api.script(Reply("the port is 8080"))
    code = main(["run", "which port?", "--base-url", api.base_url, "--workspace", str(ws), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["sessions"][0]["answer"] == "the port is 8080"
    assert report["totals"]["usage"]["total"] == report["sessions"][0]["usage"]["total"] > 0
    assert server_running()  # it stays for the next client


def test_sigkill_mid_stream_then_interrupted_and_resume(api, ws, server_proc):
    api.script(Reply("one two three four five six", stall_after=5))
    start_server()
    pid = _pid()

    async def spawn_and_wait_streaming():
        c = await AsyncClient.connect()
        await c.call("subscribe")
        row = await c.call("spawn", task="long answer", workspace=str(ws),
                           config={"api_key": "test-key", "base_url": api.base_url})
        await _events_until(c, lambda e: isinstance(e, ev.TextDelta) and e.session_id == row["id"])
        await c.close()
        return row

    row = asyncio.run(spawn_and_wait_streaming())
    os.kill(pid, signal.SIGKILL)
    assert wait_for_stop(pid, 10)
    records = read_events(Path(row["transcript"]))  # valid after SIGKILL
    assert isinstance(records[0], ev.SessionSpawned) and records[0].session_id == row["id"]
    scratch = worktrees_dir() / ".sandbox-tmp"  # the killed server's session left its temp folder
    left = [p for p in scratch.iterdir() if p.is_dir()]
    assert [p.name.split("-")[1] for p in left] == [str(pid)]
    api.release()
    start_server()  # the stale socket is replaced; the live session is found interrupted
    with BlockingClient() as c:
        rows = c.call("list")["sessions"]
        assert [(r["id"], r["status"]) for r in rows] == [(row["id"], "interrupted")]
        assert rows[0]["usage"]["total"] > 0 and rows[0]["cost_usd"] > 0  # what the killed response had cost
        assert rows[0]["placement"] == "in place: not a git repository (or no commit yet)"
        assert c.call("get", id=row["id"][:6])["status"] == "interrupted"  # a prefix names it, as a live one's
        with pytest.raises(RemoteError, match="was interrupted .*resume it first"):
            c.call("send", id=row["id"][:6], text="go on")  # said as it is, not "no session"
        end = read_events(Path(row["transcript"]))[-1]
        assert isinstance(end, ev.SessionDone) and end.status is ev.SessionStatus.INTERRUPTED

    async def resume_watched() -> dict:
        watcher = await AsyncClient.connect()  # an app attached meanwhile: its grid drops the old pane
        await watcher.call("subscribe")
        c = await AsyncClient.connect()
        new = await c.call("resume", id=row["id"][-5:], config={"api_key": "test-key", "base_url": api.base_url},
                           interactive=False)
        await c.call("wait", ids=[new["id"]], until="final")
        await _events_until(watcher, lambda e: isinstance(e, ev.SessionForgotten) and e.session_id == row["id"])
        await c.close()
        await watcher.close()
        return new

    api.script(Reply("resumed and finished"))
    new = asyncio.run(resume_watched())
    with BlockingClient() as c:
        done = c.call("get", id=new["id"])
        assert done["status"] == "done" and done["answer"] == "resumed and finished"
        assert all(r["id"] != row["id"] for r in c.call("list")["sessions"])
    assert not left[0].exists()  # removed when the resumed session made its own


def test_sigkill_leaves_no_shell_running_and_interrupted_sessions_stay_until_resumed(api, ws, server_proc, tmp_path):
    """A dead server's session shells (and what they started) are killed by the next server,
    and the interrupted sessions stay listed across later restarts until resumed."""
    marker = tmp_path / "started"
    api.script(Reply("Running.", [ToolUse("bash", {"command": f"touch {marker}; sleep 171717"})]))
    start_server()
    pid = _pid()
    with BlockingClient() as c:  # unconfined: a sandboxed shell dies with its server (test below)
        row = c.call("spawn", task="sleep", workspace=str(ws), permission_mode="bypassPermissions",
                     config={"api_key": "test-key", "base_url": api.base_url, "sandbox": False})

    def sleepers() -> list[int]:
        out = subprocess.run(["pgrep", "-f", "sleep 171717"], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    for _ in range(1200):  # the shell runs the command (60 s: a guard against a hang, not a budget)
        if marker.exists() and sleepers():
            break
        threading.Event().wait(0.05)
    assert sleepers()
    os.kill(pid, signal.SIGKILL)
    assert wait_for_stop(pid, 10)
    assert sleepers()  # orphaned, still running
    start_server()
    for _ in range(100):
        if not sleepers():
            break
        threading.Event().wait(0.05)
    assert not sleepers()
    for _restart in range(2):  # stop and start again: still interrupted, still listed
        with BlockingClient() as c:
            assert [(r["id"], r["status"]) for r in c.call("list")["sessions"]] == [(row["id"], "interrupted")]
        _stop_server()
        start_server()
    with BlockingClient() as c:  # by its transcript, as the app's review (`r`, then `o`) resumes it
        api.script(Reply("resumed"))
        new = c.call("resume", path=row["transcript"], config={"api_key": "test-key", "base_url": api.base_url},
                     interactive=False)
        c.call("wait", ids=[new["id"]], until="final")
    _stop_server()
    start_server()
    with BlockingClient() as c:  # resumed: no longer listed as interrupted
        assert all(r["id"] != row["id"] for r in c.call("list")["sessions"])


def test_a_sandboxed_shell_and_its_setsid_children_die_with_a_sigkilled_server(api, ws, server_proc):
    from cockpit.runtime.sandbox import detect

    if detect().backend is None:
        pytest.skip(f"no sandbox here: {detect().reason}")
    api.script(Reply("Running.", [ToolUse("bash", {"command": "setsid sleep 181818 & touch started; sleep 171718"})]))
    start_server()
    pid = _pid()
    with BlockingClient() as c:
        c.call("spawn", task="sleep", workspace=str(ws), permission_mode="auto",
               config={"api_key": "test-key", "base_url": api.base_url})

    def sleepers() -> list[int]:
        out = subprocess.run(["pgrep", "-f", "sleep 1(71718|81818)"], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    for _ in range(200):
        if len(sleepers()) == 2:
            break
        threading.Event().wait(0.05)
    assert len(sleepers()) == 2
    os.kill(pid, signal.SIGKILL)
    assert wait_for_stop(pid, 10)
    for _ in range(200):  # no next server needed: the sandbox dies with its parent
        if not sleepers():
            break
        threading.Event().wait(0.05)
    assert not sleepers()


def test_sigterm_ends_sessions_cleanly(api, ws, server_proc):
    api.script(Reply("finished answer"), Reply("a b c d e f g", stall_after=4))
    start_server()
    pid = _pid()
    cfg = {"api_key": "test-key", "base_url": api.base_url}

    async def go():
        c = await AsyncClient.connect()
        await c.call("subscribe")
        done = await c.call("spawn", task="quick", workspace=str(ws), config=cfg, interactive=True)
        await _events_until(c, lambda e: isinstance(e, ev.StatusChanged) and e.session_id == done["id"]
                            and e.status is ev.SessionStatus.WAITING)
        busy = await c.call("spawn", task="slow", workspace=str(ws), config=cfg, interactive=True)
        await _events_until(c, lambda e: isinstance(e, ev.TextDelta) and e.session_id == busy["id"])
        await c.close()
        return done, busy

    done, busy = asyncio.run(go())
    os.kill(pid, signal.SIGTERM)
    assert wait_for_stop(pid, 30)
    api.release()
    end_done = read_events(Path(done["transcript"]))[-1]
    end_busy = read_events(Path(busy["transcript"]))[-1]
    assert isinstance(end_done, ev.SessionDone) and end_done.status is ev.SessionStatus.DONE  # never killed
    assert end_busy.status is ev.SessionStatus.KILLED and end_busy.reason == "server stopped"
    assert not paths.socket_path().exists()


def test_prune_keeps_the_worktree_of_a_live_session(api, server_proc, tmp_path, capsys, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "d@example.com"], ["config", "user.name", "D"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=repo, check=True)
    api.script(Reply("nothing changed yet"))
    start_server()
    with BlockingClient() as c:
        row = c.call("spawn", task="look around", workspace=str(repo), interactive=True,
                     config={"api_key": "test-key", "base_url": api.base_url})
        assert c.call("wait", ids=[row["id"]], until="idle")["sessions"][0]["status"] == "waiting for you"
    tree = Path(row["worktree"]["path"])
    assert tree.is_dir()
    assert main(["worktrees", "prune"]) == 0  # unchanged, but its session still works in it
    out = capsys.readouterr().out
    assert f"left {row['id']}: its session is waiting for you in the server" in out and "0 pruned" in out
    assert tree.is_dir()
    # around the server (--no-server): refused while its session works there (it was discarded)
    assert main(["worktrees", "discard", row["id"], "--no-server", "--yes"]) == 1
    assert f"session {row['id']} works in this worktree and is waiting for you" in capsys.readouterr().err
    assert tree.is_dir()
    monkeypatch.delenv("COCKPIT_NO_SERVER")  # (set by --no-server for the rest of that process)
    assert main(["worktrees", "discard", row["id"][-5:], "--yes"]) == 0  # a unique suffix, as elsewhere
    assert "discarded" in capsys.readouterr().out and not tree.exists()


def test_garbage_oversize_and_floods_leave_the_server_up(server_proc):
    start_server()
    sock_path = str(paths.socket_path())

    def raw(data: bytes, half_close: bool = False) -> bytes:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(sock_path)
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
        s.close()
        return out

    reply = json.loads(raw(b"this is not json\n"))
    assert reply["error"]["code"] == rpc.PARSE_ERROR
    reply = json.loads(raw(b'{"jsonrpc": "2.0", "id": 1, "method": "hello"', half_close=True))
    assert "incomplete" in reply["error"]["message"]
    reply = json.loads(raw(b'[1, 2, 3]\n'))
    assert reply["error"]["code"] == rpc.INVALID_REQUEST
    reply = json.loads(raw(b"[" * 100_000 + b"]" * 100_000 + b"\n"))  # RecursionError in the parser
    assert reply["error"]["code"] == rpc.PARSE_ERROR and "nested too deeply" in reply["error"]["message"]
    for bad_id in (b"1e400", b"NaN", b"Infinity"):  # ids no JSON can carry back
        reply = json.loads(raw(b'{"jsonrpc": "2.0", "id": ' + bad_id + b', "method": "hello"}\n'))
        assert reply["error"]["code"] in (rpc.INVALID_REQUEST, rpc.PARSE_ERROR) and reply["id"] is None

    # a 100 MB line: an error reply, the connection closed, the server alive
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock_path)
    got = bytearray()

    def reader():
        try:
            while chunk := s.recv(65536):
                got.extend(chunk)
        except OSError:
            pass

    t = threading.Thread(target=reader)
    t.start()
    block = b"x" * (1 << 20)
    try:
        for _ in range(100):
            s.sendall(block)
    except OSError:
        pass  # the server closed the connection: expected
    t.join(30)
    s.close()
    assert b"over" in bytes(got)

    # 200 connections at once, all answered
    clients = [BlockingClient() for _ in range(200)]
    try:
        results = [c.call("hello")["server"] for c in clients]
    finally:
        for c in clients:
            c.close()
    assert results == ["cockpit"] * 200
    with BlockingClient() as c:
        assert c.call("server.status")["pid"] > 0


@pytest.mark.skipif(os.getuid() != 0 or not os.path.exists("/usr/bin/python3"),
                    reason="creating a process of another uid needs root (and a system python it can run)")
def test_resume_of_a_file_that_is_no_transcript_is_refused_and_the_server_stays_up(server_proc, tmp_path):
    """A FIFO blocked the server's event loop for good, /dev/zero grew it to 23 GB: every such
    path is refused before it is read, each with an error reply, and nothing else waits."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    passwd = tmp_path / "passwd"
    passwd.write_text("".join(f"user{i}:x:{i}:{i}::/home/u:/bin/sh\n" for i in range(500)))
    start_server()
    with BlockingClient() as c:
        for path, why in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file"),
                          (tmp_path, "not a regular file"), (passwd, "no header")):
            with pytest.raises(RemoteError) as refused:
                c.call("resume", path=str(path))
            assert refused.value.code == rpc.REFUSED and why in str(refused.value), path
        assert c.call("list")["sessions"] == []  # still answering
    log = paths.log_path().read_text()
    assert "Traceback" not in log and "user42" not in log  # no warning per line of a non-transcript


def test_another_user_cannot_connect(server_proc, monkeypatch):
    import shutil
    import tempfile

    open_dir = Path(tempfile.mkdtemp(prefix="cockpit-uid-"))  # traversable by others: only our modes guard
    open_dir.chmod(0o755)
    monkeypatch.setenv("COCKPIT_DATA_DIR", str(open_dir))
    start_server()
    code = ("import socket,sys\n"
            "s=socket.socket(socket.AF_UNIX)\n"
            f"try:\n s.connect({str(paths.socket_path())!r})\nexcept PermissionError:\n sys.exit(7)\n"
            "sys.exit(0)\n")
    proc = subprocess.run(["/usr/bin/python3", "-c", code], user=65534, group=65534, cwd="/")
    assert proc.returncode == 7
    mode = paths.socket_path().stat().st_mode & 0o777
    assert mode == 0o600 and paths.socket_path().parent.stat().st_mode & 0o777 == 0o700
    _stop_server()
    shutil.rmtree(open_dir, ignore_errors=True)


def test_stale_socket_is_replaced(server_proc):
    sock = paths.socket_path()
    paths.ensure_private_dir(sock.parent)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(sock))  # a socket file nobody listens on (a crashed server's)
    dead.close()
    assert sock.exists() and not server_running()
    ensure_server()
    assert server_running()


def test_second_server_exits_at_once(server_proc):
    start_server()
    proc = subprocess.run([sys.executable, "-m", "cockpit", "server", "run"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and "already runs" in proc.stderr


@pytest.mark.parametrize("argv", [["--no-server", "memory", "search", "staging port"],
                                  ["memory", "search", "staging port", "--no-server"]])
def test_no_server_keeps_memory_commands_in_process(server_proc, tmp_path, capsys, monkeypatch, argv):
    notes, _ws = write_seed(tmp_path)
    start_server()
    monkeypatch.setenv("COCKPIT_NO_SERVER", "")  # main() sets it: restored to unset afterwards
    monkeypatch.delenv("COCKPIT_NO_SERVER")
    assert main([*argv, "--notes", str(notes), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["name"] == "staging-stack"
    with BlockingClient() as c:
        assert c.call("server.status")["engines"] == []  # the server never saw this search


def test_memory_clients_use_the_servers_warm_engine(server_proc, tmp_path, capsys):
    notes, _ws = write_seed(tmp_path)
    start_server()
    assert main(["memory", "search", "staging port", "--notes", str(notes), "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["name"] == "staging-stack"
    with BlockingClient() as c:
        engines = c.call("server.status")["engines"]
    assert [e["notes"] for e in engines] == [str(notes.resolve())]  # the search ran in the server
    with BlockingClient() as c:  # a name taken is a refusal, not a server fault (no traceback in the log)
        with pytest.raises(RemoteError) as taken:
            c.call("memory.save", notes=str(notes), name="staging-stack", description="x", body="y")
    assert taken.value.code == rpc.REFUSED and str(taken.value).startswith("a note named 'staging-stack' already exists")
    assert "Traceback" not in paths.log_path().read_text()
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from cockpit.memory_mcp import open_engine\n"
        f"engine, where = open_engine(Path({str(notes)!r}), None)\n"
        "hits = engine.search('which port for staging?', 3)\n"
        "print(where, hits[0].name, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "COCKPIT_NO_SERVER"})
    assert proc.stdout.split() == ["server", "staging-stack", "False", "False"], proc.stderr
    hook = subprocess.run([sys.executable, "-m", "cockpit", "memory", "hook", "--notes", str(notes)],
                          input=json.dumps({"session_id": "h1", "cwd": str(tmp_path), "prompt": "staging port?",
                                            "hook_event_name": "UserPromptSubmit"}).encode(),
                          capture_output=True, timeout=120, env={k: v for k, v in os.environ.items() if k != "COCKPIT_NO_SERVER"})
    assert "6443" in json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_client_follows_the_servers_watcher_when_the_notes_folder_is_recreated(server_proc, tmp_path):
    """The app attached to a server shows what the server's watcher sees (RemoteEngine.watch
    forwards its state): the folder missing, then re-watched after a full resync."""
    import queue
    import shutil

    from cockpit.server.remote import RemoteEngine

    notes, _ws = write_seed(tmp_path)
    start_server()
    engine = RemoteEngine(BlockingClient(), notes)
    assert engine.wait_ready(120)
    states: queue.Queue = queue.Queue()
    stop = threading.Event()
    t = threading.Thread(target=engine.watch, args=(stop,), daemon=True,
                         kwargs={"on_status": lambda state, detail: states.put((state, detail))})
    t.start()

    def until(state: str) -> str:
        while True:
            got, detail = states.get(timeout=30)
            if got == state:
                return detail

    try:
        until("watching")
        shutil.rmtree(notes)
        assert "missing" in until("missing")
        notes.mkdir()
        (notes / "fresh.md").write_text("---\nname: fresh\ndescription: Written after the folder came back.\n---\nx\n")
        assert "re-created" in until("recovered")
        assert [h.name for h in engine.search("folder came back", 5)] == ["fresh"]
    finally:
        stop.set()
        t.join(10)
        engine.close()


async def test_tcp_needs_the_token_printed_at_start(tmp_path):
    srv = Server(RuntimeConfig(api_key="k"), listen=("127.0.0.1", 0))
    await srv.start()
    try:
        host, port = srv._servers[1].sockets[0].getsockname()[:2]  # the TCP listener (port 0: any free one)
        assert host == "127.0.0.1" and srv.token

        async def call(line: dict) -> dict:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write((json.dumps(line) + "\n").encode())
            await writer.drain()
            reply = json.loads(await reader.readline())
            rest = await reader.read()  # closed after a refusal
            writer.close()
            return {**reply, "_closed": rest == b""}

        no_token = await call({"jsonrpc": "2.0", "id": 1, "method": "list"})
        assert no_token["error"]["code"] == rpc.UNAUTHORIZED and no_token["_closed"]
        wrong = await call({"jsonrpc": "2.0", "id": 1, "method": "hello", "params": {"token": "guess"}})
        assert wrong["error"]["code"] == rpc.UNAUTHORIZED

        reader, writer = await asyncio.open_connection(host, port)
        for i, (method, params) in enumerate([("hello", {"token": srv.token}), ("list", {})], 1):
            writer.write(rpc.request(i, method, params))
            await writer.drain()
            reply = json.loads(await reader.readline())
            assert "result" in reply, reply
        assert reply["result"] == {"sessions": []}
        writer.close()
    finally:
        await srv.shutdown()


def test_an_interrupted_session_keeps_what_its_transcript_says_it_spent(tmp_path):
    from cockpit.runtime import SessionManager
    from cockpit.server.daemon import events_left

    header = {"type": "header", "session_id": "x", "task": "t", "model": "m", "workspace": "/w", "cwd": "/wt/x",
              "worktree": {"path": "/wt/x", "branch": "cockpit/x-t", "base_commit": "abc", "base_branch": "main"}}
    records = [header,  # an old-format transcript, cut off by a dead server
               {"type": "usage", "usage": {"input": 10, "output": 5, "cache_write": 100, "cache_read": 0}, "cost_usd": 0.01},
               {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "half an answer"}]},
               {"type": "usage", "usage": {"input": 1, "output": 7, "cache_write": 0, "cache_read": 100}, "cost_usd": 0.002}]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    events = events_left("x", str(path))
    mgr = SessionManager(None)
    restored = mgr.restore(path, events)  # its worktree is gone: restored without it, to be resumed
    assert restored is not None
    with pytest.raises(ValueError, match=r"worktree /wt/x is gone \(branch cockpit/x-t"):
        asyncio.run(mgr.diff("x"))
    row = restored.to_dict()
    assert row["usage"] == {"input": 11, "output": 12, "cache_write": 100, "cache_read": 100, "total": 223}
    assert row["cost_usd"] == pytest.approx(0.012) and row["status"] == "interrupted"
    # what an attaching client replays: its output too, then the end
    assert isinstance(events[0], ev.SessionSpawned) and events[0].worktree.branch == "cockpit/x-t"
    assert any(isinstance(e, ev.TextDelta) and e.text == "half an answer" for e in events)
    assert isinstance(events[-1], ev.SessionDone) and events[-1].status is ev.SessionStatus.INTERRUPTED
    again = events_left("x", str(path))  # the end was written: a second start reads it, adds none
    assert again == events


@pytest.mark.parametrize("command", ["send", "kill", "attach", "approve", "deny"])
def test_session_commands_help_says_what_id_takes(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "unique prefix or suffix of at least 4 characters" in out


async def test_relative_paths_and_wrong_types_are_refused_not_read_against_the_servers_folder(
        tmp_path, monkeypatch):
    """The server's current folder is not the client's: a relative workspace, notes folder or
    index would land somewhere the user never meant (an index file in the server's cwd)."""
    server_cwd = tmp_path / "server-cwd"
    (server_cwd / "ws").mkdir(parents=True)
    (server_cwd / "notes").mkdir()
    monkeypatch.chdir(server_cwd)
    srv = Server(RuntimeConfig(api_key="test-key", base_url="http://127.0.0.1:9", max_retries=0))
    await srv.start()
    try:
        a = await AsyncClient.connect(srv.socket_path)
        bad = [
            ("spawn", {"task": "x", "workspace": "ws"}, "workspace must be an absolute path"),
            ("spawn", {"task": "x"}, "workspace"),
            ("spawn", {"task": "x", "workspace": str(server_cwd / "ws"), "notes": "notes"}, "notes must be"),
            ("spawn", {"task": "x", "workspace": str(server_cwd / "ws"), "notes": ["a"]}, "notes must be"),
            ("spawn", {"task": "x", "workspace": str(server_cwd / "ws"), "notes": str(server_cwd / "notes"),
                       "index": "rel.sqlite"}, "index must be an absolute path"),
            ("spawn", {"task": "x", "workspace": str(server_cwd / "ws"), "top_k": "abc"}, "top_k must be an integer"),
            ("spawn", {"task": "x", "workspace": str(server_cwd / "ws"), "model": ["m"]}, "model must be a string"),
            ("memory.search", {"notes": "notes", "query": "x"}, "notes must be an absolute path"),
            ("memory.search", {"notes": str(server_cwd / "notes"), "index": "i.sqlite", "query": "x"},
             "index must be an absolute path"),
            ("resume", {"path": "some.jsonl"}, "absolute transcript path"),
            ("resume", {"path": "/x.jsonl", "interactive": "no"}, "interactive must be true or false"),
            ("memory.save", {"notes": str(server_cwd / "notes"), "name": "n", "description": "d", "body": "b",
                             "priority": "false"}, "priority must be true or false"),
        ]
        for method, params, message in bad:
            with pytest.raises(RemoteError, match=message) as err:
                await a.call(method, **params)
            assert err.value.code == rpc.INVALID_PARAMS, (method, params)
        assert (await a.call("hello"))["server"] == "cockpit"
        assert srv.engines.describe() == [] and sorted(os.listdir(server_cwd)) == ["notes", "ws"]
        await a.close()
        # the clients send absolute paths: a relative --index is the client's, made absolute there
        from cockpit.server.remote import RemoteEngine, RemoteRuntime

        assert RemoteEngine(cast(Any, None), "notes", "i.sqlite").index == str(server_cwd / "i.sqlite")
        rt = RemoteRuntime(cast(Any, None), RuntimeConfig(), notes="notes", index="i.sqlite")
        assert (rt.notes, rt.index) == (str(server_cwd / "notes"), str(server_cwd / "i.sqlite"))
    finally:
        await srv.shutdown()


async def test_a_big_history_still_fits_the_subscribe_reply(monkeypatch):
    """The snapshot is one protocol line: long tool output is cut (the transcript has it) and the
    output of the oldest finished sessions is left out, so a client can always attach — and still
    has a pane for every session (whole sessions were left out: an app restored after a restart
    with long unreviewed sessions showed "no sessions", `cockpit ls` listed them)."""
    monkeypatch.setattr(rpc, "MAX_LINE", 1 << 20)  # 1 MiB lines for client and server
    srv = Server(RuntimeConfig(api_key="test-key", base_url="http://127.0.0.1:9"))
    await srv.start()
    try:
        for i in range(12):
            sid = f"s{i:05d}"
            log = [ev.SessionSpawned(sid, "t", "m", "/ws", "/t", True)]
            log += [ev.ToolResult(sid, f"t{j}", "bash", f"out {j} " + "x" * 100_000, False) for j in range(6)]
            for event in log:
                srv.mgr._log(event)
        c = await AsyncClient.connect(srv.socket_path)
        snapshot = [wire.event_from_json(e) for e in (await c.call("subscribe"))["events"]]
        results = [e for e in snapshot if isinstance(e, ev.ToolResult)]
        assert results and all(len(e.content) < 20_000 and "more characters in the transcript" in e.content
                               for e in results)
        spawned = [e.session_id for e in snapshot if isinstance(e, ev.SessionSpawned)]
        assert spawned == [f"s{i:05d}" for i in range(12)]  # a pane for each
        with_output = sorted({e.session_id for e in results})
        assert with_output[-1] == "s00011" and 0 < len(with_output) < 12  # the newest keep their output
        said = [e for e in snapshot if isinstance(e, ev.TextDelta)]
        assert {e.session_id for e in said} == {f"s{i:05d}" for i in range(12)} - set(with_output)
        assert all("r shows its transcript" in e.text for e in said)
        monkeypatch.setattr(rpc, "MAX_LINE", 4000)  # not even the rest of each fits: the oldest go whole
        kept = [wire.event_from_json(e).session_id for e in srv._snapshot_json(srv.mgr.snapshot())]
        assert kept and kept[-1] == "s00011" and len(set(kept)) < 12
        assert (await c.call("hello"))["server"] == "cockpit"
        await c.close()
    finally:
        await srv.shutdown()


def test_a_huge_live_event_still_fits_one_line_of_a_client():
    """A 10 MB file's approval diff (or editor input, or tool output) made an event line over the
    clients' 16 MiB limit: every attached app's event stream died silently. Live events are cut
    like snapshot ones, at a size that fits even when JSON escapes every character."""
    from cockpit.server.daemon import LIVE_FIELD_CHARS, _cut

    nasty = '"\x01\\' * 3_500_000  # each character escaped by JSON: up to 6 bytes
    for event in (ev.ApprovalRequested("s1", "r1", "str_replace_based_edit_tool", "edit", "create data.json",
                                       nasty, "Edit"),
                  ev.ToolCall("s1", "t1", "str_replace_based_edit_tool", {"command": "create", "file_text": nasty,
                                                                          "edits": [{"new_string": nasty}]}),
                  ev.ToolResult("s1", "t1", "bash", nasty, False)):
        line = rpc.notification("event", wire.event_to_json(_cut(event, LIVE_FIELD_CHARS)))
        assert len(line) < rpc.MAX_LINE, type(event).__name__
        assert b"more characters in the transcript" in line


def test_a_lone_surrogate_is_encoded_not_a_dead_event_stream():
    line = rpc.encode({"jsonrpc": "2.0", "method": "event", "params": {"text": "caf\udce9 ✓"}})
    assert json.loads(line)["params"]["text"] == "caf\udce9 ✓" and line.endswith(b"\n")


def test_no_runtime_dir_warning_without_xdg_runtime_dir(monkeypatch):
    """ssh sessions and containers often have no XDG_RUNTIME_DIR: every command used to print
    platformdirs' RuntimeDirWarning on stderr."""
    import warnings

    monkeypatch.delenv("COCKPIT_DATA_DIR", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = paths.runtime_dir()
    assert [str(w.message) for w in caught] == []
    assert path.is_absolute() and "cockpit" in str(path)


# -- the key out of the sessions' reach ------------------------------------------------------------
@pytest.mark.parametrize("how", ["auto-started", "foreground-with-the-key-exported"])
def test_a_session_cannot_find_the_servers_key_in_proc(api, ws, server_proc, monkeypatch, tmp_path, how):
    """A session's shell looks for the key where a break-it round found it: its parent's
    /proc/<pid>/environ, every process's environ, the server's by pid. The key is in none of
    them (auto-started: it never was; foreground: taken out of the environment block), the
    server is not dumpable, and what the key file the shell finds prints reaches the model and
    the transcript as *** in every encoding."""
    from test_key_guard import leaked

    key = "sk-ant-api03-" + secrets.token_urlsafe(48)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-" + key[-12:])
    proc = None
    if how == "auto-started":
        start_server()
    else:  # `cockpit server run` typed in a terminal where the key is exported
        with open(tmp_path / "server.log", "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "cockpit", "server", "run"], stdout=log, stderr=log,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        for _ in range(600):
            if server_running():
                break
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            threading.Event().wait(0.1)
    pid = _pid()
    leak = tmp_path / "found.env"  # a file the key was left in
    leak.write_text(f"ANTHROPIC_API_KEY={key}\n")
    command = "\n".join([
        "echo ENVIRON-SCAN",
        "tr '\\0' '\\n' < /proc/$PPID/environ | grep -a ANTHROPIC",
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\" 2>/dev/null | grep -a '^ANTHROPIC_' "
        "| sed \"s|^|$f |\"; done 2>/dev/null",
        f"tr '\\0' '\\n' < /proc/{pid}/environ | grep -a ANTHROPIC",
        f"base64 < /proc/{pid}/environ",
        "echo FILE-SCAN",
        f"base64 {leak}; (printf x; cat {leak}) | base64 -w0; echo; od -An -tx1 -v {leak}; rev {leak}",
        f"python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(open(sys.argv[1]).read(), safe=\"\"))' {leak}",
        "echo SCAN-DONE",
    ])
    api.script(Reply("Looking around.", [ToolUse("bash", {"command": command})]), Reply("Nothing found."))
    config = {"base_url": api.base_url, "sandbox": False}  # the shell sees the machine's /proc, as unsandboxed
    if proc is None:
        config["api_key"] = key
    with BlockingClient() as c:
        row = c.call("spawn", task="find the key", workspace=str(ws), permission_mode="bypassPermissions",
                     interactive=False, config=config)
        done = c.call("wait", ids=[row["id"]], until="final")["sessions"][0]
    assert done["status"] == "done", done
    result = json.dumps(api.message_requests[1]["messages"][-1]["content"])
    assert "SCAN-DONE" in result
    found_in_proc, found_in_file = result.split("ENVIRON-SCAN")[-1].split("FILE-SCAN")
    assert "***" not in found_in_proc  # nothing found there (not even something redacted)
    assert found_in_file.count("***") >= 5  # the key file's forms: plain, base64 ×2, hex, reversed, URL
    transcript = Path(row["transcript"]).read_text()
    for text in (result, transcript, json.dumps(api.message_requests)):
        assert not leaked(text, key) and not leaked(text, "tok-" + key[-12:])
    sent = {v for r in api.requests if "/v1/messages" in r.path for k, v in r.headers.items()
            if k.lower() == "authorization"}
    assert sent == {f"Bearer {key}"}  # the server authenticates with the key it holds in memory
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except PermissionError:  # not dumpable: a process of the same user cannot read it
        environ = None
    if os.geteuid() != 0:
        assert environ is None and Path(f"/proc/{pid}/environ").stat().st_uid == 0
    else:  # root reads anything: the value is gone all the same
        assert environ is not None and key.encode() not in environ and key[-12:].encode() not in environ
    if proc is not None:
        _stop_server()
        assert proc.wait(30) == 0


# -- a server that does not answer, and servers started at the same moment -------------------------
@pytest.fixture
def stopped_server(server_proc, monkeypatch):
    """A real server stopped with SIGSTOP (it still accepts connections: the kernel does); killed
    afterwards."""
    from test_server_ship import wait_for

    from cockpit.server.client import stopped_pid

    start_server()
    pid = _pid()
    os.kill(pid, signal.SIGSTOP)
    # the kernel stops it when it next runs: on a loaded box a command could start before that
    wait_for(lambda: stopped_pid() == pid, "the server stopped")
    yield pid
    import contextlib

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
        os.kill(pid, signal.SIGCONT)
    assert wait_for_stop(pid, 30)


def _cli(*argv: str, timeout: float = 60, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    import time

    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "cockpit", *argv], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env}, stdin=subprocess.DEVNULL)
    return proc, time.monotonic() - started


@pytest.mark.parametrize("argv", [["ls"], ["server", "status"], ["memory", "search", "staging", "--notes", "."],
                                  ["run", "say hi", "--base-url", "http://127.0.0.1:9"], ["attach", "abcd"],
                                  ["approve", "abcd"]])
def test_a_stopped_server_gives_one_clear_line_not_a_hang(stopped_server, tmp_path, argv):
    """Named from its process state at once (not after the 30 s read timeout, which is left at
    its default here: the message says "stopped", which only the state check gives)."""
    (tmp_path / "n.md").write_text("---\nname: n\ndescription: staging\n---\nx\n")
    env = {k: v for k, v in os.environ.items() if k != "COCKPIT_SERVER_TIMEOUT"}
    proc = subprocess.run([sys.executable, "-m", "cockpit", *argv], capture_output=True, text=True, timeout=25,
                          env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith(f"cockpit: error: the Cockpit server (pid {stopped_server}) is stopped"), lines
    assert f"kill -CONT {stopped_server}" in lines[-1] and "cockpit server stop --force" in lines[-1]
    assert "Traceback" not in proc.stderr


def test_a_hung_server_that_is_not_stopped_is_named_after_the_read_timeout(tmp_path):
    """A server that accepts and never answers while running (no stopped state to read) is found
    by the read timeout instead."""
    import socket as socketmod

    from cockpit.server import paths

    sock_path = paths.socket_path()
    paths.ensure_private_dir(sock_path.parent)
    srv = socketmod.socket(socketmod.AF_UNIX)
    srv.bind(str(sock_path))
    srv.listen(4)
    try:
        proc, _ = _cli("ls", COCKPIT_SERVER_TIMEOUT="1")
    finally:
        srv.close()
        sock_path.unlink(missing_ok=True)
    assert proc.returncode != 0 and "does not answer" in proc.stderr.strip().splitlines()[-1]


def test_stop_force_ends_a_stopped_server(stopped_server):
    proc, _ = _cli("server", "stop", "--force")
    assert proc.returncode == 0 and f"pid {stopped_server}" in proc.stdout
    assert wait_for_stop(stopped_server, 10) and not server_running()


class _Mute:
    """A fake Unix-socket server that accepts and never answers (or only sends keepalives)."""

    def __init__(self, path: Path, keepalive: float | None = None, answer_after: float | None = None):
        self.path = path
        self.keepalive, self.answer_after = keepalive, answer_after
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.conns: list[socket.socket] = []
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        try:
            self._serve()
        except OSError:  # closed under it at the end of the test
            pass

    def _serve(self) -> None:
        import time

        self.sock.settimeout(0.05)
        conn = None
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
                self.conns.append(conn)
            except TimeoutError:
                pass
            if conn is None or self.keepalive is None:
                continue
            started = time.monotonic()
            while not self.done.wait(self.keepalive):
                if self.answer_after is not None and time.monotonic() - started >= self.answer_after:
                    conn.sendall(rpc.response(1, {"ok": True}))
                    return
                conn.sendall(rpc.KEEPALIVE)

    def close(self) -> None:
        self.done.set()
        for c in self.conns:
            c.close()
        self.sock.close()


def test_blocking_and_async_clients_time_out_on_a_server_that_accepts_and_never_answers(tmp_path):
    from cockpit.server.client import ServerHung

    mute = _Mute(tmp_path / "mute.sock")
    try:
        c = BlockingClient(mute.path, timeout=0.5)
        with pytest.raises(ServerHung, match="does not answer"):
            c.call("list")
        with pytest.raises(ServerHung):  # the connection stays marked, no second wait
            c.call("list")
        c.close()

        async def go():
            a = await AsyncClient.connect(mute.path, timeout=0.5)
            try:
                with pytest.raises(ServerHung, match="does not answer"):
                    await asyncio.wait_for(a.call("list"), 20)
                assert await asyncio.wait_for(a.events.get(), 20) is None and isinstance(a.error, ServerHung)
            finally:
                await a.close()
        asyncio.run(go())
    finally:
        mute.close()


def test_keepalives_keep_a_long_call_alive(tmp_path):
    alive = _Mute(tmp_path / "slow.sock", keepalive=0.1, answer_after=1.5)  # answers after 3 read timeouts
    try:
        with BlockingClient(alive.path, timeout=0.5) as c:
            assert c.call("wait") == {"ok": True}
    finally:
        alive.close()


async def test_the_server_sends_keepalives_to_a_subscriber(monkeypatch):
    monkeypatch.setattr(rpc, "KEEPALIVE_S", 0.05)
    srv = Server(RuntimeConfig(api_key="k"))
    await srv.start()
    try:
        reader, writer = await asyncio.open_unix_connection(str(srv.socket_path), limit=rpc.MAX_LINE)
        writer.write(rpc.request(1, "subscribe"))
        await writer.drain()
        assert json.loads(await asyncio.wait_for(reader.readline(), 10))["id"] == 1
        assert json.loads(await asyncio.wait_for(reader.readline(), 10))["method"] == "keepalive"
        writer.close()
    finally:
        await srv.shutdown()


@pytest.mark.parametrize("how", ["start_server", "cockpit server start"])
def test_concurrent_starts_converge_on_one_server(server_proc, how):
    code = "from cockpit.server.client import start_server; print('pid', start_server())"
    cmd = [sys.executable, "-c", code] if how == "start_server" else [sys.executable, "-m", "cockpit", "server", "start"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    assert [rc for rc, _, _ in results] == [0] * 6, results
    with BlockingClient() as c:
        pid = c.call("server.status")["pid"]
    started = [out for _, out, _ in results if f"{pid}" in out]
    assert len(started) <= 1  # the winner says its pid; the others found it running
    from cockpit.server.client import server_pid

    assert server_pid() == pid


def test_approve_and_deny_say_what_they_answered(api, ws, server_proc, capsys):
    import time

    api.script(Reply("", [ToolUse("bash", {"command": "echo hi"})]), Reply("", [ToolUse("bash", {"command": "ls"})]),
               Reply("done"))
    ensure_server()
    payload = {"api_key": "test-key", "base_url": api.base_url, "max_retries": 0}
    with BlockingClient() as c:
        sid = c.call("spawn", task="t", workspace=str(ws), config=payload, interactive=True)["id"]

        def asking() -> None:
            deadline = time.monotonic() + 60
            while c.call("get", id=sid)["status"] != "needs approval":
                assert time.monotonic() < deadline, "no approval asked"
                time.sleep(0.02)
        asking()
        assert main(["approve", sid]) == 0
        assert capsys.readouterr().out.strip() == f"{sid}: approved echo hi (once)"
        asking()
        assert main(["deny", sid, "--reason", "not now"]) == 0
        assert capsys.readouterr().out.strip() == f"{sid}: denied ls (not now)"


def test_a_new_server_prepares_for_the_first_session_without_being_asked(server_proc, monkeypatch):
    """Once it listens, the server loads the embedding model and the modules of a session and its
    model calls (a first spawn used to wait seconds for them); `server status` says so."""
    monkeypatch.setenv("COCKPIT_PREWARM", "1")
    start_server()
    with BlockingClient() as c:
        prep = c.call("server.status")["prepared"]
        assert prep["model"] in ("warming", "ready") or prep["modules"] is False  # under way, unasked
        deadline = time.monotonic() + 120  # a hang guard: the loop waits on the server's own state
        while not (prep["modules"] and prep["model"] == "ready"):
            assert time.monotonic() < deadline, prep
            time.sleep(0.05)
            prep = c.call("server.status")["prepared"]
        assert c.call("server.status")["engines"] == []  # no notes folder was asked for
    out = subprocess.run([sys.executable, "-m", "cockpit", "server", "status"], capture_output=True, text=True,
                         timeout=60).stdout
    assert "embedding model ready, session modules loaded" in out


async def test_the_first_memory_index_through_the_server_says_what_it_indexed(tmp_path, monkeypatch):
    """The server's watcher syncs a folder as it opens it: when that sync came first, the
    `memory index` that opened the folder reported "up to date — 2 unchanged, none added" for a
    folder never indexed (seen on a loaded box). It reports what the opening sync did."""
    from cockpit.runtime import RuntimeConfig
    from cockpit.server import daemon
    from cockpit.server.client import AsyncClient
    from cockpit.server.engines import EngineRegistry

    notes = tmp_path / "fresh-notes"
    notes.mkdir()
    for name in ("alpha", "beta"):
        (notes / f"{name}.md").write_text(f"---\nname: {name}\ndescription: The {name} note.\n---\nbody\n")
    real_get = EngineRegistry.get

    def watcher_first(self, notes_dir, index=None):  # the order the loaded box had
        engine = real_get(self, notes_dir, index)
        assert engine._first_sync.wait(120)
        return engine

    monkeypatch.setattr(EngineRegistry, "get", watcher_first)
    srv = daemon.Server(RuntimeConfig(api_key="test-key"))
    await srv.start()
    try:
        c = await AsyncClient.connect(srv.socket_path)
        first = await c.call("memory.index", notes=str(notes))
        assert (first["added"], first["unchanged"]) == (2, 0), first
        again = await c.call("memory.index", notes=str(notes))  # the next one: nothing new
        assert (again["added"], again["unchanged"]) == (0, 2), again
        await c.close()
    finally:
        await srv.shutdown()


def test_a_stopped_server_whose_socket_takes_no_more_connections_is_named_stopped(stopped_server, monkeypatch):
    """A stopped server's listen queue fills (nothing accepts): a connect then timed out or got
    EAGAIN until the time was up, and the client said "does not answer (stopped or hung?)"
    instead of naming the stopped process and `kill -CONT` (seen once in CI under load)."""
    import socket as socket_module

    from cockpit.server import client, paths

    sock = paths.socket_path()
    for failure in (TimeoutError, BlockingIOError):
        def full(self, address, failure=failure):
            raise failure()

        with monkeypatch.context() as patch:
            patch.setattr(socket_module.socket, "connect", full)
            with pytest.raises(client.ServerHung) as said:
                client._connect(sock, 0.2)
        assert str(said.value).startswith(f"the Cockpit server (pid {stopped_server}) is stopped")
