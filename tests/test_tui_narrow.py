"""The narrow layout (a phone's browser through ``cockpit web``, or a narrow terminal): the list
of sessions with their states, one pane at a time, approve / deny within reach by key and by
button; back to the grid when the terminal widens. Pilot tests over the fake manager."""

from __future__ import annotations

from tui_fakes import FakeManager, session_script, settled, text_of, until

from cockpit import events as ev
from cockpit.events import SessionStatus as S
from cockpit.tui import CockpitApp
from cockpit.tui.screens.dialogs import FollowUpDialog
from cockpit.tui.screens.spawn import SpawnDialog
from cockpit.tui.widgets.narrow import SessionRow

PHONE = (44, 40)


def _three(mgr: FakeManager) -> ev.ApprovalRequested:
    """Three sessions: one waiting for a follow-up, one streaming, one asking to run a command."""
    mgr.emit(*session_script("n00001", "fix the login redirect", S.WAITING, text="Done: the redirect keeps the query."))
    mgr.emit(*session_script("n00002", "add retries to the uploader", S.STREAMING, text="Looking at uploader.py"))
    ask = ev.ApprovalRequested("n00003", "tu_1", "bash", "bash", "make deploy", "make deploy", "Bash(make *)")
    mgr.emit(ev.SessionSpawned("n00003", "deploy staging", "m", "/ws", "/t/n00003.jsonl", True),
             ev.ToolCall("n00003", "tu_1", "bash", {"command": "make deploy"}), ask,
             ev.StatusChanged("n00003", S.NEEDS_APPROVAL, "make deploy"))
    return ask


def _rows(app) -> list[str]:
    return [text_of(r) for r in app.screen.query(SessionRow) if r.display]


def _shown_panes(app) -> list[str]:
    return [sid for sid, p in app.panes.items() if p.display]


async def test_a_phone_width_lists_the_sessions_with_their_states_and_shows_one_pane():
    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=PHONE) as pilot:
        _three(mgr)
        await until(pilot, lambda: len(_rows(app)) == 3 and "needs approval" in _rows(app)[2], "a row per session")
        rows = _rows(app)
        assert "waiting for you" in rows[0] and "fix the login redirect" in rows[0]
        assert "streaming" in rows[1] and "needs approval" in rows[2]
        assert app.screen.has_class("-narrow") and app.screen.query_one("#session-list").display
        assert _shown_panes(app) == ["n00001"]  # the first one selected, alone
        # a tap on a row shows that session's pane, and only it
        row = [r for r in app.screen.query(SessionRow) if "deploy staging" in text_of(r)][0]
        await settled(pilot, app)  # laid out and painted: the tap lands where the row is now
        await pilot.click(row)
        await until(pilot, lambda: _shown_panes(app) == ["n00003"], "the tapped session's pane")
        assert app.screen.selected is app.panes["n00003"]
        await until(pilot, lambda: row.has_class("-selected"), "its row marked")
        # the number keys reach every session, though each is on a page of its own
        await pilot.press("2")  # (a page is revealed over frames: wait for it, do not read mid-way)
        await until(pilot, lambda: _shown_panes(app) == ["n00002"], "the second session's pane")
        assert app.screen.selected is app.panes["n00002"]
        await pilot.press("tab")
        await until(pilot, lambda: _shown_panes(app) == ["n00003"], "the next session's pane")


async def test_approve_and_deny_are_buttons_and_keys_on_a_phone():
    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=PHONE) as pilot:
        ask = _three(mgr)
        await until(pilot, lambda: len(app.panes) == 3, "three panes")
        bar = app.screen.query_one("#narrow-actions")
        await pilot.press("3")
        allow = bar.query_one("#bar-allow")
        await until(pilot, lambda: allow.display, "the allow button for the asking session")
        assert allow.region.height == 1 and allow.region.right <= PHONE[0]  # on screen, within reach
        assert bar.query_one("#bar-deny").display and not bar.query_one("#bar-new").display
        await pilot.click(allow)
        await until(pilot, lambda: mgr.answers, "the answer")
        assert mgr.answers == [("n00003", ask.request_id, True, "once", "")]
        assert app.focused is app.screen.grid  # the button took no focus: keys still act on the pane
        # another ask: denied with its button
        ask2 = ev.ApprovalRequested("n00003", "tu_2", "bash", "bash", "rm -rf build", "rm -rf build", "")
        mgr.emit(ask2, ev.StatusChanged("n00003", S.NEEDS_APPROVAL, "rm -rf build"))
        deny = bar.query_one("#bar-deny")
        await until(pilot, lambda: app.views["n00003"].pending is ask2 and deny.display, "the second ask")
        await pilot.click(deny)
        await until(pilot, lambda: len(mgr.answers) == 2, "the denial")
        assert mgr.answers[1][:3] == ("n00003", "tu_2", False)
        # and by key: a third ask allowed for the session with `a`
        ask3 = ev.ApprovalRequested("n00003", "tu_3", "bash", "bash", "make test", "make test", "Bash(make *)")
        mgr.emit(ask3, ev.StatusChanged("n00003", S.NEEDS_APPROVAL, "make test"))
        await until(pilot, lambda: app.views["n00003"].pending is ask3, "the third ask")
        await pilot.press("a")
        await until(pilot, lambda: len(mgr.answers) == 3, "the key's answer")
        assert mgr.answers[2][2:4] == (True, "session")


async def test_the_buttons_follow_the_selected_sessions_state():
    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=PHONE) as pilot:
        _three(mgr)
        await until(pilot, lambda: len(app.panes) == 3, "three panes")
        bar = app.screen.query_one("#narrow-actions")
        await pilot.press("1")  # waiting for a follow-up: Reply, New, zoom; no approval buttons
        await until(pilot, lambda: bar.query_one("#bar-reply").display, "the reply button")
        assert not bar.query_one("#bar-allow").display and bar.query_one("#bar-new").display
        await pilot.click(bar.query_one("#bar-reply"))
        await until(pilot, lambda: isinstance(app.screen, FollowUpDialog), "the follow-up dialog")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, FollowUpDialog), "back")
        await pilot.click(app.screen.query_one("#bar-new"))
        await until(pilot, lambda: isinstance(app.screen, SpawnDialog), "the spawn dialog")


async def test_the_layout_follows_the_width_back_and_forth():
    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=(160, 40)) as pilot:
        _three(mgr)
        await until(pilot, lambda: len(_shown_panes(app)) == 3, "three panes shown")
        await settled(pilot, app)  # the spawns' events folded and painted: the layout they left is the one to check
        screen = app.screen
        assert not screen.has_class("-narrow") and not screen.query_one("#session-list").display
        assert not screen.query_one("#narrow-actions").display and len(_shown_panes(app)) == 3
        await pilot.resize_terminal(*PHONE)
        await until(pilot, lambda: len(_shown_panes(app)) == 1 and len(_rows(app)) == 3, "the narrow layout")
        assert screen.has_class("-narrow") and screen.grid.page_size == 1
        await pilot.resize_terminal(160, 40)
        await until(pilot, lambda: len(_shown_panes(app)) == 3, "the grid again")
        assert not screen.query_one("#session-list").display


async def test_an_empty_phone_screen_says_how_to_start():
    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=PHONE) as pilot:
        await until(pilot, lambda: app.screen.query_one("#session-list-empty").display, "the hint")
        assert "New" in text_of(app.screen.query_one("#session-list-empty"))
        await pilot.click(app.screen.query_one("#bar-new"))
        await until(pilot, lambda: isinstance(app.screen, SpawnDialog), "the spawn dialog")
