"""Several hosts in one grid: the app over two real servers (two data folders, two sockets), the
second reached through a relay the test can cut and restore (what a broken SSH link does)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from helpers import stop_server
from socket_relay import Relay
from standin import Reply, StandIn, ToolUse
from tui_fakes import text_of, until

from cockpit import hostids
from cockpit.events import HostStatus, StatusChanged
from cockpit.events import SessionStatus as S
from cockpit.runtime import RuntimeConfig
from cockpit.runtime.spawn import SpawnSpec
from cockpit.server import paths
from cockpit.server.client import BlockingClient, RemoteError, start_server
from cockpit.server.host_config import GridHost, hosts_for_app
from cockpit.server.hosts import Backoff, MultiHostRuntime
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.spawn import SpawnDialog
from cockpit.tui.widgets import TotalsBar

SIZE = (180, 50)
FAST = Backoff(first=0.05, factor=2.0, cap=0.4)  # the test waits on conditions; retries come quickly


@pytest.fixture
def two_servers(monkeypatch, tmp_path):
    """The local server (this test's data folder) and a second one ("box", its own data folder)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    start_server()
    local = paths.socket_path()
    box_data = tmp_path / "box-data"
    with monkeypatch.context() as m:
        m.setenv("COCKPIT_DATA_DIR", str(box_data))
        start_server()
        box = paths.socket_path()
    yield local, box
    stop_server(box)
    stop_server(local)


class Notifier:
    def __init__(self):
        self.sent = []

    async def send(self, title, message):
        self.sent.append((title, message))


def responder(body):
    """"make …" tasks run a command (which asks), then say so; any other task is answered."""
    messages = body["messages"]
    task = messages[0]["content"][-1]["text"]
    if "make" in task:
        if len(messages) == 1:
            return Reply("Creating the file.", [ToolUse("bash", {"command": "touch made.txt"})])
        return Reply("The file is made.")
    return Reply("answer to " + task)


def grid_app(config, ws, local_sock, box_sock, box_notes=None) -> tuple[CockpitApp, Notifier]:
    box = GridHost("box", socket=str(box_sock), workspace=str(ws), notes=str(box_notes) if box_notes else None)
    hosts = hosts_for_app([GridHost("local"), box], config)
    notifier = Notifier()

    async def attach() -> MultiHostRuntime:
        return await MultiHostRuntime.attach(hosts, config, backoff=FAST)

    app = CockpitApp(attach, None, workspace=ws, model=config.model, sessions_dir=config.resolved_sessions_dir(),
                     api_key_missing=False, os_notifier=notifier)
    return app, notifier


def text(view) -> str:
    return "".join(b.text for b in view.blocks if b.kind == "text")


def header(app) -> str:
    return text_of(app.screen_stack[0].query_one(TotalsBar))


def title(app, view) -> str:
    return re.sub(r"\[/?b\]", "", str(app.panes[view.session_id].border_title))


def one(app, host: str, task: str):
    found = [v for sid, v in app.views.items() if hostids.host_of(sid) == host and v.task == task]
    assert len(found) == 1, (host, task, list(app.views))
    return found[0]



def client_config(api) -> RuntimeConfig:
    """The grid's own settings against the stand-in ``api`` (no retries, no sandbox)."""
    return RuntimeConfig(api_key="test-key", base_url=api.base_url, model="test-model", max_retries=0, sandbox=False)

async def test_two_hosts_in_one_grid_spawn_approve_counts_and_notifications(two_servers, tmp_path):
    local_sock, box_sock = two_servers
    ws = tmp_path / "ws"
    ws.mkdir()
    relay = Relay(tmp_path / "relay.sock", box_sock)
    box_notes = tmp_path / "box-notes"  # box's own notes: its server indexes them
    box_notes.mkdir()
    (box_notes / "staging.md").write_text("---\nname: staging-port\ndescription: Staging runs on port 6443\n---\n"
                                          "Staging listens on port 6443 on the host callisto.\n")
    with StandIn() as api:
        api.responder = responder
        config = client_config(api)
        app, notifier = grid_app(config, ws, local_sock, relay.path, box_notes)
        await relay.restore()
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: set(app.host_states) == {"local", "box"}, "both hosts known")
            app.spawn("question here")  # no host named: the local one
            # the dialog picks the host, then its workspace
            await pilot.press("n")
            dialog = app.screen
            assert isinstance(dialog, SpawnDialog)
            dialog.query_one("#spawn-host").value = "box"
            await pilot.pause()
            assert dialog.query_one("#spawn-workspace").value == str(ws)
            assert f"notes on box: {box_notes}" in text_of(dialog.query_one("#spawn-host-notes"))
            dialog.query_one("#spawn-task").focus()
            await pilot.press(*"what port does staging run on")
            # the preview is of box's notes, from box's server (over the grid's connection)
            await until(pilot, lambda: "staging-port" in text_of(dialog.query_one("#spawn-preview")),
                        "box's note in the preview", timeout=180)  # box's server loads the model first
            await pilot.press("enter")
            await until(pilot, lambda: len(app.views) == 2 and all(v.status is S.WAITING for v in app.views.values()),
                        "one session on each host, both answered")
            here, there = one(app, "local", "question here"), one(app, "box", "what port does staging run on")
            assert ":" not in here.session_id and there.session_id.startswith("box:")
            assert text(here) == "answer to question here" and text(there) == "answer to what port does staging run on"
            assert [n.name for n in there.notes] == ["staging-port"] and not here.notes  # each host's own notes
            # the second server has it, under its own id
            with BlockingClient(box_sock) as c:
                rows = c.call("list")["sessions"]
            assert [r["task"] for r in rows] == ["what port does staging run on"]
            assert there.session_id == "box:" + rows[0]["id"]
            # each title names its host; the header counts both hosts' sessions and lists the hosts
            assert title(app, here).startswith(f"1 local · {here.session_id} · ")
            assert title(app, there).startswith(f"2 box · {rows[0]['id']} · ")
            await until(pilot, lambda: "2 waiting for you" in header(app), "the header counts both hosts")
            assert "local ●  box ●" in header(app)

            # a session on the second host asks; the notification names it; y answers it there
            app.screen.focus_pane(app.panes[here.session_id])
            app.spawn(SpawnSpec("make a file"), focus=False, host="box")
            await until(pilot, lambda: any(v.status is S.NEEDS_APPROVAL for v in app.views.values()),
                        "the ask on box")
            asking = one(app, "box", "make a file")
            await until(pilot, lambda: "1 needs approval" in header(app), "the header counts it")
            await until(pilot, lambda: any(n.title.startswith(f"3 · {asking.session_id}") for n in app._notifications),
                        "a toast names the session on box")
            app.screen.focus_pane(app.panes[asking.session_id])
            await pilot.press("y")
            await until(pilot, lambda: asking.status is S.WAITING, "approved on box, finished")
            assert text(asking) == "Creating the file.The file is made."
            assert (Path(asking.cwd) / "made.txt").exists()
            await until(pilot, lambda: "3 waiting for you" in header(app), "three waiting, two hosts")
            await relay.cut()
            await app.shutdown()


