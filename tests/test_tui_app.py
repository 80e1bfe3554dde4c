"""Pilot tests of app behaviour that needs no model traffic, driven by a fake manager emitting
``cockpit.events`` (paging past nine panes, keymap, warm-up, memory screen, coalescing,
scrollback). The runtime-backed pilot tests are in test_tui_live.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from textual.widgets import Input, Markdown, TabbedContent
from tui_fakes import FakeEngine, FakeHit, FakeManager, session_script, settled, text_of, until

from cockpit import events as ev
from cockpit.events import SessionStatus as S
from cockpit.runtime.spawn import SpawnSpec
from cockpit.tui import CockpitApp
from cockpit.tui.screens.memory import MemoryScreen
from cockpit.tui.screens.spawn import SpawnDialog

SIZE = (160, 48)


@pytest.fixture
def renders(monkeypatch) -> list[str]:
    """The kinds of the answer blocks ``PaneBody`` renders, in order (a render is expensive)."""
    from cockpit.tui.widgets.body import PaneBody

    log: list[str] = []
    original = PaneBody._render_block

    def counting(self, block, cached, width):
        log.append(block.kind)
        return original(self, block, cached, width)

    monkeypatch.setattr(PaneBody, "_render_block", counting)
    return log


async def test_more_than_nine_sessions_go_on_pages_and_stay_reachable():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        for n in range(12):
            mgr.emit(*session_script(f"s{n:05d}", f"task {n}", S.WAITING, text=f"answer {n}"))
        await until(pilot, lambda: len(app.panes) == 12, "12 panes")
        grid = app.screen.query_one("#grid")
        await until(pilot, lambda: grid.pages == 2 and "page 1/2" in text_of(app.screen.query_one("#totals")), "pages")
        assert grid.pages == 2
        await until(pilot, lambda: all(p.is_attached for p in grid.panes), "12 panes mounted")
        assert [p.display for p in grid.panes] == [True] * 9 + [False] * 3
        assert "page 1/2" in text_of(app.screen.query_one("#totals"))
        await pilot.press("9")
        assert app.screen.selected is grid.panes[8]
        await pilot.press("tab")  # past the ninth pane: the next page
        assert app.screen.selected is grid.panes[9] and grid.page == 1
        assert [p.display for p in grid.panes] == [False] * 9 + [True] * 3
        await until(pilot, lambda: "page 2/2" in text_of(app.screen.query_one("#totals")), "page 2/2")
        await pilot.press("3")
        assert app.screen.selected is grid.panes[11]
        await pilot.press("left_square_bracket")
        assert grid.page == 0 and app.screen.selected is grid.panes[0]
        await pilot.press("up")  # already top row of page 1: nothing above
        assert app.screen.selected is grid.panes[0]
        await pilot.press("7", "down")  # bottom row of page 1 → page 2, same column
        assert app.screen.selected is grid.panes[9]


async def test_empty_grid_says_how_to_start_and_warns_without_a_key():
    mgr = FakeManager()
    app = CockpitApp(mgr, FakeEngine(), api_key_missing=True)
    async with app.run_test(size=SIZE) as pilot:
        hint = app.screen.query_one("#empty-hint")
        await until(pilot, lambda: hint.display and "Press n to spawn" in text_of(hint), "the hint")
        assert "Press n to spawn" in text_of(hint) and "ANTHROPIC_API_KEY is not set" in text_of(hint)
        assert "--base-url" in text_of(hint)  # how to try it without a key
        mgr.emit(*session_script("s00001", "task", S.WAITING, text="answer"))
        await until(pilot, lambda: len(app.panes) == 1, "a pane")
        await until(pilot, lambda: not hint.display, "the hint hidden")


async def test_empty_grid_has_no_key_warning_when_a_key_is_set():
    app = CockpitApp(FakeManager(), FakeEngine())
    async with app.run_test(size=SIZE) as pilot:
        hint = app.screen.query_one("#empty-hint")
        await until(pilot, lambda: "Press n to spawn" in text_of(hint), "the hint")
        assert "ANTHROPIC_API_KEY" not in text_of(hint)


async def test_keys_are_remappable_from_the_state_file():
    state = Path(os.environ["COCKPIT_DATA_DIR"]) / "state.json"
    state.write_text(json.dumps({"keymap": {"spawn": "s", "review": "v"}}))
    app = CockpitApp(FakeManager(), FakeEngine())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        assert not isinstance(app.screen, SpawnDialog)
        await pilot.press("s")
        assert isinstance(app.screen, SpawnDialog)
        await pilot.press("escape")
        keys = set(app.screen.active_bindings)
        assert "s" in keys and "v" in keys and "n" not in keys


# moving the selection by arrows / digits and scrolling a pane are not commands one looks up
NOT_IN_PALETTE = {"pane.left", "pane.right", "pane.up", "pane.down", "pane.scroll_up", "pane.scroll_down",
                  "pane.top", "pane.bottom"} | {f"pane.{n}" for n in range(2, 10)}


async def test_every_key_is_in_the_command_palette():
    """Every binding of the app and the main screen (but moving and scrolling) has a palette
    command that names its key: a new key without a command fails here."""
    from cockpit.tui.screens.main import MainScreen

    app = CockpitApp(FakeManager(), FakeEngine())
    async with app.run_test(size=SIZE):
        commands = list(app.get_system_commands(app.screen))
        helps = " ".join(c.help for c in commands)
        titles = {c.title for c in commands}
        missing = []
        for binding in [*CockpitApp.BINDINGS, *MainScreen.BINDINGS]:
            if binding.id in NOT_IN_PALETTE:
                continue
            shown = binding.key_display or app.get_key_display(binding)
            if binding.id in ("quit", "quit.ctrl"):
                ok = "Quit" in titles  # in-process: the Quit command (q, ctrl+q)
            elif binding.id in ("detach", "detach.ctrl"):
                ok = True  # only when attached: test_q_is_detach_when_attached_and_quit_in_process
            elif binding.id == "pane.1":
                ok = True  # "1-9": jump keys, listed as the keys they are in the footer
            else:
                ok = f"({shown})" in helps or f"({binding.key})" in helps
            if not ok:
                missing.append(f"{binding.id} ({shown})")
        assert not missing, f"bindings without a palette command: {missing}"


async def test_model_warm_up_is_visible_and_nothing_freezes():
    mgr = FakeManager()
    engine = FakeEngine(ready=False)
    app = CockpitApp(mgr, engine)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "warming model" in text_of(app.screen.query_one("#totals")), "warming shown")
        mgr.emit(ev.SessionSpawned("w00001", "early task", "m", "/ws", "/t", True),
                 ev.StatusChanged("w00001", S.PRESEEDING, "waiting for model warm-up"))
        mgr.emit(*session_script("w00002", "no preseed", S.WAITING, text="fine"))
        await until(pilot, lambda: len(app.panes) == 2, "panes")
        await until(pilot, lambda: "waiting for model warm-up" in text_of(app.panes["w00001"].query_one("#pane-status")),
                    "the early session's state")
        await pilot.press("2")  # the app answers keys meanwhile
        assert app.screen.selected is app.panes["w00002"]
        await pilot.press("n", *"deploy")
        dialog = app.screen
        await until(pilot, lambda: "model warming" in text_of(dialog.query_one("#spawn-preview")), "warming note")
        engine.ready = True
        await until(pilot, lambda: "ready" == app.memory.model_state, "warm", timeout=5)
        await until(pilot, lambda: "notes" in text_of(app.screen_stack[0].query_one("#totals")), "header")


async def test_memory_screen_search_open_and_warnings(tmp_path):
    note = tmp_path / "deploy.md"
    note.write_text("---\nname: deploy-cmd\n---\nDeploy with `make ship-v2`.\x1b]0;pwned\x07\n")
    engine = FakeEngine(hits=[FakeHit("deploy\x1b[31m-cmd", "how to\x1b[2J deploy", "", True, 0.77, note),
                              FakeHit("staging-env", "staging port", "", False, 0.5, note)])
    engine.lint_issues = [type("I", (), {"kind": "no-description", "path": "x.md", "message": "add\x1b[5m one", "other": None})()]
    app = CockpitApp(FakeManager(), engine)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "⚠ 1 warning (w)" in text_of(app.screen.query_one("#totals")), "warning count")
        await pilot.press("m")
        screen = app.screen
        assert isinstance(screen, MemoryScreen)
        await pilot.press(*"deploy")
        await until(pilot, lambda: len(screen.hits) == 1, "hits")
        hits = screen.query_one("#memory-hits")
        await until(pilot, lambda: hits.children and hits.children[0].query("Label"), "the hit's row composed")
        label = text_of(screen.query_one("#memory-hits").children[0].query_one("Label"))
        assert "★" in label and "deploy-cmd" in label and "0.77" in label
        await pilot.press("enter", "enter")  # to the list, open the note
        await until(pilot, lambda: getattr(screen, "opened", None) == note, "note open")
        assert "make ship-v2" in screen.query_one("#memory-note", Markdown).source
        # the frontmatter shows as a YAML block, not as a rule and a heading
        from textual.widgets.markdown import MarkdownBlock, MarkdownFence
        shown = screen.query_one("#memory-note", Markdown)
        await until(pilot, lambda: shown.query(MarkdownFence), "the frontmatter block")
        assert "name: deploy-cmd" in shown.query_one(MarkdownFence).code
        assert not [b for b in shown.query(MarkdownBlock) if type(b).__name__ == "MarkdownHorizontalRule"]
        assert "\x1b" not in screen.query_one("#memory-note", Markdown).source + label  # shown, not obeyed
        tabs = screen.query_one(TabbedContent)
        await pilot.press("ctrl+w")  # from the list
        await until(pilot, lambda: screen.lint_issues is not None, "lint")
        await pilot.pause()
        assert tabs.active == "warnings"  # and it stays (focus left the search tab)
        warnings = text_of(screen.query_one("#memory-warnings"))
        assert "no-description" in warnings and "date coerced" in warnings and "add one" in warnings
        # the number the header gave heads the tab, lint's advice (not counted there) follows
        assert warnings.index("Index warnings (1;") < warnings.index("date coerced") < warnings.index("Lint (1;")
        await pilot.press("ctrl+s", *"dep")
        assert tabs.active == "search" and screen.query_one("#memory-query", Input).value.endswith("dep")
        await pilot.press("ctrl+w")  # from the search box: the tab, not the box's delete-a-word
        await pilot.pause()
        assert tabs.active == "warnings" and screen.query_one("#memory-query", Input).value.endswith("dep")
        await pilot.press("escape")
        await pilot.press("w")
        assert isinstance(app.screen, MemoryScreen)


async def test_token_deltas_are_coalesced_into_few_renders(renders):
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(ev.SessionSpawned("c00001", "t", "m", "/ws", "/t", True), ev.StatusChanged("c00001", S.STREAMING),
                 ev.TextDelta("c00001", "start "))
        await until(pilot, lambda: "c00001" in app.panes and renders, "first render")
        renders.clear()
        mgr.emit(*(ev.TextDelta("c00001", f"w{i} ") for i in range(500)))
        body = app.panes["c00001"].query_one("#pane-body")
        await until(pilot, lambda: "w499" in body.plain_text(), "all text on screen")
        assert "start w0 w1 w2" in body.plain_text()
        assert 1 <= len(renders) <= 5  # 500 deltas, a handful of renders


async def test_scrollback_holds_while_text_streams_in():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=(120, 30)) as pilot:
        mgr.emit(ev.SessionSpawned("b00001", "t", "m", "/ws", "/t", True), ev.StatusChanged("b00001", S.STREAMING))
        mgr.emit(*(ev.TextDelta("b00001", f"line {i}\n\n") for i in range(80)))
        await until(pilot, lambda: "b00001" in app.panes, "pane")
        pane = app.panes["b00001"]
        body = pane.query_one("#pane-body")
        await until(pilot, lambda: body.max_scroll_y > 0 and body.scroll_y == body.max_scroll_y, "pinned at end")
        app.screen.focus_pane(pane)
        await pilot.press("pageup", "pageup")
        await until(pilot, lambda: body.scroll_y < body.max_scroll_y, "scrolled back")
        await pilot.wait_for_scheduled_animations()
        held = body.scroll_y
        assert held < body.max_scroll_y
        repaints = []
        refresh = body.refresh
        body.refresh = lambda *a, **k: (repaints.append(a), refresh(*a, **k))[1]
        mgr.emit(*(ev.TextDelta("b00001", f"more {i}\n\n") for i in range(40)))
        await until(pilot, lambda: "more 39" in body.plain_text(), "more text")
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        assert body.scroll_y == held  # the reader's place is kept
        assert repaints == []  # and what they look at did not change: no repaint
        del body.refresh
        await pilot.press("end")
        mgr.emit(ev.TextDelta("b00001", "tail\n"))
        await until(pilot, lambda: "tail" in body.plain_text() and body.scroll_y == body.max_scroll_y, "pinned again")


async def test_a_pane_at_its_end_stays_there_when_the_terminal_shrinks_and_grows():
    """A resize (or a spawn that reflows the grid) must not leave a following pane behind: the
    last lines stay in view and text that arrives afterwards is followed. A reader scrolled up
    keeps their place."""
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=(160, 45)) as pilot:
        for sid in ("r00001", "r00002"):
            mgr.emit(ev.SessionSpawned(sid, "t", "m", "/ws", "/t", True), ev.StatusChanged(sid, S.STREAMING))
            mgr.emit(*(ev.TextDelta(sid, f"line {i} of a fairly long answer that wraps when narrow\n\n")
                       for i in range(60)))
        await until(pilot, lambda: "r00002" in app.panes, "panes")
        follow = app.panes["r00001"].query_one("#pane-body")
        reader = app.panes["r00002"].query_one("#pane-body")
        for body in (follow, reader):
            await until(pilot, lambda b=body: b.max_scroll_y > 0 and b.scroll_y == b.max_scroll_y, "at the end")
        app.screen.focus_pane(app.panes["r00002"])
        await pilot.press("pageup", "pageup")
        await until(pilot, lambda: reader.scroll_y < reader.max_scroll_y, "scrolled back")
        await pilot.wait_for_scheduled_animations()
        for size in ((100, 30), (80, 24), (160, 45)):
            await pilot.resize_terminal(*size)
            await until(pilot, lambda: follow.max_scroll_y > 0 and follow.scroll_y == follow.max_scroll_y,
                        f"still at the end at {size}")
            mgr.emit(ev.TextDelta("r00001", f"after {size[0]}\n\n"))
            await until(pilot, lambda s=size: f"after {s[0]}" in follow.plain_text()
                        and follow.scroll_y == follow.max_scroll_y, f"new text followed at {size}")
        assert reader.scroll_y < reader.max_scroll_y  # the reader's place is not given up to a resize


async def test_status_colours_follow_the_theme():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(*session_script("e00001", "t", S.ERROR, text="x"), *session_script("d00001", "u", S.DONE, text="y"))
        # both panes, composed (under load a pane is listed a moment before its children are mounted)
        await until(pilot, lambda: len(app.panes) == 2 and all(len(p.query("#pane-status")) for p in app.panes.values()),
                    "panes")
        err = app.panes["e00001"].query_one("#pane-status")
        done = app.panes["d00001"].query_one("#pane-status")
        await until(pilot, lambda: err.has_class("status-error") and done.has_class("status-done"), "final states")
        assert err.has_class("status-error") and done.has_class("status-done")
        assert err.styles.color.hex.lower() == app.get_css_variables()["status-error"].lower()
        assert err.styles.color != done.styles.color


async def test_selecting_a_pane_repaints_its_title_only_and_follows_the_theme(renders):
    from textual.color import Color

    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(*session_script("f00001", "t", S.WAITING, text="first answer"),
                 *session_script("f00002", "u", S.WAITING, text="second answer"))
        await until(pilot, lambda: len(app.panes) == 2, "panes")
        first, second = app.panes["f00001"], app.panes["f00002"]
        await until(pilot, lambda: all(t in p.query_one("#pane-body").plain_text()
                                       for p, t in ((first, "first answer"), (second, "second answer"))), "answers")
        await settled(pilot, app)
        assert app.screen.selected is first
        renders.clear()
        await pilot.press("tab")
        await until(pilot, lambda: second.has_class("-selected"), "the second pane selected")
        assert app.screen.selected is second
        assert not first.has_class("-selected")
        assert renders == []  # a selection change re-renders no answer text
        accent = Color.parse(app.get_css_variables()["accent"])
        assert second.styles.border_title_background == accent
        assert first.styles.border_title_background != accent
        app.theme = "cockpit-light"
        light_accent = Color.parse(app.get_css_variables()["accent"])
        await until(pilot, lambda: second.styles.border_title_background == light_accent, "the light accent")
        assert "second answer" in second.query_one("#pane-body").plain_text()


async def test_streaming_repaints_are_spread_over_flush_ticks(monkeypatch):
    from cockpit.tui.screens import panes as panes_module
    from cockpit.tui.widgets.pane import SessionPane

    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        for n in range(9):
            mgr.emit(ev.SessionSpawned(f"g{n:05d}", "t", "m", "/ws", "/t", True),
                     ev.StatusChanged(f"g{n:05d}", S.STREAMING))
        await until(pilot, lambda: len(app.panes) == 9, "panes")
        await until(pilot, lambda: not app.main.repaint.dirty, "the first paints")
        synced = []
        original = SessionPane.sync
        monkeypatch.setattr(SessionPane, "sync",
                            lambda self, force=False: (synced.append(self), original(self, force)))
        per_tick = -(-panes_module.PANE_BUDGET_HZ // panes_module.FLUSH_HZ)
        main = app.main  # the screen that owns the panes
        main.repaint.dirty = set(app.panes)  # nine panes with new answer text only
        main.repaint.urgent = set()
        main.repaint.last = {}
        main.flush()
        assert len(synced) == per_tick < 9  # not all nine bodies in one tick (one frame)
        main.flush()
        assert len(synced) == 2 * per_tick and len(set(synced)) == 2 * per_tick  # oldest first
        main.repaint.mark("g00000")  # a status change is never held back (synced just now)
        synced.clear()
        main.flush()
        ids = [p.view.session_id for p in synced]
        assert "g00000" in ids and len(ids) <= per_tick + 1


async def test_every_available_theme_applies_including_textual_builtins():
    # The picker (ctrl+t) lists Textual's built-in themes too; none define our status-*
    # variables, and picking one must not break the stylesheet.
    app = CockpitApp(FakeManager(), FakeEngine())
    async with app.run_test(size=SIZE) as pilot:
        mgr = app.manager
        mgr.emit(*session_script("s00001", "task", S.ERROR, text="boom"))
        await until(pilot, lambda: len(app.panes) == 1, "a pane")
        names = sorted(app.available_themes)
        assert "textual-dark" in names and "cockpit-dark" in names
        for name in names:
            app.theme = name
            await pilot.pause()
            assert app.is_running, name
            error = app.get_css_variables()["status-error"]
            assert not error.startswith("$"), (name, error)
        assert app.return_code in (None, 0)


def _transcript(folder: Path, name: str, sid: str, task: str, started: str, answer: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    records = [
        {"type": "header", "ts": started, "session_id": sid, "task": task, "model": "m", "workspace": "/ws",
         "injected": [], "preseed_text": "", "preseed_tokens": 0, "started_at": started},
        {"type": "message", "ts": started, "role": "user", "content": [{"type": "text", "text": task}]},
        {"type": "message", "ts": started, "role": "assistant", "content": [{"type": "text", "text": answer}]},
        {"type": "end", "ts": started, "status": "done", "cost_usd": 0.001, "final_text": answer},
    ]
    path = folder / name
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


async def test_review_search_covers_every_transcript_lists_dates_and_survives_a_shared_id(tmp_path):
    from cockpit.tui.screens.review import ReviewScreen

    sessions = tmp_path / "sessions"
    _transcript(sessions, "20260102-000000-dup.jsonl", "dup", "first task", "2026-01-02T10:30:00.000+00:00",
                "the zebra is here")
    _transcript(sessions, "20260103-000000-dup.jsonl", "dup", "second task", "2026-01-03T11:45:00.000+00:00",
                "nothing to see")
    _transcript(sessions, "20260104-000000-other.jsonl", "other", "third task", "2026-01-04T09:00:00.000+00:00",
                "another zebra, and a zebra")
    utc = lambda *a: time.gmtime(a[0] if a else 0)  # noqa: E731
    app = CockpitApp(FakeManager(), None, sessions_dir=sessions, clock=utc)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        await until(pilot, lambda: len(screen.infos) == 3 and screen.text, "three transcripts, two with one id")
        labels = [text_of(item.query_one("Label")) for item in screen.query_one("#review-list").children]
        assert "2026-01-04 09:00" in labels[0] and "2026-01-02 10:30" in labels[2]
        assert all(item.id is None for item in screen.query_one("#review-list").children)
        await pilot.press("slash", *"zebra", "enter")
        await until(pilot, lambda: len(screen.infos) == 2, "only the transcripts that match")
        assert {i.task for i in screen.infos} == {"first task", "third task"}
        labels = [text_of(item.query_one("Label")) for item in screen.query_one("#review-list").children]
        assert "2 matches" in labels[0] and "1 match" in labels[1]
        await until(pilot, lambda: screen.query_one("#review-text").selected_text.lower() == "zebra", "first match")
        first = screen.shown
        await pilot.press("enter", "enter")  # the second match of "third task", then on to "first task"
        await until(pilot, lambda: screen.shown is not first, "the next transcript")
        await until(pilot, lambda: screen.query_one("#review-text").selected_text.lower() == "zebra", "its match")
        await pilot.press("escape")  # leaves the search: every transcript again
        await until(pilot, lambda: len(screen.infos) == 3, "all listed again")


async def test_review_shows_damaged_transcripts_with_a_warning_and_never_ends_the_app(tmp_path):
    from cockpit.tui.screens.review import ReviewScreen

    sessions = tmp_path / "sessions"
    garbled = _transcript(sessions, "20260102-000000-bad.jsonl", "bad", "garbled", "2026-01-02T10:30:00.000+00:00",
                          "kept answer")
    garbled.write_bytes(garbled.read_bytes() + b"\xff\xfe\n[1]\n")
    odd = _transcript(sessions, "20260103-000000-odd.jsonl", "odd", "odd", "2026-01-03T10:30:00.000+00:00", "x")
    header = json.loads(odd.read_text().splitlines()[0])
    odd.write_text(json.dumps({**header, "injected": "not a list of notes"}) + "\n")
    app = CockpitApp(FakeManager(), None, sessions_dir=sessions, clock=lambda *a: time.gmtime(0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        await until(pilot, lambda: len(screen.infos) == 2 and screen.text, "both listed")
        await until(pilot, lambda: "the header's injected is not a list" in screen.query_one("#review-text").text,
                    "the odd one said")
        await pilot.press("down")
        await until(pilot, lambda: "kept answer" in screen.query_one("#review-text").text, "the garbled one")
        text = screen.query_one("#review-text").text
        assert "line 5 skipped: not UTF-8" in text and "line 6 skipped: not a JSON object" in text
        assert app.is_running


async def test_the_palette_lists_each_command_once_and_screenshots_say_where(tmp_path, monkeypatch):
    import platformdirs

    monkeypatch.setattr(platformdirs, "user_downloads_path", lambda: tmp_path / "no-such-Downloads")
    app = CockpitApp(FakeManager(), FakeEngine())
    async with app.run_test(size=SIZE) as pilot:
        commands = list(app.get_system_commands(app.screen))
        titles = [c.title for c in commands]
        assert len(titles) == len(set(titles)), titles
        assert "Pick theme" in titles and "Theme" not in titles
        assert titles.count("Screenshot") == 1 and "Maximize" not in titles and "Zoom pane" in titles
        for title in ["Approve…", "Allow once", "Allow for session", "Diff", "Continue fresh", "Close pane"]:
            assert title in titles
        said: list[str] = []
        notify = app.notify
        app.notify = lambda message, **kw: (said.append(message), notify(message, **kw))[1]
        next(c for c in commands if c.title == "Screenshot").callback()
        folder = Path(os.environ["COCKPIT_DATA_DIR"]) / "screenshots"
        await until(pilot, lambda: said and list(folder.glob("*.svg")), "the screenshot")
        saved = list(folder.glob("*.svg"))
        assert len(saved) == 1 and any(str(saved[0]) in m for m in said)


async def test_a_small_terminal_shows_output_pages_fewer_panes_and_zooms():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=(60, 20)) as pilot:
        for n in range(4):
            mgr.emit(*session_script(f"m{n:05d}", f"task {n}", S.WAITING,
                                     text="\n\n".join(f"line {i} of answer {n}" for i in range(6))))
        await until(pilot, lambda: len(app.panes) == 4, "4 panes")
        grid = app.screen.query_one("#grid")
        pane = app.panes["m00000"]
        body = pane.query_one("#pane-body")
        await until(pilot, lambda: grid.pages == 2 and "tok" in text_of(pane.query_one("#pane-status"))
                    and "line 0 of answer 0" in body.plain_text(), "the first page")
        assert grid.page_size == 2 and grid.pages == 2  # two panes a page at 60×20
        assert pane.narrow and not pane.query_one("#pane-strip").display  # the answer keeps the width
        assert "tok" in text_of(pane.query_one("#pane-status"))  # tokens and cost on the status line
        body = pane.query_one("#pane-body")
        assert body.scrollable_content_region.height >= 4 and "line 0 of answer 0" in body.plain_text()
        await pilot.press("2")
        assert app.screen.selected is app.panes["m00001"]
        await pilot.press("z")
        assert app.screen.maximized is app.panes["m00001"]
        await until(pilot, lambda: app.panes["m00001"].size.height >= 16, "the zoomed pane")
        assert app.panes["m00001"].size.height >= 16  # the whole screen but header and footer
        await pilot.press("tab")  # the zoom follows the selection
        assert app.screen.maximized is app.panes["m00002"] and grid.page == 1
        assert app.panes["m00002"].number == 3  # numbers continue across pages
        await pilot.press("z")
        assert app.screen.maximized is None


async def test_pane_numbers_continue_across_pages():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        for n in range(11):
            mgr.emit(*session_script(f"p{n:05d}", f"task {n}", S.WAITING, text="ok"))
        await until(pilot, lambda: len(app.panes) == 11, "11 panes")
        grid = app.screen.query_one("#grid")
        await until(pilot, lambda: [p.number for p in grid.panes] == list(range(1, 12)), "numbered panes")
        await pilot.press("right_square_bracket", "2")
        assert app.screen.selected is grid.panes[10]
        assert str(grid.panes[10].border_title).startswith("[b]11 ")


async def test_pane_borders_are_visible_in_every_cockpit_theme():
    from textual.color import Color

    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(*session_script("b00001", "t", S.DONE, text="x"), *session_script("b00002", "u", S.DONE, text="y"))
        await until(pilot, lambda: len(app.panes) == 2, "panes")
        for theme in ("cockpit-dark", "cockpit-light", "cockpit-amber"):
            app.theme = theme
            await pilot.pause()
            pane = app.panes["b00002"]  # not selected, not a coloured state
            border = pane.styles.border_top[1]
            background = Color.parse(app.get_css_variables()["background"])
            # WCAG contrast of the frame against the screen: at least 1.8:1 (the old light frame was 1.05:1)
            l1, l2 = _luminance(border), _luminance(background)
            ratio = (max(l1, l2) + 0.05) / (min(l1, l2) + 0.05)
            assert ratio >= 1.8, (theme, border.hex, background.hex, ratio)


def _luminance(c) -> float:
    def ch(v: int) -> float:
        v = v / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b)


async def test_negative_scores_are_never_shown():
    from cockpit.events import InjectedNote

    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        notes = (InjectedNote("far-away", -0.12, False), InjectedNote("close", 0.7, False))
        mgr.emit(*session_script("n00001", "t", S.WAITING, text="x", notes=notes))
        await until(pilot, lambda: len(app.panes) == 1, "pane")
        await until(pilot, lambda: "c.70" in text_of(app.panes["n00001"].query_one("#pane-strip")), "the notes strip")
        strip = text_of(app.panes["n00001"].query_one("#pane-strip"))
        assert "-0.12" not in strip and "-.12" not in strip and "c.00" in strip and "c.70" in strip


async def test_a_notes_figure_says_what_it_is_and_the_strip_names_the_index():
    """The judge's probability (p), a priority note given by rule, or a cosine (cos): labelled, the
    same in the spawn preview, the pane's strip and the review; the strip names a few index notes."""
    from cockpit.events import InjectedNote
    from cockpit.tui import format as fmt

    assert (fmt.note_figure(0.87, 0.5), fmt.note_figure(None, 0.73), fmt.note_figure(None, 0.4, True)) == \
        ("p 0.87", "cos 0.73", "rule")
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=(160, 50)) as pilot:
        notes = (InjectedNote("discount-order", 0.73, False, probability=0.87),
                 InjectedNote("money-decimal", 0.5, True),
                 *(InjectedNote(f"idx-{i}", 0.3, False, kind="index", probability=0.1) for i in range(6)))
        mgr.emit(*session_script("n00001", "t", S.WAITING, text="x", notes=notes))
        await until(pilot, lambda: len(app.panes) == 1, "pane")
        await until(pilot, lambda: "p.87" in text_of(app.panes["n00001"].query_one("#pane-strip")), "the strip")
        strip = text_of(app.panes["n00001"].query_one("#pane-strip"))
        assert "rule" in strip and "index: 6 listed" in strip
        assert all(f"idx-{i}" in strip for i in range(4)) and "idx-4" not in strip and "+2 more (r)" in strip


