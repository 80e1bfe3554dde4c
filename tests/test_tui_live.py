"""Pilot tests of the app against the real runtime: ``SessionManager`` + the loopback Messages
API stand-in (real HTTP, real SSE, the real anthropic client)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from seed_data import write_seed
from standin import HTTPError, Reply, StandIn
from tui_fakes import settled, text_of, until

from cockpit import events as ev
from cockpit.events import SessionStatus as S
from cockpit.runtime import RuntimeConfig, SessionManager, read_events
from cockpit.runtime.pricing import ModelPrice, PricingTable
from cockpit.tui import CockpitApp
from cockpit.tui.screens.dialogs import ConfirmDialog, FollowUpDialog
from cockpit.tui.screens.review import ReviewScreen
from cockpit.tui.screens.spawn import SpawnDialog

# USD per million tokens: input, output, cache write, cache read; context window in tokens
PRICING = PricingTable({"test-model": ModelPrice(2.0, 10.0, 2.5, 0.2, 100_000)}, source="test")
SIZE = (160, 48)


@pytest.fixture
def api():
    with StandIn() as server:
        yield server
        server.release()


def manager(api: StandIn, tmp_path: Path, engine=None) -> SessionManager:
    config = RuntimeConfig(
        api_key="test-key", base_url=api.base_url, model="test-model", max_retries=0,
        sessions_dir=tmp_path / "sessions", interactive=True,
    )
    return SessionManager(engine, config, pricing=PRICING)


def record_statuses(app: CockpitApp) -> dict[str, list[S]]:
    """Every status each session reported, in order (wraps the main screen's fold of each event)."""
    seen: dict[str, list[S]] = {}
    main = app.main
    fold = main.fold

    async def wrapped(event, live=True, mount=None):
        status = getattr(event, "status", None)
        if isinstance(status, S):
            seen.setdefault(event.session_id, []).append(status)
        await fold(event, live, mount)

    main.fold = wrapped
    return seen


async def spawn_via_dialog(pilot, task: str) -> None:
    await pilot.press("n")
    await until(pilot, lambda: isinstance(pilot.app.screen, SpawnDialog), "spawn dialog")
    await pilot.press(*task)
    await pilot.press("enter")


def is_subsequence(wanted: list, seen: list) -> bool:
    it = iter(seen)
    return all(any(x == w for x in it) for w in wanted)


async def test_spawn_through_dialog_states_notes_and_cost(api, tmp_path, workspace):
    from memory import MemoryEngine

    notes, _ws = write_seed(tmp_path)
    engine = MemoryEngine(notes, index_path=tmp_path / "index.sqlite")
    usage = {"input": 1000, "output": 500, "cache_write": 2000, "cache_read": 4000}
    api.script(Reply("Staging runs on **port 6443** on callisto; deploy with `make ship-v2`.", usage=usage))
    mgr = manager(api, tmp_path, engine)
    app = CockpitApp(mgr, engine, workspace=workspace, top_k=5)
    seen = record_statuses(app)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.memory.model_state == "ready" and app.memory.notes == 2,
                        "engine warm and indexed", timeout=60)
            task = "what port does staging run on?"
            await pilot.press("n")
            dialog = app.screen
            assert isinstance(dialog, SpawnDialog)
            await pilot.press(*task)
            # the live preview shows the notes this task would get
            await until(pilot, lambda: dialog.preview_for == task, "notes preview")
            assert "staging-stack" in text_of(dialog.query_one("#spawn-preview"))
            await pilot.press("enter")
            await until(pilot, lambda: len(app.views) == 1, "a pane")
            (sid, view), = app.views.items()
            await until(pilot, lambda: view.status is S.WAITING, "waiting for you")
            await settled(pilot, app)  # painted

            assert is_subsequence([S.STARTING, S.PRESEEDING, S.STREAMING, S.WAITING], seen[sid])
            pane = app.panes[sid]
            assert app.screen.selected is pane  # a spawn made from the dialog takes focus
            assert "waiting for you" in text_of(pane.query_one("#pane-status"))
            assert "6443" in view.blocks[0].text
            assert "port 6443" in pane.query_one("#pane-body").plain_text()  # on screen, as Markdown

            # the strip lists exactly what the runtime injected, and it reached the model
            session = mgr.get(sid)
            injected = [n.name for n in session.injected if n.kind == "line"]
            assert "staging-stack" in injected
            strip = text_of(pane.query_one("#pane-strip"))
            for name in injected:
                assert name in strip
            listed = [n for n in session.injected if n.kind == "index"]
            assert not listed or f"index: {len(listed)} listed" in strip
            assert "★staging-stack" in strip.replace(" ", "")
            first_user = json.dumps(api.message_requests[0]["messages"][0])
            assert "6443" in first_user and "staging-stack" in first_user

            # cost = the stand-in's usage × the price table (USD per Mtok)
            expected = (1000 * 2.0 + 500 * 10.0 + 2000 * 2.5 + 4000 * 0.2) / 1e6
            assert view.cost_usd == pytest.approx(expected)
            assert f"${expected:.4f}" in strip
            assert view.usage.cache_read == 4000 and view.usage.cache_write == 2000
            assert f"${expected:.4f}" in text_of(app.screen.query_one("#totals"))
            await app.shutdown()
    finally:
        engine.close()