async def test_a_dropped_host_shows_reconnecting_and_comes_back_with_every_event(two_servers, tmp_path, caplog):
    caplog.set_level("INFO", logger="cockpit.hosts")
    local_sock, box_sock = two_servers
    ws = tmp_path / "ws"
    ws.mkdir()
    relay = Relay(tmp_path / "relay.sock", box_sock)
    with StandIn() as api:
        api.responder = responder
        config = client_config(api)
        app, notifier = grid_app(config, ws, local_sock, relay.path)
        await relay.restore()
        async with app.run_test(size=SIZE) as pilot:
            app.spawn("question here")
            app.spawn(SpawnSpec("make a file"), host="box")
            await until(pilot, lambda: len(app.views) == 2, "two panes")
            asking = one(app, "box", "make a file")
            here = one(app, "local", "question here")
            await until(pilot, lambda: asking.status is S.NEEDS_APPROVAL and here.status is S.WAITING, "the ask")
            request_id = asking.pending.request_id
            app.screen.focus_pane(app.panes[here.session_id])  # looking at the local one

            await relay.cut()  # the link to box breaks; its session goes on there
            await until(pilot, lambda: "reconnecting" in asking.link or "unreachable" in asking.link,
                        "box's pane says reconnecting")
            pane = app.panes[asking.session_id]
            await until(pilot, lambda: "host reconnecting" in text_of(pane.query_one("#pane-status")),
                        "shown on the pane")
            await until(pilot, lambda: "box ⟳ reconnecting" in header(app), "the header says it")
            assert here.link == ""  # the local host is untouched
            # why, once (a toast is a message to the app: it lands on a later tick)
            await until(pilot, lambda: any(n.message.startswith("host box reconnecting: ") for n in app._notifications),
                        "the toast says why")
            # meanwhile another client answers the ask on box, and the session finishes there
            _, box_id = hostids.split(asking.session_id)
            with BlockingClient(box_sock) as c:
                c.call("answer", id=box_id, request_id=request_id, allow=True, scope="once", reason="")
                for _ in range(400):
                    if c.call("list")["sessions"][0]["status"] == "waiting for you":
                        break
                    await pilot.pause(0.05)
            assert asking.status is S.NEEDS_APPROVAL  # the app has not heard yet

            await relay.restore()
            await until(pilot, lambda: asking.status is S.WAITING and asking.link == "", "box is back")
            assert app.host_states["box"].state == "connected"
            await until(pilot, lambda: any(n.message == "host box is back" for n in app._notifications), "the toast")
            # the reconnect log: connected, lost, tried while away (back-off), back with the replay
            lines = [r.getMessage() for r in caplog.records if r.name == "cockpit.hosts" and "box" in r.message]
            assert lines[0] == "host box: connected"
            assert lines[1].startswith("host box: connection lost (") and lines[1].endswith("), reconnecting")
            retries = [ln for ln in lines[2:-1] if ln.startswith("host box: reconnecting (")]
            assert retries and len(retries) == len(lines) - 3
            assert re.fullmatch(r"host box: back, \d+ events replayed", lines[-1])
            print("\n".join(lines))  # pytest -s shows the log
            # every event since the drop, nothing twice
            assert text(asking) == "Creating the file.The file is made."
            tools = [b for b in asking.blocks if b.kind == "tool"]
            assert len(tools) == 1 and tools[0].approval == "allowed once" and tools[0].result is not None
            assert asking.pending is None
            await until(pilot, lambda: "host reconnecting" not in text_of(pane.query_one("#pane-status")),
                        "the pane no longer says reconnecting")  # redrawn on the next flush tick
            await until(pilot, lambda: "box ●" in header(app) and "reconnecting" not in header(app), "header")
            # it came to need you while away: said once it is back
            await until(pilot, lambda: any(n.title.endswith("make a file") and "waiting for you" in n.message
                                           for n in app._notifications), "the waiting session announced")
            # and a follow-up goes to box again
            await app.manager.send(asking.session_id, "thanks")
            await until(pilot, lambda: sum(b.kind == "user" for b in asking.blocks) == 1, "the follow-up shown")
            await relay.cut()
            await app.shutdown()