async def test_a_missing_notes_folder_is_said_in_the_header_and_the_spawn_dialog(tmp_path):
    from types import SimpleNamespace

    missing = tmp_path / "no-notes"

    class NoFolderEngine(FakeEngine):
        def status(self):
            return SimpleNamespace(model_state="ready", notes=0, last_sync=None, warnings=[], notes_dir=missing)

        def watch(self, stop, on_sync=None):  # like the real watcher: waits for the folder
            stop.wait()

    app = CockpitApp(FakeManager(), NoFolderEngine())
    async with app.run_test(size=(200, 40)) as pilot:
        totals = app.screen.query_one("#totals")
        await until(pilot, lambda: f"no notes folder at {missing}" in text_of(totals), "the header says it")
        assert "indexing" not in text_of(totals)
        await pilot.press("n")
        assert f"No notes folder at {missing}" in text_of(app.screen.query_one("#spawn-notes-missing"))


async def test_without_an_engine_a_missing_notes_folder_is_still_said(tmp_path):
    missing = tmp_path / "no-notes"  # the app attached to a server gets no engine for a missing folder
    app = CockpitApp(FakeManager(), None, notes_missing=str(missing))
    async with app.run_test(size=(200, 40)) as pilot:
        totals = app.screen.query_one("#totals")
        await until(pilot, lambda: f"no notes folder at {missing}" in text_of(totals), "the header says it")
        assert "memory off" in text_of(totals)
        await pilot.press("n")
        assert f"No notes folder at {missing}" in text_of(app.screen.query_one("#spawn-notes-missing"))


