"""Pilot tests of paging through thirty sessions: each page shows its sessions in its cells, in
number order, with their own titles, states and output; the selection follows the keys across
pages; a newly shown page paints the key's pane first and the rest on the frames after it; a
session that changed while its page was out of sight shows its new state when it is back."""

from __future__ import annotations

from tui_fakes import FakeManager, session_script, text_of, until

from cockpit import events as ev
from cockpit.events import SessionStatus as S
from cockpit.tui import CockpitApp

SIZE = (200, 50)  # 3×3 panes a page: thirty sessions are four pages
STATES = (S.STREAMING, S.WAITING, S.DONE, S.ERROR)


def sid(n: int) -> str:
    return f"p{n:05d}"


def state_of(n: int) -> S:
    return STATES[n % len(STATES)]


async def thirty(pilot, mgr: FakeManager, app: CockpitApp):
    for n in range(1, 31):
        mgr.emit(*session_script(sid(n), f"task number {n}", state_of(n), text=f"answer of session {n}"))
    await until(pilot, lambda: len(app.panes) == 30, "thirty panes")
    grid = app.screen.grid
    await until(pilot, lambda: all(p.view.status is state_of(n) for n, p in enumerate(grid.panes, 1)),
                "every session's final state")
    return grid


def shown(grid) -> list:
    """The panes on screen, in reading order of their cells (top row first, left to right)."""
    panes = [p for p in grid.panes if p.display and p.visible]
    return sorted(panes, key=lambda p: (p.region.y, p.region.x))


def title(pane) -> str:
    """The pane's title as shown (the border title is kept as markup)."""
    from textual.content import Content

    return Content.from_markup(pane.border_title).plain


async def check_page(pilot, app, grid, numbers: range) -> None:
    """The page shows exactly the sessions ``numbers``, each in its own cell, with its own title,
    state and output."""
    panes = shown(grid)
    assert [p.view.session_id for p in panes] == [sid(n) for n in numbers]
    assert len({p.region for p in panes}) == len(panes)  # one cell each
    for n, pane in zip(numbers, panes, strict=True):
        assert title(pane) == f"{n} {sid(n)} · task number {n}"
        assert state_of(n).value in text_of(pane.query_one("#pane-status"))
        body, text = pane.query_one("#pane-body"), f"answer of session {n}"
        await until(pilot, lambda b=body, t=text: t in b.plain_text(), f"session {n}'s output")
    await until(pilot, lambda: f"page {grid.page + 1}/4" in text_of(app.screen.query_one("#totals")),
                "the header's page count")  # (redrawn on the next flush tick)


async def settled(pilot, grid) -> None:
    await until(pilot, lambda: not grid.revealing, "the page painted")
    await pilot.pause()


async def next_page(pilot, grid) -> None:
    """``]``, then the page it shows painted."""
    await pilot.press("right_square_bracket")
    await settled(pilot, grid)


async def test_paging_shows_each_pages_sessions_in_order_and_the_selection_follows():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        grid = await thirty(pilot, mgr, app)
        await check_page(pilot, app, grid, range(1, 10))
        await pilot.press("9")
        await pilot.press("tab")  # past the ninth pane: page 2, its first pane selected
        await settled(pilot, grid)
        assert grid.page == 1 and app.screen.selected is app.panes[sid(10)]
        assert app.screen.selected.selected  # its title highlighted
        await check_page(pilot, app, grid, range(10, 19))
        await pilot.press("shift+tab")  # back: page 1, its last pane
        await settled(pilot, grid)
        assert grid.page == 0 and app.screen.selected is app.panes[sid(9)]
        assert not app.panes[sid(10)].selected  # the highlight left the pane it was on
        await check_page(pilot, app, grid, range(1, 10))
        await pilot.press("shift+tab")  # within the page: pane 8
        assert app.screen.selected is app.panes[sid(8)] and grid.page == 0
        await pilot.press("1", "shift+tab")  # before the first pane: the last page, its last pane
        await settled(pilot, grid)
        assert grid.page == 3 and app.screen.selected is app.panes[sid(30)]
        await check_page(pilot, app, grid, range(28, 31))
        await pilot.press("tab")  # and round to the first page
        await settled(pilot, grid)
        assert grid.page == 0 and app.screen.selected is app.panes[sid(1)]
        await check_page(pilot, app, grid, range(1, 10))