async def test_a_host_that_cannot_be_reached_at_start_does_not_hold_up_the_other(two_servers, tmp_path):
    local_sock, _ = two_servers
    ws = tmp_path / "ws"
    ws.mkdir()
    with StandIn() as api:
        api.responder = responder
        config = client_config(api)
        app, _ = grid_app(config, ws, local_sock, tmp_path / "nobody.sock")
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.host_states.get("box") is not None
                        and app.host_states["box"].state == "unreachable", "box unreachable")
            await until(pilot, lambda: "box ✗ unreachable" in header(app), "the header says it")
            app.spawn("question here")
            await until(pilot, lambda: len(app.views) == 1 and next(iter(app.views.values())).status is S.WAITING,
                        "the local host works")
            app.spawn(SpawnSpec("what port does staging run on"), host="box")
            await until(pilot, lambda: any("host box is unreachable" in n.message for n in app._notifications),
                        "a spawn on box says why not")
            await app.shutdown()


async def test_cockpit_host_local_host_box_from_the_config(two_servers, tmp_path, monkeypatch):
    """What `cockpit --host local --host box` builds: [hosts.box] socket = … in config.toml."""
    import argparse

    from cockpit.grid_cli import detached_message
    from cockpit.grid_cli import grid_app as build
    from cockpit.runtime.config import config_path
    from cockpit.server.host_config import grid_hosts

    _, box_sock = two_servers
    ws = tmp_path / "ws"
    ws.mkdir()
    config_path().write_text(f'[grid]\nhosts = ["local", "box"]\n[hosts.box]\nsocket = "{box_sock}"\n')
    with StandIn() as api:
        api.responder = responder
        config = client_config(api)
        app, engine = build(argparse.Namespace(notes="notes"), config, ws, grid_hosts(None, config_path()))
        assert engine is None  # no ./notes here
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: [(h, s.state) for h, s in app.host_states.items()]
                        == [("local", "connected"), ("box", "connected")], "both hosts connected")
            app.spawn(SpawnSpec("question there"), host="box")
            await until(pilot, lambda: [v.status for v in app.views.values()] == [S.WAITING], "answered on box")
            assert next(iter(app.views)).startswith("box:")
            await app.shutdown()
    # what the shell shows when q detaches from live sessions
    assert detached_message(["local", "box"], 2).startswith("cockpit: 2 sessions stay in their servers (2 working; ")
    assert detached_message(["local"], 1, 1).endswith("(1 needs you (a follow-up or an approval); cockpit ls · cockpit attach ID · "
                                                     "cockpit to come back)")