async def test_session_ids_are_never_widget_ids():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        odd = "1 odd/id.with#chars"  # not a valid CSS identifier
        mgr.emit(*session_script(odd, "t", S.WAITING, text="still shown"))
        mgr.emit(*session_script("123", "u", S.WAITING, text="digits first"))
        await until(pilot, lambda: len(app.panes) == 2, "both panes")
        await until(pilot, lambda: "still shown" in app.panes[odd].query_one("#pane-body").plain_text(), "the answer")
        assert app.panes[odd].id is None
        assert "still shown" in app.panes[odd].query_one("#pane-body").plain_text()


async def test_spawn_dialog_passes_the_backend_and_options_the_runtime_offers():
    from cockpit.tui.screens.spawn import SpawnDialog

    mgr = FakeManager()
    mgr.backends = ("cockpit", "claude-code")
    app = CockpitApp(mgr, None, model="m1", permission_mode="acceptEdits", worktree=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        dialog = app.screen
        assert isinstance(dialog, SpawnDialog)
        assert dialog.query_one("#spawn-mode").value == "acceptEdits"
        dialog.query_one("#spawn-backend").value = "claude-code"
        dialog.query_one("#spawn-model").value = "m2"
        await pilot.press(*"task one", "enter")
        await until(pilot, lambda: mgr.spawned, "spawn called")
        options = mgr.spawn_options[0]
        assert options["backend"] == "claude-code" and options["model"] == "m2"
        assert options["permission_mode"] == "acceptEdits" and options["worktree"] is True
        # the mode chosen is the next spawn's default (it went back to the configured one each time)
        await until(pilot, lambda: not isinstance(app.screen, SpawnDialog), "the dialog closed")
        await pilot.press("n")
        dialog = app.screen
        assert isinstance(dialog, SpawnDialog)
        dialog.query_one("#spawn-mode").value = "plan"
        await pilot.press(*"task two", "enter")
        await until(pilot, lambda: len(mgr.spawned) == 2, "the second spawn")
        await until(pilot, lambda: not isinstance(app.screen, SpawnDialog), "the dialog closed")
        await pilot.press("n")
        assert app.screen.query_one("#spawn-mode").value == "plan"


async def test_a_value_the_spawn_spec_refuses_is_said_in_the_dialog_which_stays_open():
    """The dialog builds a SpawnSpec: its one-line refusal shows there, the task typed stays, and
    nothing reaches the runtime."""
    mgr = FakeManager()
    app = CockpitApp(mgr, None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        dialog = app.screen
        assert isinstance(dialog, SpawnDialog)
        error = dialog.query_one("#spawn-error")
        await pilot.press("enter")  # no task yet: said, not ignored
        await until(pilot, lambda: error.display, "the empty task said")
        assert "type the task first" in text_of(error) and app.screen is dialog
        await pilot.press("t")
        assert not error.display  # typing answers it
        await pilot.press("backspace")
        dialog.query_one("#spawn-model").value = "claude\x00x"
        await pilot.press(*"task one", "enter")
        await until(pilot, lambda: error.display, "the refusal shown")
        assert "model must be a non-empty string (no NUL)" in text_of(error)
        assert app.screen is dialog and dialog.query_one("#spawn-task").value == "task one"
        assert mgr.spawned == []


async def _approval_dialog_open(pilot, app, mgr: FakeManager, sid: str) -> None:
    """Session ``sid`` asks to run ``make deploy``; Enter on its pane opens the approval dialog."""
    from cockpit.tui.screens.approval import ApprovalDialog

    ask = ev.ApprovalRequested(sid, "tu_1", "bash", "bash", "make deploy", "make deploy", "Bash(make *)")
    mgr.emit(ev.SessionSpawned(sid, "deploy", "m", "/ws", "/t", True), ev.ToolCall(sid, "tu_1", "bash",
             {"command": "make deploy"}), ask, ev.StatusChanged(sid, S.NEEDS_APPROVAL, "make deploy"))
    await until(pilot, lambda: sid in app.panes and app.views[sid].pending is ask, "the ask")
    await until(pilot, lambda: app.panes[sid].query_one("#pane-approval").display, "the ask in the pane")
    await pilot.press("enter")
    assert isinstance(app.screen, ApprovalDialog)


async def _long_ask_in_a_pane(pilot, app, mgr: FakeManager, panes: int, sid: str):
    """``panes`` sessions; ``sid`` asks to run a 22-line command with a long one-line summary. The
    rows of its pane as the screen shows them, and the pane's region."""
    from tui_fakes import screen_lines

    for n in range(panes):
        mgr.emit(ev.SessionSpawned(f"q0000{n}", f"task {n}", "m", "/ws", "/t", True))
    await until(pilot, lambda: len(app.panes) == panes, "the panes")
    cmd = "cat > deploy.sh <<'EOF'\n" + "\n".join(f"step {i} --with a rather long argument list" for i in range(20)) + "\nEOF"
    ask = ev.ApprovalRequested(sid, "tu_1", "bash", "bash", " ".join(cmd.split())[:200], cmd, "Bash")
    mgr.emit(ev.ToolCall(sid, "tu_1", "bash", {"command": cmd}), ask, ev.StatusChanged(sid, S.NEEDS_APPROVAL, "deploy"))
    pane = app.panes[sid]
    await until(pilot, lambda: pane.query_one("#pane-approval").display, "the ask in the pane")
    await settled(pilot, app)
    region = pane.region
    return "\n".join(line[region.x: region.right] for line in screen_lines(app)[region.y: region.bottom]), region


async def test_a_small_panes_approval_keeps_its_keys_line_in_sight():
    """Nine panes at 100×30 (each about 33×10): a long multi-line command's ask fits the panel's
    room — the title cut, the detail shortened, the keys line short and never the part cut (it
    was below the pane's fold)."""
    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=(100, 30)) as pilot:
        shown, region = await _long_ask_in_a_pane(pilot, app, mgr, 9, "q00004")
        assert region.height <= 12  # a small pane indeed
        assert "y once" in shown and "a session" in shown and "details/deny" in shown, shown
        assert "approval needed" in shown, shown


async def test_a_half_height_panes_approval_keeps_its_whole_keys_line():
    """Four panes at 100×30 (each 14 rows): a long one-line summary took six rows of the title and
    cut the keys line's second row (seen in tmux)."""
    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=(100, 30)) as pilot:
        shown, _region = await _long_ask_in_a_pane(pilot, app, mgr, 4, "q00001")
        assert "deny with a reason" in shown or "details/deny" in shown, shown
        assert "y allow once" in shown or "y once" in shown, shown


