"""The TUI as a client of a real background server: sessions outlive the app."""

import json
import os

import pytest
from helpers import stop_server
from standin import Reply, StandIn

from cockpit.cli import main
from cockpit.events import SessionStatus as S
from cockpit.runtime import RuntimeConfig
from cockpit.server.client import BlockingClient, start_server
from cockpit.server.remote import RemoteRuntime
from cockpit.tui.app import CockpitApp

SIZE = (160, 48)


@pytest.fixture
def server(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    start_server()
    yield
    stop_server()


class Notifier:
    def __init__(self):
        self.sent = []

    def send(self, title, message):
        self.sent.append((title, message))


def attached_app(config: RuntimeConfig, workspace) -> CockpitApp:
    async def attach() -> RemoteRuntime:
        return await RemoteRuntime.attach(config)

    return CockpitApp(attach, None, workspace=workspace, model=config.model, sessions_dir=config.resolved_sessions_dir(),
                api_key_missing=False, os_notifier=Notifier())


async def until(pilot, cond, what, tries=400):
    for _ in range(tries):
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_sessions_outlive_the_app_and_a_new_app_shows_them(server, tmp_path, capsys):
    ws = tmp_path / "ws"
    ws.mkdir()
    with StandIn() as api:
        api.responder = lambda body: Reply("answer to " + body["messages"][0]["content"][-1]["text"])
        config = RuntimeConfig(api_key="test-key", base_url=api.base_url, model="test-model", max_retries=0)
        app = attached_app(config, ws)
        async with app.run_test(size=SIZE) as pilot:
            for task in ("task one", "task two", "task three"):
                app.spawn(task)
            await until(pilot, lambda: len(app.views) == 3 and all(v.status is S.WAITING for v in app.views.values()),
                        "three sessions waiting")
            ids = sorted(app.views)
            await pilot.press("q")  # detach: no question, the sessions stay in the server
        assert app.return_code in (0, None)
        with BlockingClient() as c:
            rows = c.call("list")["sessions"]
        assert sorted(r["id"] for r in rows) == ids and {r["status"] for r in rows} == {"waiting for you"}

        again = attached_app(config, ws)
        async with again.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: len(again.views) == 3, "the three sessions in the new app")
            for sid in ids:
                view = again.views[sid]
                assert view.status is S.WAITING
                text = "".join(b.text for b in view.blocks if b.kind == "text")
                assert text == f"answer to {view.task}"
            # a follow-up from this app reaches the server's session
            again.screen.focus_pane(again.panes[ids[0]])
            await pilot.press("enter", *"more", "enter")
            await until(pilot, lambda: sum(b.kind == "user" for b in again.views[ids[0]].blocks) == 1, "follow-up shown")
            await until(pilot, lambda: again.views[ids[0]].status is S.WAITING
                        and len([b for b in again.views[ids[0]].blocks if b.kind == "text"]) == 2, "answered")
            await pilot.press("Q")  # stop and quit: nothing is working, so no question
        assert main(["ls", "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)["sessions"]
        assert sorted(r["id"] for r in listed) == ids


async def test_a_closed_pane_stays_closed_in_every_app_and_the_next_attach(server, tmp_path, capsys):
    """Closing a finished session's pane hid it in that one app: it came back at every attach
    and stayed in the other apps. The server now drops it (its transcript stays)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with StandIn() as api:
        api.responder = lambda body: Reply("answer to " + body["messages"][0]["content"][-1]["text"])
        config = RuntimeConfig(api_key="test-key", base_url=api.base_url, model="test-model", max_retries=0,
                               interactive=False)
        one, two = attached_app(config, ws), attached_app(config, ws)
        async with one.run_test(size=SIZE) as p1, two.run_test(size=SIZE) as p2:
            for task in ("keep me", "close me"):
                one.spawn(task)
            await until(p1, lambda: len(one.views) == 2 and all(v.status is S.DONE for v in one.views.values()),
                        "two sessions done")
            await until(p2, lambda: len(two.views) == 2 and all(v.status is S.DONE for v in two.views.values()),
                        "the other app has them too")
            closing = next(sid for sid, v in one.views.items() if v.task == "close me")
            one.screen.focus_pane(one.panes[closing])
            await p1.press("backspace")
            await until(p1, lambda: closing not in one.views, "closed here")
            await until(p2, lambda: closing not in two.views and len(two.views) == 1, "closed in the other app")
            transcript = one.closed[-1].transcript_path
        assert main(["ls", "--json"]) == 0
        assert [r["task"] for r in json.loads(capsys.readouterr().out)["sessions"]] == ["keep me"]
        again = attached_app(config, ws)
        async with again.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: len(again.views) == 1, "the kept one")  # the snapshot came whole
            assert [v.task for v in again.views.values()] == ["keep me"]
        assert os.path.exists(transcript)  # the record stays


async def test_closing_a_pane_waiting_for_you_ends_its_session_done_in_the_server(server, tmp_path, capsys):
    """⌫ on a pane waiting for you ended the session `killed` (the only way a client had); through
    the server's `stop` it ends `done`, as its work had, and its pane closes."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with StandIn() as api:
        api.responder = lambda body: Reply("answered")
        config = RuntimeConfig(api_key="test-key", base_url=api.base_url, model="test-model", max_retries=0,
                               interactive=True)
        app = attached_app(config, ws)
        async with app.run_test(size=SIZE) as pilot:
            app.spawn("say something")
            await until(pilot, lambda: len(app.views) == 1 and next(iter(app.views.values())).status is S.WAITING,
                        "waiting for you")
            (sid,) = app.views
            app.screen.focus_pane(app.panes[sid])
            await pilot.press("backspace", "y")
            await until(pilot, lambda: sid not in app.views, "the pane closed")
            assert app.closed[-1].status is S.DONE
    assert main(["ls", "--json"]) == 0
    assert [r["status"] for r in json.loads(capsys.readouterr().out)["sessions"] if r["id"] == sid] in ([], ["done"])