async def test_r_on_a_pane_of_another_host_reviews_and_resumes_that_hosts_transcripts(two_servers, tmp_path,
                                                                                      monkeypatch):
    """`r` on box's pane lists box's transcripts (read from box's server, not this machine's
    files); `o` resumes one on box, its earlier output read from box as well."""
    from cockpit.server.remote import HostTranscripts
    from cockpit.tui.screens.review import ReviewScreen

    read_there: list[str] = []  # box's transcripts read through its server (box's files are this machine's too)
    real_read = HostTranscripts.read
    monkeypatch.setattr(HostTranscripts, "read", lambda self, path, warnings: read_there.append(self.host)
                        or real_read(self, path, warnings))

    local_sock, box_sock = two_servers
    ws = tmp_path / "ws"
    ws.mkdir()
    with StandIn() as api:
        api.responder = responder
        config = client_config(api)
        app, _ = grid_app(config, ws, local_sock, box_sock)
        async with app.run_test(size=SIZE) as pilot:
            app.spawn("question here")
            app.spawn(SpawnSpec("question there"), host="box")
            await until(pilot, lambda: len(app.views) == 2 and all(v.status is S.WAITING for v in app.views.values()),
                        "one answer on each host")
            here, there = one(app, "local", "question here"), one(app, "box", "question there")
            await app.manager.kill(there.session_id)
            await until(pilot, lambda: there.status is S.KILLED, "box's session ended")
            app.screen.focus_pane(app.panes[there.session_id])
            await pilot.press("r")
            screen = app.screen
            assert isinstance(screen, ReviewScreen) and screen.source.host == "box"
            await until(pilot, lambda: screen.shown is not None and "answer to question there" in screen.text,
                        "box's transcript shown")
            _, box_id = hostids.split(there.session_id)
            assert [i.session_id for i in screen.all_infos] == [box_id]  # box's only: not the local session
            assert str(screen.shown.path).startswith(str(tmp_path / "box-data"))
            await pilot.press("o")  # resumed on box
            await until(pilot, lambda: len(app.views) == 3, "the resumed session's pane")
            (new,) = [v for sid, v in app.views.items() if sid not in (here.session_id, there.session_id)]
            assert new.session_id.startswith("box:")
            await until(pilot, lambda: "answer to question there" in text(new), "its earlier output, from box")
            assert read_there == ["box", "box"]  # the review's, then the resumed pane's history
            with BlockingClient(box_sock) as c:
                assert len(c.call("list")["sessions"]) == 2  # box runs it
                for path in ("/etc/passwd", str(screen.shown.path.parent / ".." / "live.json"), "relative.jsonl"):
                    with pytest.raises(RemoteError, match="path must be a transcript of this server's folder"):
                        c.call("transcript", path=path)  # a client reads transcripts, no other file
            app.screen.focus_pane(app.panes[here.session_id])
            await pilot.press("r")  # a local pane: this machine's transcripts
            screen = app.screen
            assert isinstance(screen, ReviewScreen) and screen.source.host == ""
            await until(pilot, lambda: screen.shown is not None and "answer to question here" in screen.text,
                        "the local transcript")
            assert [i.session_id for i in screen.all_infos] == [here.session_id]
            await app.shutdown()