async def test_an_approval_answered_elsewhere_closes_its_dialog_and_the_panel():
    from cockpit.tui.screens.approval import ApprovalDialog

    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=SIZE) as pilot:
        await _approval_dialog_open(pilot, app, mgr, "q00001")
        mgr.emit(ev.ApprovalResolved("q00001", "tu_1", True, "once"))  # another client said yes
        await until(pilot, lambda: not isinstance(app.screen, ApprovalDialog), "the dialog closes")
        await until(pilot, lambda: not app.panes["q00001"].query_one("#pane-approval").display, "the ask gone")
        assert mgr.answers == []  # this client answered nothing


async def test_an_approval_dialog_of_a_session_that_ended_closes_and_says_why():
    from cockpit.tui.screens.approval import ApprovalDialog

    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=SIZE) as pilot:
        await _approval_dialog_open(pilot, app, mgr, "q00002")
        mgr.emit(ev.StatusChanged("q00002", S.INTERRUPTED, "the server stopped while it ran"),
                 ev.SessionDone("q00002", S.INTERRUPTED))  # its server went away meanwhile
        await until(pilot, lambda: not isinstance(app.screen, ApprovalDialog), "the dialog closes")
        await until(pilot, lambda: any("its approval is void" in n.message for n in app._notifications), "why")
        assert mgr.answers == []