async def test_a_short_last_page_keeps_the_panes_size_and_place():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        grid = await thirty(pilot, mgr, app)
        first = [p.region for p in shown(grid)]
        for _ in range(3):
            await next_page(pilot, grid)
        assert grid.page == 3
        assert [p.region for p in shown(grid)] == first[:3]  # the first row of a full page's cells


async def test_a_new_page_paints_the_keys_pane_first_then_the_others():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        grid = await thirty(pilot, mgr, app)
        screen = app.screen
        target = app.panes[sid(14)]
        screen.focus_pane(target)  # what a key does (e.g. 5 on page 2, or tab across)
        page = grid.page_panes()
        assert grid.page == 1 and screen.selected is target
        assert all(p.display for p in page)  # the page is laid out at once…
        assert [p for p in page if p.visible] == [target]  # …but only the key's pane is painted now
        assert grid.revealing
        await settled(pilot, grid)
        assert all(p.visible for p in page)
        await check_page(pilot, app, grid, range(10, 19))
        # the page before is out of sight, and nothing of it is left hidden for later
        assert not any(p.display for p in grid.panes[:9])
        assert all(p.visible for p in grid.panes)


async def test_a_session_that_changed_out_of_sight_shows_its_new_state_when_its_page_is_back():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        grid = await thirty(pilot, mgr, app)
        await next_page(pilot, grid)
        assert grid.page == 1
        # session 1 (page 1, out of sight) is asked something and answers more
        mgr.emit(ev.StatusChanged(sid(1), S.WAITING), ev.TextDelta(sid(1), " and a later line"))
        await until(pilot, lambda: app.views[sid(1)].status is S.WAITING, "the event folded")
        await pilot.press("left_square_bracket")
        await settled(pilot, grid)
        pane = app.panes[sid(1)]
        assert grid.page == 0 and app.screen.selected is pane
        await until(pilot, lambda: "waiting" in text_of(pane.query_one("#pane-status")), "the new state")
        await until(pilot, lambda: "and a later line" in pane.query_one("#pane-body").plain_text(), "the new text")
        assert title(pane) == f"1 {sid(1)} · task number 1"


async def test_a_pane_names_its_host_in_the_title_when_it_has_one():
    """The grid can show sessions of several servers: a pane given a host says which."""
    from cockpit.tui.model import SessionView
    from cockpit.tui.widgets.pane import SessionPane

    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(*session_script(sid(1), "task number 1", S.WAITING, text="answer"))
        await until(pilot, lambda: app.panes.get(sid(1)) is not None and app.panes[sid(1)].border_title, "a pane")
        view = SessionView("buildbox:r00001", host="buildbox")  # (a grid's id: the host, then its own)
        view.task = "remote task"
        pane = SessionPane(view)
        await app.screen.grid.add_pane(pane)
        pane.sync(force=True)  # (the flush tick syncs the panes of the sessions it folds)
        assert title(pane) == "2 buildbox · r00001 · remote task"
        assert title(app.panes[sid(1)]) == f"1 {sid(1)} · task number 1"  # the one server: no host


async def test_a_page_shows_its_output_even_when_no_resize_reaches_its_bodies(monkeypatch):
    """A pane of a page out of sight is drawn while it has no size (its body keeps the blocks);
    its output appears once the page is shown, even when the body hears of no Resize (a frame
    that lays it out between two of Textual's timers): its first paint makes the lines."""
    from cockpit.tui.widgets.body import PaneBody

    monkeypatch.setattr(PaneBody, "on_resize", lambda self: None)
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        grid = await thirty(pilot, mgr, app)
        await next_page(pilot, grid)
        await check_page(pilot, app, grid, range(10, 19))