async def test_the_shell_key_never_opens_this_machines_folder_for_a_session_on_another_host(tmp_path, monkeypatch):
    """A session on host box names a folder of box; the same path here (the same user and layout on
    both machines) is another checkout: ``s`` says how to reach box's, and opens no local shell."""
    import contextlib
    import subprocess

    from tui_fakes import FakeManager

    from cockpit import events as ev
    from cockpit.server.hosts import Host

    calls: list = []
    monkeypatch.setattr(subprocess, "call", lambda *a, **k: calls.append((a, k)) or 0)
    here = str(tmp_path)  # exists on this machine
    managers = {"local": FakeManager([ev.SessionSpawned("s1", "t", "m", here, "/t", True, cwd=here)]),
                "box": FakeManager([ev.SessionSpawned("s2", "t", "m", here, "/t", True, cwd=here)])}

    def connector(name):
        async def connect():
            return managers[name]
        return connect

    hosts = [Host("local", connector("local"), same_machine=True), Host("box", connector("box"))]

    async def attach() -> MultiHostRuntime:
        return await MultiHostRuntime.attach(hosts, RuntimeConfig(), backoff=FAST)

    app = CockpitApp(attach, None, workspace=tmp_path, sessions_dir=tmp_path / "sessions", api_key_missing=False,
                     os_notifier=Notifier())
    notes: list[str] = []
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)  # (a terminal's app suspends; the test's cannot)
    monkeypatch.setattr(app, "notify", lambda message, *a, **k: notes.append(str(message)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "box:s2" in app.views, "box's session in the grid")
        app.open_shell("s1")  # the local host's session: its folder is this machine's
        assert len(calls) == 1 and calls[0][1]["cwd"] == here
        app.open_shell("box:s2")
        assert len(calls) == 1 and any("host box" in n and "cockpit shell s2 --host box" in n for n in notes), notes


async def test_a_hosts_error_text_is_shown_as_text_not_markup(tmp_path):
    """What a host says (its bridge's error, an error reply, an event's message) reaches the
    notifications literally: an unbalanced ``[/]`` does not stop the app, and an ``@click`` action
    in it is no link that runs an action of the app."""
    from textual.widgets._toast import Toast
    from tui_fakes import FakeManager

    from cockpit.server.client import ServerError
    from cockpit.server.hosts import Host

    said = "host box: [/] closed; [@click=app.quit]click here[/]"

    async def local():
        return FakeManager()

    async def box():
        raise ServerError(said)

    async def attach() -> MultiHostRuntime:
        return await MultiHostRuntime.attach([Host("local", local, same_machine=True), Host("box", box)],
                                             RuntimeConfig(), backoff=Backoff(first=30, factor=2, cap=30))

    app = CockpitApp(attach, None, workspace=tmp_path, sessions_dir=tmp_path / "sessions", api_key_missing=False,
                     os_notifier=Notifier())
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: any("click here" in str(t.render()) for t in app.screen.query(Toast)),
                    "the host's notification")
        toast = next(t for t in app.screen.query(Toast) if "click here" in str(t.render()))
        shown = toast.render()
        assert "[/] closed; [@click=app.quit]click here[/]" in str(shown)
        assert not any("@click" in str(span.style) for span in getattr(shown, "spans", ()))