async def test_attaching_shows_an_early_error_once(tmp_path):
    # a session of the server that failed before any output (no API key): the snapshot replays its
    # error; its transcript, which holds the same error, must not be read on top of it
    transcript = tmp_path / "t.jsonl"
    records = [{"type": "header", "ts": "2026-01-01T00:00:00.000+00:00", "session_id": "e00001", "task": "t"},
               {"type": "message", "ts": "2026-01-01T00:00:00.001+00:00", "role": "user",
                "content": [{"type": "text", "text": "t"}]},
               {"type": "error", "ts": "2026-01-01T00:00:01.000+00:00", "kind": "auth", "message": "no API key"},
               {"type": "end", "ts": "2026-01-01T00:00:01.001+00:00", "status": "error", "reason": "no API key"}]
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    mgr = FakeManager([ev.SessionSpawned("e00001", "t", "m", "/ws", str(transcript), True),
                       ev.StatusChanged("e00001", S.ERROR, "no API key"),
                       ev.SessionErrorEvent("e00001", "no API key", "auth"),
                       ev.SessionDone("e00001", S.ERROR)])
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(ev.SessionSpawned("z00001", "later", "m", "/ws", "/t/z.jsonl", True))
        await until(pilot, lambda: "z00001" in app.views, "past the snapshot")  # any history read has begun
        await until(pilot, lambda: all(w.is_finished for w in app.workers if w.group == "history"), "history read")
        assert [b.text for b in app.views["e00001"].blocks if b.kind == "error"] == ["auth: no API key"]


async def test_spawn_dialog_fits_80x24_with_many_notes(tmp_path):
    # 21 notes with long descriptions at 80×24: the options and the worktree toggle stay on screen,
    # the box stays inside the terminal, and each note of the preview is one line
    hits = [FakeHit(f"note-number-{n:02d}", f"deploy fact {n}: " + "a long description " * 6, "", n % 5 == 0,
                    0.5, tmp_path / f"n{n}.md") for n in range(21)]
    app = CockpitApp(FakeManager(), FakeEngine(hits=hits))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n", *"deploy")
        dialog = app.screen
        assert isinstance(dialog, SpawnDialog)
        await until(pilot, lambda: "21 notes" in text_of(dialog.query_one("#spawn-preview")), "preview")
        await pilot.pause()
        screen = app.screen.region
        box = dialog.query_one("#spawn-box").region
        assert screen.contains_region(box), (box, screen)
        for sel in ("#spawn-task", "#spawn-model", "#spawn-mode", "#spawn-backend", "#spawn-worktree"):
            region = dialog.query_one(sel).region
            assert region.height and box.contains_region(region), (sel, region, box)
        assert dialog.query_one("#spawn-model").region.width >= 14  # the model id stays readable
        preview = dialog.query_one("#spawn-preview")
        shown_lines = preview.region.height
        assert shown_lines >= 3 and preview.size.height == 22  # a line each (count line + 21), nothing wrapped


async def test_the_page_shows_in_the_header_at_80_columns():
    mgr = FakeManager()
    app = CockpitApp(mgr, FakeEngine())
    async with app.run_test(size=(80, 24)) as pilot:
        for n in range(5):
            mgr.emit(*session_script(f"p{n:05d}", f"task {n}", S.WAITING, text=f"answer {n}"))
        await until(pilot, lambda: len(app.panes) == 5, "5 panes")
        await until(pilot, lambda: app.screen.query_one("#grid").pages > 1, "more than one page")
        await until(pilot, lambda: "page 1/" in text_of(app.screen.query_one("#totals"))[:80], "the page in the header")


