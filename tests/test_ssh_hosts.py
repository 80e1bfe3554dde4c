"""Remote hosts through real OpenSSH, offline: a test-owned sshd on a loopback port (tests/sshd.py)
and, behind it, this same checkout as the "remote" cockpit with a data folder of its own.

The CLI spawns, lists, approves, attaches to and kills a session there against the Messages API
stand-in; cutting the ssh connection mid-stream (the host gone for a while, then back) and
reconnecting shows every event since the drop, once; a wrong key, a missing remote cockpit, a
version mismatch, an unreachable host, a hung peer and a missing ssh are one line each.

``COCKPIT_WRITE_DOCS=1 pytest tests/test_ssh_hosts.py -k cut`` rewrites docs/remote-reconnect.md
from the cut-and-restore run (what the user sees).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sshd
from helpers import make_repo, stop_server
from standin import Reply, ToolUse

from cockpit.cli import main
from cockpit.runtime.config import RuntimeConfig
from cockpit.runtime.spawn import SpawnSpec

pytestmark = pytest.mark.skipif(sshd.available() is not None, reason=f"no test sshd: {sshd.available()}")

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "remote-reconnect.md"


@pytest.fixture(scope="module")
def ssh_host(tmp_path_factory):
    with sshd.SshHost(tmp_path_factory.mktemp("sshd")) as host:
        yield host


def _remote_command(data: Path, cache: str) -> str:
    env = {"COCKPIT_DATA_DIR": str(data), "COCKPIT_PREWARM": "0", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "COCKPIT_MODEL_CACHE": cache}
    return "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + f" {sys.executable} -m cockpit"


@pytest.fixture
def box(ssh_host, tmp_path, monkeypatch):
    """``[hosts.box]`` (and the broken hosts) in this test's config.toml; the remote's data folder
    is another one, its workspace a folder of its own. The remote server is stopped afterwards."""
    remote_data = tmp_path / "remote-data"
    remote_data.mkdir()
    ws = make_repo(tmp_path / "remote-ws", {"README.md": "Staging runs on port 8080.\n"})
    command = _remote_command(remote_data, os.environ.get("COCKPIT_MODEL_CACHE", ""))
    old_hello = json.dumps({"cockpit_bridge": 1, "version": "0.0.9", "protocol": 1})
    old_command = json.dumps(f"printf '%s\\n' {shlex.quote(old_hello)}; true")  # a bridge of another version
    config = Path(os.environ["COCKPIT_DATA_DIR"]) / "config.toml"
    config.write_text(f"""\
[hosts.box]
ssh = "remote"
command = {json.dumps(command)}
workspace = {json.dumps(str(ws))}

[hosts.ownkeys]
ssh = "remote"
command = {json.dumps(command)}
workspace = {json.dumps(str(ws))}
api_keys = "host"

[hosts.badkey]
ssh = "wrongkey"
command = {json.dumps(command)}

[hosts.nocockpit]
ssh = "remote"
command = "/nonexistent/bin/cockpit"

[hosts.old]
ssh = "remote"
command = {old_command}

[hosts.down]
ssh = "closed"

[hosts.hung]
ssh = "remote"
command = "sleep 30; true"
timeout = 2
""")
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", ssh_host.ssh_command)
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)
    yield {"ws": ws, "data": remote_data, "command": command}
    local = os.environ["COCKPIT_DATA_DIR"]
    os.environ["COCKPIT_DATA_DIR"] = str(remote_data)  # helpers.stop_server acts on this data folder's server
    try:
        stop_server()
    finally:
        os.environ["COCKPIT_DATA_DIR"] = local


def _remote_client(box):
    """A client of the remote server straight through its socket (the test's own view of it)."""
    from cockpit.server.client import BlockingClient

    sock = box["data"] / "run" / "server.sock"
    return BlockingClient(sock)


def _wait(pred, what: str, timeout: float = 90.0, seen: object = ""):
    deadline = time.monotonic() + timeout  # a failure guard only
    while True:
        value = pred()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}; {seen!r}"
        time.sleep(0.05)


def _status(box, sid: str) -> str:
    with _remote_client(box) as c:
        return c.call("get", id=sid)["status"]