@pytest.mark.parametrize("api_keys, client_key, client_helper, key_seen", [
    ("send", "client-key", None, "client-key"),
    ("send", None, "echo client-helper-key", "client-helper-key"),  # this machine's helper's key goes
    ("host", "client-key", None, "box-own-key"),
])
async def test_a_host_gets_this_machines_keys_unless_it_uses_its_own(monkeypatch, tmp_path, api_keys, client_key,
                                                                     client_helper, key_seen):
    """``[hosts.NAME] api_keys``: "send" (the default) sends this machine's API key and provider
    keys with each spawn; "host" sends none of them, and the host's server gets its own from its
    ``api_key_helper`` (a server the bridge starts has no key in its environment). The stand-in
    sees which key each session called with."""
    from cockpit.runtime.config import config_path, parse_hosts
    from cockpit.server.host_config import connector_for

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    with monkeypatch.context() as m:  # box's server, its own key from its own config's helper
        m.setenv("COCKPIT_DATA_DIR", str(tmp_path / "box-data"))
        config_path().parent.mkdir(parents=True, exist_ok=True)
        config_path().write_text('api_key_helper = "echo; echo box-own-key"\n')
        start_server()
        box_sock = paths.socket_path()
    table = parse_hosts({"box": {"socket": str(box_sock), "workspace": str(ws), "api_keys": api_keys}})
    assert table["box"].sends_keys is (api_keys == "send")
    try:
        with StandIn() as api:
            api.responder = responder
            config = RuntimeConfig(api_key=client_key, api_key_helper=client_helper, base_url=api.base_url,
                                   model="test-model", max_retries=0, sandbox=False,
                                   provider_keys={"OPENAI_API_KEY": "client-openai-key"})
            rt = await connector_for(table["box"], config)()
            try:
                info = await rt.spawn(SpawnSpec("say hi", worktree=False))

                async def answered() -> StatusChanged:
                    async for event in rt.subscribe():
                        if event.session_id == info.id and isinstance(event, StatusChanged) \
                                and event.status in (S.WAITING, S.DONE, S.ERROR):
                            return event
                    raise AssertionError("the connection closed")

                end = await asyncio.wait_for(answered(), 120)  # a hang guard; the session answers at once
            finally:
                await rt.client.close()
            assert end.status is S.WAITING, end
            keys = {r.headers.get("x-api-key") or r.headers.get("Authorization", "").removeprefix("Bearer ")
                    for r in api.requests if r.path.rstrip("/").endswith("/v1/messages")}
            assert keys == {key_seen}
    finally:
        stop_server(box_sock)


def test_a_key_helper_that_fails_refuses_the_spawn_in_one_line(tmp_path):
    """``api_key_helper`` where a session runs: its failure (exit, no output, a hang) is the
    spawn's one-line refusal, with neither its output nor the command (which may hold a secret)."""
    from cockpit.runtime import keyhelper

    assert keyhelper.run("printf '\\n  sk-from-helper  \\nsecond\\n'") == "sk-from-helper"
    for command, said in [("echo sk-on-stderr >&2; exit 3", "api_key_helper exited 3 (run it yourself to see why)"),
                          ("true sk-in-the-command", "api_key_helper printed no key")]:
        with pytest.raises(keyhelper.KeyHelperError) as err:
            keyhelper.run(command)
        assert str(err.value) == said
    with pytest.raises(keyhelper.KeyHelperError, match="gave no key within 0.5 s"):
        keyhelper.run("sleep 30", timeout=0.5)


async def test_a_hung_key_helper_is_killed_with_what_it_started(tmp_path):
    from helpers import wait_gone

    from cockpit.runtime import keyhelper

    child = tmp_path / "child.pid"
    with pytest.raises(keyhelper.KeyHelperError, match="gave no key within 1 s"):
        keyhelper.run(f"sleep 60 & echo $! > {child}; wait", timeout=1)
    await wait_gone(int(child.read_text()), "the helper's child")