async def test_review_and_diff_screens_leave_the_text_most_of_80_columns(tmp_path):
    from cockpit.runtime.worktree import Diff, FileChange

    mgr = FakeManager()
    mgr.diffs["d00001"] = Diff((FileChange("calc.py", "M", 1, 1, "diff --git a/calc.py b/calc.py\n@@ -1 +1 @@\n-a\n+b\n"),))
    app = CockpitApp(mgr, FakeEngine(), sessions_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        mgr.emit(*session_script("d00001", "task", S.WAITING, text="answer"))
        await until(pilot, lambda: len(app.panes) == 1, "a pane")
        await pilot.press("r")
        await until(pilot, lambda: app.screen.query("#review-right"), "the review screen")
        await pilot.pause()
        assert app.screen.query_one("#review-right").region.width >= 44
        await pilot.press("escape", "d")
        await until(pilot, lambda: getattr(app.screen, "diff", None) is not None, "the diff screen")
        await pilot.pause()
        assert app.screen.query_one("#diff-view").region.width >= 44


async def test_q_is_detach_when_attached_and_quit_in_process():
    """The footer and the palette say what q does: attached to a server the sessions go on
    ("Detach"); in-process q quits (and asks when that stops sessions)."""
    for attached, label in ((True, "Detach"), (False, "Quit")):
        mgr = FakeManager()
        mgr.outlives_app = attached  # type: ignore[attr-defined]
        app = CockpitApp(mgr, FakeEngine())
        async with app.run_test(size=SIZE) as pilot:
            assert app.screen.active_bindings["q"].binding.description == label
            titles = {c.title for c in app.get_system_commands(app.screen)}
            assert ("Detach" in titles) is attached
            await pilot.press("q")
            await until(pilot, lambda app=app: not app.is_running, "q quits the app")


async def test_q_with_sessions_waiting_for_you_leaves_them_and_its_label_says_so():
    # Q stops the sessions still working; one waiting for you is left for review, so its key
    # help must not promise to stop "all"
    mgr = FakeManager()
    app = CockpitApp(mgr, FakeEngine())
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(*session_script("w00001", "task", S.WAITING, text="answer"))
        await until(pilot, lambda: len(app.panes) == 1, "a pane")
        label = next(b.description for b in app.BINDINGS if getattr(b, "id", None) == "quit.stop")
        assert "working" in label and "all" not in label
        await pilot.press("Q")
        await until(pilot, lambda: not app.is_running, "quit without asking")
    assert mgr.killed == []


async def test_escape_sequences_in_task_model_and_tool_text_never_reach_the_terminal():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(ev.SessionSpawned("x00001", "fix\x1b]0;pwned\x07 it\nnow", "m", "/ws", "/t", True),
                 ev.StatusChanged("x00001", S.STREAMING),
                 ev.TextDelta("x00001", "clear\x1b[2J\x1b[31m red\x07 done"),
                 ev.ToolCall("x00001", "tu1", "bash", {"command": "printf '\x1b[?1049h'"}),
                 ev.ToolResult("x00001", "tu1", "bash", "out\x1b]52;c;Zm9v\x07put", False),
                 ev.StatusChanged("x00001", S.RUNNING_TOOL, "first line\nsecond\x1b[1m line"))
        await until(pilot, lambda: "x00001" in app.panes, "pane")
        pane = app.panes["x00001"]
        body = pane.query_one("#pane-body")
        await until(pilot, lambda: "done" in body.plain_text(), "text on screen")
        shown = body.plain_text() + str(pane.border_title) + text_of(pane.query_one("#pane-status"))
        assert "\x1b" not in shown and "\x07" not in shown
        assert "clear red done" in body.plain_text()
        assert "\n" not in str(pane.border_title)
        await until(pilot, lambda: "second line" in text_of(pane.query_one("#pane-status")), "status detail")
        assert "first line second line" in text_of(pane.query_one("#pane-status")).replace("\n", "|")


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_dialogs_question_wraps_and_every_button_shows(size):
    """At 160 columns the discard warning was cut after "and its" and the fourth button read
    "Dif": the question wraps inside the box and every button fits in it."""
    from textual.widgets import Button, Label

    from cockpit.tui.screens.dialogs import ChoiceDialog

    question = ("1ngyb9jvz70r left changes in its worktree (1 file +1 -0 on cockpit/1ngyb9jvz70r-fix-the-add-"
                "function-in-calc-p). Merge them, keep the branch, discard them, or look at the diff first?")
    app = CockpitApp(FakeManager(), None)
    async with app.run_test(size=size) as pilot:
        app.push_screen(ChoiceDialog(question, [("merge", "Merge", "m"), ("keep", "Keep branch", "k"),
                                                ("discard", "Discard", "x"), ("diff", "Diff", "d")]))
        await pilot.pause()
        dialog = app.screen
        box = dialog.query_one(".dialog-box").region
        shown = " ".join(str(s.text).strip() for s in dialog.query_one(Label).render_lines(
            dialog.query_one(Label).region.reset_offset))
        assert " ".join(question.split()) in " ".join(shown.split())
        for button in dialog.query(Button):
            r = button.region
            assert box.contains_region(r) and r.width >= len(str(button.label)) + 2, button.label


async def test_sessions_closed_before_attaching_stay_in_the_header_totals():
    """Another app closed two finished sessions; this one attaches later: their spend is in the
    header's totals (the snapshot carries it), beside the live session's."""
    mgr = FakeManager([ev.SessionForgotten("c00001", ev.Usage(1000, 500, 0, 0), 0.25),
                       ev.SessionForgotten("c00002", ev.Usage(2000, 0, 0, 0), 0.5),
                       ev.SessionSpawned("l00001", "live one", "m", "/ws", "/t/l.jsonl", True)])
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "l00001" in app.views, "the live session")
        await until(pilot, lambda: "$0.75" in text_of(app.screen.query_one("#totals")), "closed sessions' spend")
        assert "3.5k tok" in text_of(app.screen.query_one("#totals"))
        assert set(app.panes) == {"l00001"}  # no pane comes back for a closed session


async def test_the_manager_snapshot_carries_what_closed_sessions_spent(tmp_path):
    from standin import Reply, StandIn

    from cockpit.runtime import RuntimeConfig, SessionManager

    with StandIn() as api:
        api.script(Reply("done"))
        mgr = SessionManager(None, RuntimeConfig(api_key="k", base_url=api.base_url, interactive=False,
                                                 sandbox=False, worktrees_dir=tmp_path / "w", max_retries=0))
        s = await mgr.spawn(SpawnSpec("x", workspace=tmp_path, worktree=False, preseed=False))
        assert await mgr.wait_idle(timeout=60)
        assert s.usage.total > 0
        await mgr.forget(s.id)
        gone = [e for e in mgr.snapshot() if isinstance(e, ev.SessionForgotten)]
        assert [(e.session_id, e.usage, e.cost_usd) for e in gone] == [(s.id, s.usage, s.cost_usd)]
        await mgr.aclose()


async def test_each_spawn_focuses_its_own_pane_even_when_another_pane_arrives_first():
    """Two quick spawns: the first one's pane shows only after the second was asked for (a slow
    worktree); focus ends on the pane of the spawn that returned last, never on a pane that merely
    arrived while a spawn was pending."""
    import asyncio

    mgr = FakeManager()
    gate = asyncio.Event()
    real = mgr.spawn

    async def spawn(spec, *, host=None):
        if spec.task == "slow":
            await gate.wait()
        return await real(spec, host=host)

    mgr.spawn = spawn
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(ev.SessionSpawned("z00001", "other", "m", "/ws", "/t", True))  # a pane from elsewhere
        await until(pilot, lambda: "z00001" in app.panes, "the other pane")
        app.spawn("slow")
        mgr.emit(ev.SessionSpawned("z00002", "another", "m", "/ws", "/t", True))  # arrives meanwhile
        await until(pilot, lambda: "z00002" in app.panes, "a pane while the spawn waits")
        assert app.screen.focused_pane() is app.panes["z00001"]  # not stolen by a pane nobody spawned here
        gate.set()
        await until(pilot, lambda: len(app.panes) == 3, "the spawned pane")
        sid = next(s for s in app.panes if s.startswith("a"))
        await until(pilot, lambda: app.screen.focused_pane() is app.panes[sid], "focus on the spawned pane")
        app.spawn("fast")
        await until(pilot, lambda: len(app.panes) == 4, "the second spawned pane")
        second = sorted(s for s in app.panes if s.startswith("a"))[-1]
        await until(pilot, lambda: app.screen.focused_pane() is app.panes[second], "focus on the second")