async def test_kill_asks_first_and_ends_killed(api, tmp_path, workspace):
    api.script(Reply("a long answer " * 20, stall_after=4))
    mgr = manager(api, tmp_path)
    app = CockpitApp(mgr, None, workspace=workspace)
    async with app.run_test(size=SIZE) as pilot:
        await spawn_via_dialog(pilot, "stream for a while")
        await until(pilot, lambda: app.views and next(iter(app.views.values())).status is S.STREAMING, "streaming")
        (sid, view), = app.views.items()
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("n")  # changed my mind
        await settled(pilot, app)
        assert view.status is S.STREAMING and mgr.get(sid).status is S.STREAMING
        await pilot.press("x")
        await pilot.press("y")
        await until(pilot, lambda: view.status is S.KILLED, "killed")
        await until(pilot, lambda: "killed" in text_of(app.panes[sid].query_one("#pane-status")), "the pane says so")
        last = read_events(Path(view.transcript_path))[-1]
        assert isinstance(last, ev.SessionDone) and last.status is S.KILLED
        await app.shutdown()


async def test_an_erroring_session_leaves_the_others_running(api, tmp_path, workspace):
    api.script(Reply("slow and steady " * 10, stall_after=4), HTTPError(400, message="bad request"))
    mgr = manager(api, tmp_path)
    app = CockpitApp(mgr, None, workspace=workspace)
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("first")
        await until(pilot, lambda: len(api.message_requests) == 1 and app.views, "first request")
        first = next(iter(app.views.values()))
        await until(pilot, lambda: first.status is S.STREAMING, "first streaming")
        app.spawn("second")
        await until(pilot, lambda: len(app.views) == 2, "second pane")
        second = [v for v in app.views.values() if v is not first][0]
        await until(pilot, lambda: second.status is S.ERROR, "second errors")
        assert "bad request" in second.error
        await until(pilot, lambda: "error" in text_of(app.panes[second.session_id].query_one("#pane-status")),
                    "the pane says so")
        assert first.status is S.STREAMING  # untouched
        api.release()
        await until(pilot, lambda: first.status is S.WAITING, "first finishes its turn")
        assert "slow and steady" in first.blocks[-1].text
        await app.shutdown()


async def test_follow_up_on_a_waiting_session(api, tmp_path, workspace):
    api.script(Reply("First answer."), Reply("Second answer."))
    mgr = manager(api, tmp_path)
    app = CockpitApp(mgr, None, workspace=workspace)
    async with app.run_test(size=SIZE) as pilot:
        await spawn_via_dialog(pilot, "hello")
        await until(pilot, lambda: app.views and next(iter(app.views.values())).status is S.WAITING, "waiting")
        (sid, view), = app.views.items()
        await pilot.press("enter")
        assert isinstance(app.screen, FollowUpDialog)
        await pilot.press(*"more please", "enter")
        await until(pilot, lambda: len(api.message_requests) == 2, "second request")
        await until(pilot, lambda: view.status is S.WAITING and "Second answer." in view.blocks[-1].text,
                    "second answer")
        last_user = api.message_requests[1]["messages"][-1]
        assert json.dumps(last_user).count("more please") == 1
        assert [b.kind for b in view.blocks] == ["text", "user", "text"]
        await app.shutdown()


async def test_focus_keys_move_between_panes(api, tmp_path, workspace):
    mgr = manager(api, tmp_path)
    app = CockpitApp(mgr, None, workspace=workspace)
    async with app.run_test(size=SIZE) as pilot:
        for n in range(4):
            app.spawn(f"task {n}")
            await until(pilot, lambda n=n: len(app.views) == n + 1, f"pane {n}")
        await until(pilot, lambda: all(v.status is S.WAITING for v in app.views.values()), "all waiting")
        panes = app.screen.query_one("#grid").panes  # 2×2
        focused = lambda: app.screen.selected  # noqa: E731
        await pilot.press("1")
        assert focused() is panes[0]
        await pilot.press("right")
        assert focused() is panes[1]
        await pilot.press("down")
        assert focused() is panes[3]
        await pilot.press("left")
        assert focused() is panes[2]
        await pilot.press("up")
        assert focused() is panes[0]
        await pilot.press("tab", "tab", "tab")
        assert focused() is panes[3]
        await pilot.press("tab")
        assert focused() is panes[0]  # wraps
        await pilot.press("shift+tab")
        assert focused() is panes[3]
        await pilot.press("3")
        assert focused() is panes[2]
        await app.shutdown()