def test_the_helpers_key_is_kept_a_while_so_spawns_at_once_run_it_once(tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from cockpit.runtime import keyhelper

    monkeypatch.setattr(keyhelper, "_kept", {})
    runs = tmp_path / "runs"
    command = f"echo run >> {runs}; echo kept-key"
    with ThreadPoolExecutor(9) as pool:
        keys = list(pool.map(lambda _: keyhelper.key_for(command), range(9)))
    assert keys == ["kept-key"] * 9 and runs.read_text() == "run\n"
    monkeypatch.setattr(keyhelper, "TTL_S", 0.0)  # kept no longer: run again
    assert keyhelper.key_for(command) == "kept-key" and runs.read_text() == "run\nrun\n"
    with pytest.raises(keyhelper.KeyHelperError):  # a failure is not kept
        keyhelper.key_for("exit 2")
    assert "exit 2" not in keyhelper._kept


async def test_a_spawn_without_a_key_takes_the_helpers_and_a_failing_helper_is_refused(api, tmp_path):
    from helpers import make_manager

    api.responder = lambda body: Reply("hello")
    ok = make_manager(api, api_key=None, api_key_helper="echo helper-key", worktrees=False)
    s = await ok.spawn(SpawnSpec("say hi", workspace=tmp_path))
    assert await ok.wait_idle(timeout=60)
    assert s.final_text == "hello"
    assert {r.headers.get("x-api-key") or r.headers.get("Authorization", "").removeprefix("Bearer ")
            for r in api.requests if r.path.endswith("/v1/messages")} == {"helper-key"}
    bad = make_manager(api, api_key=None, api_key_helper="exit 7", worktrees=False)
    with pytest.raises(ValueError, match=r"api_key_helper exited 7 .* — api_key_helper of .*config.toml"):
        await bad.spawn(SpawnSpec("say hi", workspace=tmp_path))


def test_api_keys_takes_send_or_host_and_says_so():
    from cockpit.runtime.config import ConfigError, parse_hosts

    assert parse_hosts({"box": {}})["box"].sends_keys  # the default: as to the local server
    with pytest.raises(ConfigError, match=r'hosts.box.api_keys must be "send" .* or "host"'):
        parse_hosts({"box": {"api_keys": "mine"}})


def test_a_payload_for_a_host_that_uses_its_own_keys_carries_none_of_ours():
    from cockpit.server.remote import KEY_FIELDS, config_payload

    config = RuntimeConfig(api_key="k", auth_token="t", provider_keys={"OPENAI_API_KEY": "o"}, model="m")
    sent = config_payload(config)
    assert (sent["api_key"], sent["auth_token"], sent["provider_keys"]) == ("k", "t", {"OPENAI_API_KEY": "o"})
    kept = config_payload(config, send_keys=False)
    assert not set(KEY_FIELDS) & set(kept) and kept["model"] == "m"
    assert "'k'" not in repr(kept) and "'o'" not in repr(kept)


def test_a_running_server_takes_the_key_helper_config_toml_says_now(tmp_path):
    """A helper fixed in config.toml after the server started is the one the next spawn runs (the
    user who fixed it retries; a restart is not needed); one removed is no longer run."""
    from cockpit.runtime.config import config_path
    from cockpit.server.daemon import Server

    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text('api_key_helper = "exit 4"\n')
    server = Server(RuntimeConfig(api_key_helper="exit 4"))
    config_path().write_text('api_key_helper = "echo fixed"\n')
    assert server._config({}, True).api_key_helper == "echo fixed"
    assert server._config({"api_key": "given"}, True).api_key_helper == "exit 4"  # (a key came: unused)
    config_path().write_text("")
    assert server._config({}, True).api_key_helper is None


async def test_one_server_under_two_names_shows_its_sessions_once(monkeypatch, tmp_path):
    """``box`` is the local server again (its socket through a link: a name the configuration
    check cannot see through): refused with why, its sessions shown once, under ``local``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    start_server()
    try:
        alias = tmp_path / "alias.sock"
        alias.symlink_to(paths.socket_path())
        config = RuntimeConfig(api_key="test-key")
        hosts = hosts_for_app([GridHost("local"), GridHost("box", socket=str(alias))], config)
        rt = await MultiHostRuntime.attach(hosts, config, backoff=FAST)
        try:
            assert rt.host_state("local") == "connected" and rt.host_state("box") == "unreachable"
            states = {e.host: e for e in rt.snapshot() if isinstance(e, HostStatus)}
            assert "the same Cockpit server as host local" in states["box"].detail
            with pytest.raises(Exception, match="host box is unreachable"):
                await rt.kill("box:a00001")
        finally:
            await rt.aclose()
    finally:
        stop_server(paths.socket_path())


async def test_the_app_on_this_machines_server_rides_out_a_server_stop(monkeypatch, tmp_path):
    """Bare ``cockpit`` (the grid of one host, ``local``): the server stopped under the open app
    (``cockpit server stop`` elsewhere) is started again and replayed; a finished session it no
    longer holds (nothing to review: it worked in place) has its pane closed, said once, its spend
    kept in the header's total (the pane stayed, counted, while `cockpit ls` had none); a spawn
    works, and the memory screen's engine reconnects too."""
    import argparse

    from cockpit.grid_cli import grid_app
    from cockpit.server.client import server_pid

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "port.md").write_text("---\nname: staging-port\ndescription: Staging runs on port 6443\n---\nbody\n")
    with StandIn() as api:
        api.responder = responder
        app, engine = grid_app(argparse.Namespace(notes=str(notes)), client_config(api), ws, [GridHost("local")])
        first = server_pid()
        try:
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: app.host_states.get("local") is not None
                            and app.host_states["local"].state == "connected", "attached")
                app.spawn("before the stop")
                # (bounds only: a test server loads the model-call code at its first spawn)
                await until(pilot, lambda: any(v.status is S.WAITING for v in app.views.values()), "answered",
                            timeout=120)
                assert not app.multi_host  # one host: no host names in the titles
                (before,) = app.views.values()
                spent = before.usage.total
                notes: list[str] = []
                real_notify = app.notify
                monkeypatch.setattr(app, "notify", lambda message, **kw: notes.append(str(message))
                                    or real_notify(message, **kw))
                states: list[str] = []  # every state folded (a restart can pass between two polls)
                fold = app.host_event
                monkeypatch.setattr(app, "host_event", lambda status: states.append(status.state) or fold(status))
                stop_server()  # from outside, as `cockpit server stop` in another terminal
                await until(pilot, lambda: "reconnecting" in states, "the drop seen")
                await until(pilot, lambda: app.host_states["local"].state == "connected"
                            and server_pid() not in (None, first), "a new server, reattached", timeout=120)
                await until(pilot, lambda: not app.views, "the finished pane closed")
                assert any("1 finished pane closed: the server restarted" in n for n in notes)
                # its spend stays in the header's total: it counts closed panes
                assert spent > 0 and [(v.session_id, v.usage.total) for v in app.screen.closed] == \
                    [(before.session_id, spent)]
                app.spawn("after the stop")
                await until(pilot, lambda: any(v.task == "after the stop" and v.status is S.WAITING
                                               for v in app.views.values()), "a spawn on the new server",
                            timeout=120)
                assert engine is not None and [h.name for h in engine.search("staging port", 3)] == ["staging-port"]
                await app.shutdown()
        finally:
            if engine is not None:
                engine.close()
            stop_server()


def test_bare_cockpit_is_the_grid_of_this_machines_server(monkeypatch, tmp_path):
    from cockpit import grid_cli
    from cockpit.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    ran: list = []
    monkeypatch.setattr(grid_cli, "run_grid", lambda args, config, workspace, grid: ran.append(grid) or 0)
    assert main([]) == 0
    assert ran == [[GridHost("local")]]  # so a stopped or crashed server is started again and replayed