async def test_closing_a_pane_keeps_the_others_numbers_and_a_new_pane_takes_the_free_one():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        for i in (1, 2, 3):
            mgr.emit(ev.SessionSpawned(f"n0000{i}", f"task {i}", "m", "/ws", "/t", True),
                     ev.StatusChanged(f"n0000{i}", S.DONE), ev.SessionDone(f"n0000{i}", S.DONE))
        await until(pilot, lambda: len(app.panes) == 3, "three panes")
        assert [app.panes[f"n0000{i}"].number for i in (1, 2, 3)] == [1, 2, 3]
        await app.remove_pane("n00002")
        assert app.panes["n00001"].number == 1 and app.panes["n00003"].number == 3  # not renumbered
        await pilot.press("3")
        assert app.screen.focused_pane() is app.panes["n00003"]  # the key is the number in the title
        mgr.emit(ev.SessionSpawned("n00004", "task 4", "m", "/ws", "/t", True))
        await until(pilot, lambda: "n00004" in app.panes, "a new pane")
        assert app.panes["n00004"].number == 2  # the free number
        grid = app.screen.grid
        assert [p.number for p in grid.panes] == [1, 2, 3]  # shown in number order
        from cockpit.tui.widgets.pane import SessionPane

        assert [c.number for c in grid.children if isinstance(c, SessionPane)] == [1, 2, 3]  # and laid out so


async def finished_sessions(pilot, app, mgr, prefix: str, n: int) -> None:
    """Sessions PREFIX00001… PREFIX0000n, each done with an answer, and a pane for each."""
    for i in range(1, n + 1):
        mgr.emit(*session_script(f"{prefix}{i:05d}", f"task {i}", S.DONE, text=f"answer {i}"))
    await until(pilot, lambda: len(app.panes) == n, f"{n} panes")


async def test_after_a_close_every_pane_of_the_page_is_one_number_key_away():
    """Ten sessions (a page holds nine); closing the seventh brings the tenth onto page one. It
    keeps its title 10 and takes the key no pane of the page is titled with: 7."""
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        await finished_sessions(pilot, app, mgr, "k", 10)
        await app.remove_pane("k00007")
        grid = app.screen.grid
        await until(pilot, lambda: grid.pages == 1, "one page")
        assert [p.number for p in grid.page_panes()] == [1, 2, 3, 4, 5, 6, 8, 9, 10]
        await pilot.press("7")
        assert app.screen.focused_pane() is app.panes["k00010"]
        await pilot.press("9")
        assert app.screen.focused_pane() is app.panes["k00009"]  # a pane titled 1-9 keeps its key


async def test_a_resize_that_makes_pages_shows_the_page_count_without_a_key():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        await finished_sessions(pilot, app, mgr, "r", 5)
        totals = app.screen.query_one("#totals")
        assert "page" not in text_of(totals)
        await pilot.resize_terminal(80, 24)  # 2×2 a page: five are two pages
        grid = app.screen.grid
        await until(pilot, lambda: grid.pages == 2, "two pages")
        await until(pilot, lambda: "page 1/2" in text_of(totals), "the header's page count")


async def test_at_80_columns_every_footer_key_that_does_something_fits_quit_among_them():
    from textual.widgets._footer import FooterKey

    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=(80, 24)) as pilot:
        mgr.emit(ev.SessionSpawned("f00001", "one", "m", "/ws", "/t", True), ev.StatusChanged("f00001", S.STREAMING),
                 ev.SessionSpawned("f00002", "two", "m", "/ws", "/t", True), ev.StatusChanged("f00002", S.WAITING))
        await until(pilot, lambda: len(app.panes) == 2, "two panes")
        await pilot.pause()
        keys = [k for k in app.screen.query(FooterKey) if k.display]
        shown = {k.description: k.region for k in keys}
        assert {"Spawn", "Kill", "Quit", "Diff"} <= set(shown), shown
        assert all(r.right <= 80 and r.width > 0 for r in shown.values()), shown  # none cut off
        assert "Allow once" not in shown  # nothing to allow: gone, not greyed, at this width


async def test_ctrl_s_spawns_from_the_backend_drop_down_where_enter_opens_the_list():
    from cockpit.tui.screens.spawn import SpawnDialog

    mgr = FakeManager()
    mgr.backends = ("cockpit", "acp:opencode")
    app = CockpitApp(mgr, None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        dialog = app.screen
        assert isinstance(dialog, SpawnDialog)
        await pilot.press(*"task two")
        backend = dialog.query_one("#spawn-backend")
        backend.value = "acp:opencode"
        backend.focus()
        await pilot.press("ctrl+s")
        await until(pilot, lambda: mgr.spawned, "spawn called")
        assert mgr.spawned == ["task two"] and mgr.spawn_options[0]["backend"] == "acp:opencode"


async def test_after_an_attach_each_pane_is_mounted_with_its_sessions_state_now(monkeypatch):
    """The snapshot is folded before any pane is mounted: the first frame never shows a session
    'starting' (or working) that is done, failed or waiting."""
    from cockpit.tui.screens.panes import SessionPanes

    mgr = FakeManager([ev.SessionSpawned("d00001", "done one", "m", "/ws", "/t/d.jsonl", True),
                       ev.StatusChanged("d00001", S.STREAMING),
                       ev.TextDelta("d00001", "all done"),
                       ev.StatusChanged("d00001", S.DONE),
                       ev.SessionDone("d00001", S.DONE),
                       ev.SessionSpawned("f00001", "failed one", "m", "/ws", "/t/f.jsonl", True),
                       ev.StatusChanged("f00001", S.ERROR, "no API key"),
                       ev.SessionDone("f00001", S.ERROR),
                       ev.SessionSpawned("g00001", "gone", "m", "/ws", "/t/g.jsonl", True),
                       ev.SessionForgotten("g00001", None, None)])
    at_mount: dict[str, S] = {}
    real = SessionPanes._add_pane

    async def recording(self, view):
        at_mount[view.session_id] = view.status
        await real(self, view)

    monkeypatch.setattr(SessionPanes, "_add_pane", recording)
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(app.panes) == 2, "two panes")
        assert at_mount == {"d00001": S.DONE, "f00001": S.ERROR}


async def test_a_failed_request_to_the_runtime_is_one_line_and_the_app_stays():
    """Every manager worker's failure goes through one handler: spawn, kill and send that the
    runtime refuses each give '<what> failed: <why>' and the app keeps running."""

    class Refusing(FakeManager):
        async def spawn(self, spec, *, host=None):
            raise RuntimeError("the server is gone")

        async def kill(self, session_id):
            raise RuntimeError("no such session")

    mgr = Refusing([ev.SessionSpawned("k00001", "t", "m", "/ws", "/t/k.jsonl", True)])
    app = CockpitApp(mgr)
    notes: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        real = app.notify
        app.notify = lambda message, **kw: (notes.append(str(message)), real(message, **kw))[1]  # type: ignore[method-assign]
        app.spawn("a task")
        app.kill("k00001")
        await until(pilot, lambda: len(notes) >= 2, "two notices")
        assert sorted(notes) == ["kill failed: no such session", "spawn failed: the server is gone"]
        assert app.is_running


async def test_an_interrupted_session_attaches_with_its_output_once(tmp_path):
    # a session a dead server left: the new server replays its transcript's events (an old-format
    # one here, cut before its end) and the app folds them like a live session's — no transcript
    # read of its own, nothing shown twice
    from cockpit.server.daemon import events_left

    old = Path(__file__).parent / "data" / "old_transcript_v2.jsonl"
    path = tmp_path / "t.jsonl"
    path.write_text("".join(old.read_text().splitlines(keepends=True)[:-1]))
    app = CockpitApp(FakeManager(events_left("1nh0vypdz4fw", str(path))))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "1nh0vypdz4fw" in app.panes, "its pane")
        view = app.views["1nh0vypdz4fw"]
        assert view.status is S.INTERRUPTED and "resume it" in view.detail
        assert [(b.kind, b.text) for b in view.blocks if b.kind != "tool"] == [
            ("text", "Let me look."), ("text", "It is 8080."), ("user", "sure?"), ("text", "Still 8080.")]
        assert [b.result for b in view.blocks if b.kind == "tool"] == ["Staging runs on port 8080.\n"]