async def test_review_opens_the_focused_session_searches_and_resumes(api, tmp_path, workspace):
    api.script(Reply("Alpha answer."), Reply("Bravo answer with the word zebra."), Reply("Resumed reply."))
    mgr = manager(api, tmp_path)
    app = CockpitApp(mgr, None, workspace=workspace, sessions_dir=tmp_path / "sessions")
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("alpha task")
        await until(pilot, lambda: len(app.views) == 1 and next(iter(app.views.values())).status is S.WAITING, "alpha")
        app.spawn("bravo task")
        await until(pilot, lambda: len(app.views) == 2 and all(v.status is S.WAITING for v in app.views.values()), "bravo")
        alpha, bravo = app.views.values()
        await pilot.press("2")
        await pilot.press("r")
        review = app.screen
        assert isinstance(review, ReviewScreen)
        await until(pilot, lambda: review.shown is not None and review.text, "transcript shown")
        assert review.shown.session_id == bravo.session_id
        assert "bravo task" in review.text and "injected block, exactly as sent" in review.text
        assert "Bravo answer with the word zebra." in review.text
        assert "usage (request 1)" in review.text
        await pilot.press("slash", *"zebra", "enter")
        area = review.query_one("#review-text")
        assert area.selected_text == "zebra"
        await pilot.press("escape", "escape")
        assert app.screen is app.screen_stack[0]

        # a past session resumes into a new pane, with its conversation
        app.screen.focus_pane(app.panes[alpha.session_id])
        await pilot.press("x", "y")
        await until(pilot, lambda: alpha.status is S.KILLED, "alpha killed")
        await pilot.press("r")
        review = app.screen
        await until(pilot, lambda: len(review.infos) == 2, "two transcripts")
        index = [i.session_id for i in review.infos].index(alpha.session_id)
        review.query_one("#review-list").index = index
        await until(pilot, lambda: review.shown.session_id == alpha.session_id, "alpha shown")
        await pilot.press("o")
        await until(pilot, lambda: len(app.views) == 3, "resumed pane")
        resumed = list(app.views.values())[-1]
        await until(pilot, lambda: any("Alpha answer." in b.text for b in resumed.blocks), "history")
        assert resumed.task == "alpha task"
        assert mgr.get(resumed.session_id).resumed_from == str(alpha.transcript_path)
        await app.shutdown()


def _palette_offers(app, name: str) -> bool:
    """The command palette searched for ``name`` (its search worker done) and highlights it."""
    from textual.command import CommandList, CommandPalette
    from textual.widgets import Input

    palette = app.screen
    if not isinstance(palette, CommandPalette) or palette.query_one(Input).value != name:
        return False
    if any(w.node is palette and w.group == palette._GATHER_COMMANDS_GROUP and not w.is_finished
           for w in app.workers):
        return False
    found = palette.query_one(CommandList)
    if found.highlighted is None:
        return False
    prompt = found.get_option_at_index(found.highlighted).prompt
    return getattr(prompt, "plain", str(prompt)) == name


async def test_theme_switch_persists(api, tmp_path, workspace):
    from cockpit.tui.state import load_state

    app = CockpitApp(manager(api, tmp_path), None, workspace=workspace)
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == "cockpit-dark"
        before = app.get_css_variables()["status-streaming"]
        await pilot.press("ctrl+t")
        await pilot.press(*"cockpit-light")
        await until(pilot, lambda: _palette_offers(app, "cockpit-light"), "the theme found and highlighted")
        await pilot.press("enter")
        await until(pilot, lambda: app.theme == "cockpit-light", "theme applied")
        assert app.get_css_variables()["status-streaming"] != before
        assert load_state()["theme"] == "cockpit-light"
        await app.shutdown()
    again = CockpitApp(manager(api, tmp_path), None)
    async with again.run_test(size=SIZE):
        assert again.theme == "cockpit-light"
        await again.shutdown()


async def test_notes_edits_are_reindexed_while_the_app_runs(api, tmp_path, monkeypatch):
    import time

    from memory import MemoryEngine
    from memory import watch as watch_module

    real_watch = watch_module.watchfiles.watch

    def slow_to_arm(*args, **kwargs):  # the OS watch takes a moment to be in place, as under load
        time.sleep(1.0)
        yield from real_watch(*args, **kwargs)

    monkeypatch.setattr(watch_module.watchfiles, "watch", slow_to_arm)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "one.md").write_text("---\nname: one\ndescription: the first note\n---\nbody one\n")
    engine = MemoryEngine(notes, index_path=tmp_path / "index.sqlite")
    app = CockpitApp(manager(api, tmp_path, engine), engine)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.memory.notes == 1, "indexed", 60)
            totals = app.screen.query_one("#totals")
            # written before the watch is in place (a watch slow to arm): caught by the walk the watcher
            # makes once it is (it was missed); the header says "watching notes" only then
            (notes / "two.md").write_text("---\nname: two\ndescription: a second note\n---\nbody two\n")
            await until(pilot, lambda: app.memory.notes == 2, "re-indexed after an edit", 60)
            await until(pilot, lambda: "watching notes" in text_of(totals), "the header says so", 60)
            (notes / "three.md").write_text("---\nname: three\ndescription: a third note\n---\nbody three\n")
            await until(pilot, lambda: app.memory.notes == 3, "re-indexed after an edit", 60)
            await until(pilot, lambda: "3 notes" in text_of(totals) and "+1" in text_of(totals), "the header's count")
            await app.shutdown()
    finally:
        engine.close()