def test_spawn_ls_approve_attach_kill_run_on_a_host(box, api, capsys):
    from cockpit.server.ssh import ssh_connector

    api.script(Reply("", [ToolUse("bash", {"command": "echo hi"})]), Reply("all done"))
    config = RuntimeConfig(api_key="test-key", base_url=api.base_url, max_retries=0)

    async def spawn() -> str:  # the app's way in: the connector the multi-host grid uses
        rt = await ssh_connector("box", config)
        try:
            assert rt.host == "box" and rt.workspace == str(box["ws"])
            row = await rt.spawn(SpawnSpec("say hi"))
            return row.id
        finally:
            await rt.aclose()

    sid = asyncio.run(spawn())
    assert main(["ls", "--host", "box", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["sessions"]
    assert [r["id"] for r in rows] == [sid] and rows[0]["workspace"] == str(box["ws"])
    _wait(lambda: _status(box, sid) == "needs approval", "the approval")
    assert main(["approve", f"box:{sid}"]) == 0  # the id as the grid shows it: that host's session
    assert capsys.readouterr().out.strip() == f"{sid}: approved echo hi (once)"
    assert main(["attach", sid[-5:], "--host", "box"]) == 0  # until it waits for a follow-up
    out = capsys.readouterr().out
    assert "⚙ bash(" in out and "[allowed]" in out and "all done" in out and f"[{sid} is waiting for you" in out
    assert f"cockpit send --host box {sid} '…'" in out  # as copied (the host named)
    assert "cockpit approve" not in out  # the ask was answered before the attach: no hint to answer it
    assert main(["ls", "--host", "box"]) == 0
    assert "say hi" in capsys.readouterr().out
    assert main(["kill", sid, "--host", "box"]) == 0
    assert capsys.readouterr().out.strip() == f"{sid} killed"
    assert _status(box, sid) == "killed"
    # a refusal of box's server names box in what it suggests (copied, "see cockpit ls" listed this machine's)
    for argv in (["approve", "zzzz9999", "--host", "box"], ["approve", "box:zzzz9999"]):
        assert main(argv) != 0
        err = capsys.readouterr().err
        assert "no session 'zzzz9999'" in err and "cockpit ls --host box" in err, err
    # a headless run there, waiting for its report (the key goes with the spawn, through ssh)
    api.script(Reply("the port is 8080"))
    assert main(["run", "which port?", "--host", "box", "--base-url", api.base_url, "--notes", str(box["ws"] / "none"),
                 "--json"]) == 2  # that notes folder does not exist there: the remote engine says so
    assert capsys.readouterr().err == f"cockpit: error: memory engine on host box: notes folder not found: {box['ws']}/none\n"
    assert main(["run", "which port?", "--host", "box", "--base-url", api.base_url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sessions"][0]["answer"] == "the port is 8080"
    assert report["sessions"][0]["workspace"] == str(box["ws"])


def test_worktrees_and_doctor_run_on_the_host(box, api, capfd, monkeypatch):
    api.script(Reply("", [ToolUse("bash", {"command": "echo hi > hello.txt"})]), Reply("wrote it"))
    assert main(["run", "write hello", "--host", "box", "--base-url", api.base_url,
                 "--permission-mode", "bypassPermissions", "--json"]) == 0
    row = json.loads(capfd.readouterr().out)["sessions"][0]
    assert row["diff"]["files"] == 1 and row["worktree"]["path"].startswith(str(box["data"]))
    assert main(["worktrees", "list", "--host", "box", "--json"]) == 0  # the host's worktrees…
    there = json.loads(capfd.readouterr().out)["worktrees"]
    assert [w["session"] for w in there] == [row["id"]]
    assert main(["worktrees", "list", "--json"]) == 0  # …not this machine's
    assert json.loads(capfd.readouterr().out)["worktrees"] == []
    assert main(["worktrees", "diff", row["id"], "--host", "box"]) == 0
    assert "+hi" in capfd.readouterr().out
    assert main(["shell", row["id"], "--host", "box"]) == 0  # its shell there (stdin at its end here: it exits)
    assert f"shell in {row['worktree']['path']} (" in capfd.readouterr().err
    assert main(["server", "status", "--host", "box", "--json"]) == 0  # the host's server, not this machine's
    assert json.loads(capfd.readouterr().out)["running"] is True
    assert main(["server", "stop", "--host", "box"]) == 0
    assert "Cockpit server stopped" in capfd.readouterr().out
    assert main(["server", "status", "--host", "box"]) == 0
    assert capfd.readouterr().out.strip() == "no Cockpit server is running"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    code = main(["doctor", "--host", "box"])
    out, _ = capfd.readouterr()
    assert "✓ reachable: remote answered through ssh" in out
    assert "✓ version: cockpit 0.1.0 there, as here" in out
    here, there = out.split("on host box (cockpit doctor there):")
    assert "✓ sandbox" in there
    # the key and the base URL go from here with each spawn: the key is checked here, never asked of
    # the host; the URL here, and there too (the sessions call it from there)
    assert "✓ API key: ANTHROPIC_API_KEY is set" in here and "✓ base URL:" in here
    assert "API key" not in there
    assert f"✓ base URL (the client's, from this host): {api.base_url} is reachable" in there
    assert code == (1 if "✗" in there else 0)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # (discard: nothing listens)
    assert main(["doctor", "--host", "box"]) == 1
    there = capfd.readouterr().out.split("on host box (cockpit doctor there):")[1]
    assert "✗ base URL (the client's, from this host): http://127.0.0.1:9 is not reachable" in there


def test_a_host_with_api_keys_host_uses_and_checks_its_own_key(box, api, capfd, monkeypatch):
    """``api_keys = "host"``: nothing of this machine's keys goes there — a run needs no key here,
    box's server takes the key its ``api_key_helper`` prints, and ``doctor --host`` checks the key
    there instead of here, never printing it."""
    (box["data"] / "config.toml").write_text('api_key_helper = "echo box-helper-key"\n')
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    api.script(Reply("the port is 8080"))
    assert main(["run", "which port?", "--host", "ownkeys", "--base-url", api.base_url, "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["sessions"][0]["answer"] == "the port is 8080"
    seen = {r.headers.get("x-api-key") or r.headers.get("Authorization", "").removeprefix("Bearer ")
            for r in api.requests if r.path.endswith("/v1/messages")}
    assert seen == {"box-helper-key"}
    assert main(["run", "which port?", "--host", "box", "--base-url", api.base_url]) == 2  # box sends ours: none
    assert "ANTHROPIC_API_KEY is not set" in capfd.readouterr().err
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    main(["doctor", "--host", "ownkeys"])
    out = capfd.readouterr().out
    here, there = out.split("on host ownkeys (cockpit doctor there):")
    assert '✓ API key: not sent: host ownkeys uses its own (api_keys = "host"), checked there' in here
    assert '✓ API key (this host\'s own: api_keys = "host"): api_key_helper printed a key' in there
    assert "box-helper-key" not in out


@pytest.mark.parametrize(("host", "expected"), [
    ("badkey", r"^cockpit: error: host badkey \(wrongkey\): ssh authentication failed \(.*Permission denied "
               r"\(publickey\)\.?\) — is your key loaded"),
    ("nocockpit", r"^cockpit: error: host nocockpit \(remote\): remote cockpit not found "
                  r"\(`/nonexistent/bin/cockpit` exited 127: command not found\)"),
    ("old", r"^cockpit: error: version mismatch: local cockpit 0\.1\.0 \(protocol 1\), host old has 0\.0\.9 "
            r"\(protocol 1\) — install the same version on both$"),
    ("down", r"^cockpit: error: host down \(closed\) is unreachable \(ssh: connect to host 127\.0\.0\.1 port \d+: "
             r"Connection refused\)$"),
    ("hung", r"^cockpit: error: host hung: no answer from `sleep 30; true server bridge` within 2 s \(a hung peer\?\)"),
])
def test_each_way_a_host_fails_is_one_line(box, capsys, host, expected):
    assert main(["ls", "--host", host]) == 1
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and re.search(expected, lines[0]), captured.err
    assert captured.out == "" and "Traceback" not in captured.err


def test_a_missing_ssh_is_one_line(box, capsys, monkeypatch):
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", "/nonexistent/ssh")
    assert main(["attach", "abcd", "--host", "box"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cockpit: error: ssh not found (/nonexistent/ssh): install OpenSSH's client")
    assert len(err.splitlines()) == 1


def _ssh_children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == pid and name == "ssh":
            out.append(int(entry))
    return out


def test_cut_the_connection_mid_stream_and_reattach_with_every_event_since(box, api, ssh_host):
    """`cockpit attach --host box` follows a streaming session; the ssh connection is killed and
    the host stays unreachable (sshd stopped) while the session goes on there; once sshd is back,
    attach reconnects and shows everything since the drop, exactly once."""
    words = [f"w{i:02d}" for i in range(1, 41)]
    api.script(Reply(" ".join(words), stall_after=8))  # five words, then it waits for release()
    config = RuntimeConfig(api_key="test-key", base_url=api.base_url, max_retries=0)

    async def spawn() -> str:
        from cockpit.server.ssh import ssh_connector

        rt = await ssh_connector("box", config)
        try:
            return (await rt.spawn(SpawnSpec("count to forty"))).id
        finally:
            await rt.aclose()

    sid = asyncio.run(spawn())
    env = {**os.environ, "COCKPIT_RECONNECT_S": "120"}
    proc = subprocess.Popen([sys.executable, "-m", "cockpit", "attach", sid, "--host", "box"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    out = bytearray()

    def read() -> None:
        assert proc.stdout is not None
        while chunk := proc.stdout.read1(4096):
            out.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        _wait(lambda: b"w05" in out, "the first words")
        ssh_host.stop()  # the host goes away: no new connection gets through
        children = _wait(lambda: _ssh_children(proc.pid), "attach's ssh child")
        for pid in children:
            os.kill(pid, signal.SIGKILL)  # the connection is cut mid-stream
        _wait(lambda: b"reconnecting to host box failed" in out, "a failed reconnect", seen=out)
        api.release()  # meanwhile the session goes on there, to its end of turn
        _wait(lambda: _status(box, sid) == "waiting for you", "the session's turn to end")
        ssh_host.start()  # the host is back
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
        if ssh_host.proc is None or ssh_host.proc.poll() is not None:
            ssh_host.start()  # the next test's host is up
        reader.join(timeout=10)
    text = out.decode()
    streamed = re.sub(r"\n?\[(connection to|reconnect)[^\]]*\]\n", "", text)  # the attach's own lines out
    # all of it, once — counted as words: a session id such as 1nh13qw364k4 holds "w36"
    assert " ".join(words) in streamed and all(len(re.findall(rf"\b{w}\b", text)) == 1 for w in words)
    assert "[connection to host box lost" in text and f"{sid} goes on there — reconnecting]" in text
    assert re.search(r"\[reconnected to host box: \d+ events? since the drop\]", text)
    assert text.rstrip().endswith(f"[{sid} is waiting for you: cockpit send --host box {sid} '…']")
    assert text.index("[reconnected") < text.index("w40")  # the rest came after the reconnect
    if os.environ.get("COCKPIT_WRITE_DOCS"):
        _write_doc(text, sid)


def _write_doc(text: str, sid: str) -> None:
    DOC.write_text(f"""# Reconnecting to a remote host

What `cockpit attach {sid} --host box` printed in `tests/test_ssh_hosts.py`'s cut-and-restore
test: a session on the host `box` (a test-owned sshd on a loopback port, the remote cockpit a
second data folder) streams its answer; the test kills attach's `ssh` child mid-stream and stops
sshd, so the host is unreachable while the session goes on there to the end of its turn; then
sshd comes back. Attach retries with back-off (1 s, 2 s, 4 s … 15 s, for 120 s in all:
`COCKPIT_RECONNECT_S`) and, once through, shows every event since the drop — the rest of the
streamed text, then the state — none twice. Regenerate with
`COCKPIT_WRITE_DOCS=1 pytest tests/test_ssh_hosts.py -k cut`.

```text
$ cockpit attach {sid} --host box
{text.rstrip()}
```
""")


def _grid_on_box(config: RuntimeConfig):
    """What `cockpit --host box` runs: the grid app over box alone, through ssh."""
    import argparse

    from cockpit.grid_cli import grid_app
    from cockpit.runtime.config import config_path
    from cockpit.server.host_config import grid_hosts

    args = argparse.Namespace(host=["box"], workspace=".", notes="notes")
    app, engine = grid_app(args, config, Path.cwd(), grid_hosts(args.host, config_path()))
    assert engine is None  # no local host: no local engine
    return app


async def _until(pilot, cond, what: str, timeout: float = 120.0) -> None:
    for _ in range(int(timeout / 0.05)):  # a failure guard only: the app waits on the condition
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_the_app_on_a_host_spawns_approves_and_merges_there(box, api):
    """`cockpit --host box`: the grid app over box's server through ssh. The spawn dialog offers
    box and its workspace there; the session asks, `y` allows it there; `d` then `m` merges its
    worktree into box's repository (the session ends done there); `q` detaches."""
    from textual.widgets import Input

    from cockpit.events import SessionStatus
    from cockpit.grid_cli import detached_message
    from cockpit.tui.screens.diff import DiffScreen
    from cockpit.tui.screens.spawn import SpawnDialog

    def responder(body):
        if len(body["messages"]) == 1:
            return Reply("Writing it.", [ToolUse("bash", {"command": "echo hi > hello.txt"})])
        return Reply("Wrote hello.txt.")

    api.responder = responder
    config = RuntimeConfig(api_key="test-key", base_url=api.base_url, model="test-model", max_retries=0,
                           notify_os=False)
    app = _grid_on_box(config)
    async with app.run_test(size=(160, 48)) as pilot:
        await _until(pilot, lambda: getattr(app.host_states.get("box"), "state", "") == "connected", "box connected")
        await pilot.press("n")
        dialog = app.screen
        assert isinstance(dialog, SpawnDialog)
        assert dialog.query_one("#spawn-workspace", Input).value == str(box["ws"])  # box's folder, not this one
        await pilot.press(*"write hello", "enter")
        await _until(pilot, lambda: [v.status for v in app.views.values()] == [SessionStatus.NEEDS_APPROVAL],
                     "the session asks")
        (sid, view), = app.views.items()
        assert sid.startswith("box:") and view.worktree is not None
        await pilot.press("y")  # allowed once, there
        await _until(pilot, lambda: view.status is SessionStatus.WAITING, "the session's answer")
        assert "".join(b.text for b in view.blocks if b.kind == "text") == "Writing it.Wrote hello.txt."
        assert (Path(view.worktree.path) / "hello.txt").read_text() == "hi\n"  # box's worktree
        assert view.worktree.path.startswith(str(box["data"]))
        await pilot.press("d")
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        await _until(pilot, lambda: screen.diff is not None, "the diff from box")
        assert [f.path for f in screen.diff.files] == ["hello.txt"]
        await pilot.press("m")
        await _until(pilot, lambda: "merge" in str(screen.result), "the merge's result")
        assert "✓" in str(screen.result), screen.result
        assert subprocess.run(["git", "show", "main:hello.txt"], cwd=box["ws"], capture_output=True,
                              text=True).stdout == "hi\n"  # merged into box's repository
        await pilot.press("escape", "s")  # merged: its worktree is gone there, no shell to open
        await _until(pilot, lambda: any("has no folder to open a shell in: its change was merged" in n.message
                                        for n in app._notifications),
                     "the shell key says why not")
        await pilot.press("q")  # detach
    with _remote_client(box) as c:
        row = c.call("get", id=sid.split(":", 1)[1])
    assert row["status"] == "done" and row["workspace"] == str(box["ws"])  # merged: it ended there
    assert detached_message(["box"], 1, 1).endswith("cockpit ls --host box · cockpit attach --host box ID · "
                                                    "cockpit --host box to come back)")  # what q says then




async def test_s_and_r_on_a_remote_pane_open_ssh_in_its_folder_and_that_hosts_transcripts(box, api, tmp_path,
                                                                                         ssh_host, monkeypatch):
    """`s` on box's pane runs the user's ssh (COCKPIT_SSH_COMMAND, the host's `ssh =`) with a login
    shell in the session's folder there — a folder whose name holds quotes, `$(…)` and backticks,
    none of them run; `r` lists box's transcripts, read from box's server."""
    from textual.drivers.headless_driver import HeadlessDriver

    from cockpit.events import SessionStatus
    from cockpit.tui.screens.review import ReviewScreen

    tag = f"PWNED-{os.getpid()}-{time.monotonic_ns()}"  # what an injected command would create
    odd = make_repo(tmp_path / f"it's a \"dir\" $(touch {tag}); touch {tag}-2 `touch {tag}-3`", {"README.md": "odd\n"})
    api.responder = lambda body: Reply("answer to " + body["messages"][0]["content"][-1]["text"])
    config = RuntimeConfig(api_key="test-key", base_url=api.base_url, model="test-model", max_retries=0,
                           notify_os=False)
    app = _grid_on_box(config)
    suspended: list[str] = []
    monkeypatch.setattr(HeadlessDriver, "can_suspend", property(lambda self: True), raising=False)
    monkeypatch.setattr(HeadlessDriver, "suspend_application_mode", lambda self: suspended.append("suspend"),
                        raising=False)
    monkeypatch.setattr(HeadlessDriver, "resume_application_mode", lambda self: suspended.append("resume"),
                        raising=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await _until(pilot, lambda: getattr(app.host_states.get("box"), "state", "") == "connected", "box connected")
        app.spawn(SpawnSpec("say hi", workspace=str(odd), worktree=False), host="box")
        await _until(pilot, lambda: [v.status for v in app.views.values()] == [SessionStatus.WAITING], "the answer")
        (sid, view), = app.views.items()
        assert view.cwd == str(odd)
        # the user types into the remote shell: here a wrapper of the same ssh feeds it one command
        out = tmp_path / "remote-pwd"
        feed = tmp_path / "feeding-ssh"
        feed.write_text(f"#!/bin/sh\nprintf '%s\\n' {shlex.quote(f'pwd -P > {shlex.quote(str(out))}')} | "
                        f"{ssh_host.ssh_command} \"$@\"\n")
        feed.chmod(0o755)
        monkeypatch.setenv("COCKPIT_SSH_COMMAND", str(feed))  # read when `s` runs ssh (the grid is connected)
        await pilot.press("s")
        await _until(pilot, lambda: suspended == ["suspend", "resume"], "the shell run and the app back")
        assert out.read_text().strip() == str(odd.resolve())  # it ran there, in the session's folder
        assert not [p for d in (tmp_path, odd, Path.home()) for p in d.glob(f"{tag}*")]  # none ran
        monkeypatch.setenv("COCKPIT_SSH_COMMAND", ssh_host.ssh_command)

        await pilot.press("r")  # box's transcripts, from box's server
        screen = app.screen
        assert isinstance(screen, ReviewScreen) and screen.source.host == "box"
        await _until(pilot, lambda: screen.shown is not None and "answer to say hi" in screen.text, "the transcript")
        assert [i.session_id for i in screen.all_infos] == [sid.split(":", 1)[1]]
        assert str(screen.shown.path).startswith(str(box["data"]))  # box's file, read through its server
        await pilot.press("escape")
        await app.shutdown()


def test_memory_commands_run_on_the_host_with_its_notes(box, capfd):
    notes = box["ws"] / "notes"
    notes.mkdir()
    (notes / "staging-port.md").write_text("---\nname: staging-port\ndescription: Staging listens on port 8080\n---\n"
                                           "The staging server listens on port 8080, behind the VPN.\n")
    config = Path(os.environ["COCKPIT_DATA_DIR"]) / "config.toml"
    config.write_text(config.read_text().replace("[hosts.badkey]", f'notes = "{notes}"\n\n[hosts.badkey]', 1))
    assert main(["memory", "search", "which port does staging use", "--host", "box", "--json"]) == 0
    hits = json.loads(capfd.readouterr().out)
    found = hits["hits"] if isinstance(hits, dict) else hits
    assert [h["name"] for h in found][:1] == ["staging-port"]
    assert main(["memory", "search", "which port", "--json"]) == 2  # not here: this folder has no notes
    assert f"notes folder {Path.cwd().resolve() / 'notes'} does not exist" in capfd.readouterr().err