async def test_every_pane_an_attach_mounts_shows_its_session():
    """The snapshot's sessions get their panes after it is folded: each one drawn, the last too
    (its first sync once ran before it counted as mounted, and nothing redrew it)."""
    initial = []
    for n in range(4):
        initial += session_script(f"s{n:05d}", f"task number {n}", S.WAITING, text=f"answer {n}")
    app = CockpitApp(FakeManager(initial), notify_os=False)
    async with app.run_test(size=(142, 44)) as pilot:
        await until(pilot, lambda: len(app.panes) == 4, "four panes")
        await until(pilot, lambda: all(p.border_title is not None for p in app.panes.values()), "every title")
        last = app.panes["s00003"]
        assert "task number 3" in str(last.border_title)
        await until(pilot, lambda: "answer 3" in last.query_one("#pane-body").plain_text(), "its answer")


async def test_a_pane_says_its_worktree_was_removed_at_the_end():
    """A session that changed nothing has its worktree dropped at its end: the pane stops naming the
    branch (which is gone) and says why."""
    mgr = FakeManager()
    app = CockpitApp(mgr)
    wt = ev.WorktreeRef("/repo/.cockpit/worktrees/r00001", "cockpit/r00001-look", "0" * 40, "main")
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(ev.SessionSpawned("r00001", "look around", "m", "/repo", "/t", True, worktree=wt,
                                   placement="worktree"), ev.StatusChanged("r00001", S.WAITING))
        await until(pilot, lambda: "r00001" in app.panes
                    and "⎇ cockpit/r00001-look" in text_of(app.panes["r00001"].query_one("#pane-status")),
                    "the branch named")
        mgr.emit(ev.WorktreeRemoved("r00001", "no changes"), ev.StatusChanged("r00001", S.DONE),
                 ev.SessionDone("r00001", S.DONE))
        status = app.panes["r00001"].query_one("#pane-status")
        await until(pilot, lambda: "worktree removed (no changes)" in text_of(status), "the removal said")
        assert "⎇" not in text_of(status)


async def test_a_pane_being_removed_is_not_drawn():
    """A pane's first sync runs after a refresh; when the pane is being closed by then (its parts
    going), the sync draws nothing instead of failing the screen's handler."""
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(*session_script("z00001", "task", S.DONE, text="done"))
        await until(pilot, lambda: "z00001" in app.panes, "a pane")
        pane = app.panes["z00001"]
        await pane.query_one("#pane-status").remove()  # half taken down, as during a removal
        pane.view.meta_version += 1
        pane.sync(force=True)  # nothing to draw: no NoMatches
        mgr.emit(*session_script("z00002", "another", S.WAITING, text="hi"))
        await until(pilot, lambda: "z00002" in app.panes, "the app goes on")


async def test_question_mark_and_f1_show_the_keys_and_hide_them_again_but_type_in_a_box():
    app = CockpitApp(FakeManager(), FakeEngine(hits=[]))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await until(pilot, lambda: app.screen.query("HelpPanel"), "the keys panel")
        table = app.screen.query_one("BindingsTable").render_bindings_table()
        keys = [str(cell) for cell in table.columns[0]._cells]
        assert keys.count("1-9") == 1 and not {"2", "9"} & set(keys), keys  # one row for the number keys
        await pilot.press("question_mark")
        await until(pilot, lambda: not app.screen.query("HelpPanel"), "the panel gone")
        await pilot.press("f1")
        await until(pilot, lambda: app.screen.query("HelpPanel"), "the keys panel on F1")
        await pilot.press("f1")
        await until(pilot, lambda: not app.screen.query("HelpPanel"), "the panel gone again")
        await pilot.press("m")
        screen = app.screen
        assert isinstance(screen, MemoryScreen)
        await pilot.press("question_mark")  # in the search box: a character
        await pilot.pause()
        assert screen.query_one("#memory-query", Input).value == "?" and not screen.query("HelpPanel")


@pytest.mark.parametrize("size", [(80, 24), (60, 20), (120, 40)])
async def test_the_approval_dialog_keeps_its_reason_box_and_buttons_on_screen(size):
    """A long command in the dialog: the detail scrolls in the room left, the reason box and the
    three buttons stay on the screen (at 80×24 they were below its edge: a reason typed blind)."""
    from cockpit.tui.screens.approval import ApprovalDialog

    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=size) as pilot:
        cmd = "cat > deploy.sh <<'EOF'\n" + "\n".join(f"step {i} --with an argument" for i in range(40)) + "\nEOF"
        ask = ev.ApprovalRequested("r00001", "tu_1", "bash", "bash", "outside the sandbox: curl -sS https://pypi.org",
                                   "The sandbox blocked network access. Run it again outside?\n\n" + cmd, "")
        mgr.emit(ev.SessionSpawned("r00001", "deploy", "m", "/ws", "/t", True),
                 ev.ToolCall("r00001", "tu_1", "bash", {"command": cmd}), ask,
                 ev.StatusChanged("r00001", S.NEEDS_APPROVAL, "deploy"))
        await until(pilot, lambda: "r00001" in app.panes and app.views["r00001"].pending is ask, "the ask")
        await until(pilot, lambda: app.panes["r00001"].query_one("#pane-approval").display, "the ask in the pane")
        await pilot.press("enter")
        dialog = app.screen
        assert isinstance(dialog, ApprovalDialog)
        await settled(pilot, app)
        height = size[1]
        for wid in ("#approval-reason", "#once", "#session", "#deny"):
            region = dialog.query_one(wid).region
            assert region.height and region.bottom <= height, (wid, region, size)
        assert dialog.query_one("#approval-detail").region.height >= 3
        from tui_fakes import screen_lines

        # the buttons' labels too (squeezed, they showed bare bars; too wide, Deny was cut off)
        await until(pilot, lambda: "Deny (d)" in "\n".join(screen_lines(app)), "the buttons' labels")
        shown = "\n".join(screen_lines(app))
        assert "once (y)" in shown.lower() and "session (a)" in shown.lower(), shown
        await pilot.press("d", *"use requests", "enter")
        await until(pilot, lambda: mgr.answers, "the denial")


def test_the_spawn_preview_labels_notes_as_the_pane_will_and_names_the_listed_ones():
    """The preview labelled the ★ note `p 0.54` (later `p 0.00`, read as "not given") where the
    pane says `rule`, and left out the "may be relevant" entry the pane then showed."""
    from types import SimpleNamespace

    from cockpit.tui.screens.spawn import preview_markup

    star = SimpleNamespace(name="staging-stack", description="d", priority=True, score=0.2, probability=0.0)
    hit = SimpleNamespace(name="deploy", description="d", priority=False, score=0.6, probability=0.87)
    listed = SimpleNamespace(name="error-format", description="d", priority=False, score=0.01, probability=None)
    text = preview_markup(SimpleNamespace(hits=[star, hit], index=[listed], tokens=120))
    lines = text.splitlines()
    assert "staging-stack [dim]rule[/]" in lines[1] and "deploy [dim]p 0.87[/]" in lines[2]
    assert lines[3] == "[dim]listed, not given (may be relevant): error-format[/]"


async def test_a_light_theme_made_for_other_uses_still_shows_the_states_readably():
    """With Textual's atom-one-light, "✓ done" was #6CF23F and "? waiting for you" #D8D938 on
    #FAFAFA (contrast 1.4 and 1.5): each state's colour is darkened to at least 3:1, its hue kept;
    a theme whose colours read well is left as it is."""
    from textual.color import Color

    from cockpit.tui.themes import MIN_CONTRAST, _contrast

    app = CockpitApp(FakeManager())
    async with app.run_test(size=SIZE) as pilot:
        app.theme = "cockpit-dark"
        await pilot.pause()
        dark = dict(app.theme_variables)
        assert dark["status-done"].lower() == dark["success"].lower()
        app.theme = "atom-one-light"
        await pilot.pause()
        v = app.theme_variables
        for behind in ("background", "panel"):  # the panes' and the header's
            for state in ("status-done", "status-waiting", "status-error", "status-streaming"):
                assert _contrast(Color.parse(v[state]), Color.parse(v[behind])) >= MIN_CONTRAST, (state, behind)
        assert v["status-done"] != v["success"] and Color.parse(v["status-done"]).g > Color.parse(v["status-done"]).r


async def test_backspace_on_a_working_session_says_why_it_does_not_close():
    """⌫ on a pane that streams or asks did nothing and said nothing."""
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=SIZE) as pilot:
        mgr.emit(*session_script("w0001", "long job", S.STREAMING, text="working"))
        await until(pilot, lambda: "w0001" in app.panes and app.panes["w0001"].view.status is S.STREAMING, "a pane")
        app.screen.focus_pane(app.panes["w0001"])
        await pilot.press("backspace")
        await until(pilot, lambda: any("x kills it, then ⌫ closes its pane" in str(n.message)
                                       for n in app._notifications), "the reason")
        assert "w0001" in app.panes
