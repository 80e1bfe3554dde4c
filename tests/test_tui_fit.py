"""What a fresh user sees in an 80×24 terminal: every key and answer that matters is on screen,
no label cut mid-word. Pilot tests over the fake manager, read as the composed frame's text."""

from __future__ import annotations

from textual.widgets import Button
from tui_fakes import FakeManager, screen_lines, session_script, settled, until

from cockpit import events as ev
from cockpit.events import SessionStatus as S
from cockpit.tui import CockpitApp
from cockpit.tui.screens.approval import ApprovalDialog

SMALL = (80, 24)


async def test_the_approval_dialog_shows_all_three_answers_and_the_rule_at_80_columns():
    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    rule = "Bash(touch *), Bash(echo *)"
    ask = ev.ApprovalRequested("f00001", "tu_1", "bash", "bash", "touch /tmp/x && echo ok",
                               "touch /tmp/x && echo ok", rule)
    async with app.run_test(size=SMALL) as pilot:
        mgr.emit(ev.SessionSpawned("f00001", "touch a file", "m", "/ws", "/t", True),
                 ev.ToolCall("f00001", "tu_1", "bash", {"command": "touch /tmp/x && echo ok"}), ask,
                 ev.StatusChanged("f00001", S.NEEDS_APPROVAL, "touch /tmp/x"))
        await until(pilot, lambda: "f00001" in app.panes and app.views["f00001"].pending is ask, "the ask")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ApprovalDialog), "the dialog")
        await settled(pilot, app)
        shown = "\n".join(screen_lines(app))
        for label in ("Allow once (y)", "Allow for session (a)", "Deny (d)"):
            assert label in shown, label
        for button in app.screen.query(Button):
            assert button.region.right <= SMALL[0] and button.region.bottom <= SMALL[1], button.id
        assert rule in shown  # the rule "allow for session" adds is still named


async def tool_line_shown(pilot, app, mgr, events) -> str:
    """``events`` of one session (its spawn first) emitted; its pane's text once the tool's result
    shows, lines unwrapped."""
    sid = events[0].session_id
    mgr.emit(*events)
    await until(pilot, lambda: sid in app.panes and any(b.result for b in app.views[sid].blocks), "the result")
    await settled(pilot, app)
    return " ".join(app.panes[sid].query_one("#pane-body").plain_text().split())


async def test_a_command_run_again_outside_the_sandbox_shows_the_outcome_that_counts():
    import io

    from cockpit.attach_cli import _Shower
    from cockpit.runtime.history import RAN_OUTSIDE

    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    failed = "touch: cannot touch '/tmp/x': Read-only file system"
    content = f"{failed}\n[the sandbox blocked a write outside the working tree]\n{RAN_OUTSIDE}\nok"
    events = [ev.SessionSpawned("f00002", "touch a file", "m", "/ws", "/t", True),
              ev.ToolCall("f00002", "tu_1", "bash", {"command": "touch /tmp/x && echo ok"}),
              ev.ApprovalRequested("f00002", "tu_1", "bash", "bash", "outside the sandbox: touch /tmp/x",
                                   "touch /tmp/x && echo ok", ""),
              ev.ApprovalResolved("f00002", "tu_1", True, "once"),
              ev.ToolResult("f00002", "tu_1", "bash", content, False)]
    async with app.run_test(size=SMALL) as pilot:
        body = await tool_line_shown(pilot, app, mgr, events)
        assert "[✓ allowed once · ran outside the sandbox] → ok" in body
        assert "Read-only" not in body
        assert app.views["f00002"].blocks[-1].result == content  # the sandboxed failure stays in the full result
    out = io.StringIO()
    for e in events:
        _Shower("f00002", out).show(e)
    assert "→ ran outside the sandbox: ok" in out.getvalue() and "Read-only" not in out.getvalue()


def test_attach_shows_the_notes_given_and_a_commands_ask_once():
    import io

    from cockpit.attach_cli import _Shower

    out = io.StringIO()
    shower = _Shower("a00001", out)
    notes = (ev.InjectedNote("deploy-cmd", 0.7, False, probability=0.8),
             ev.InjectedNote("staging-env", 0.5, False, kind="index"))
    shower.show(ev.Preseeded("a00001", notes, 40, "block"))
    shower.show(ev.ApprovalRequested("a00001", "tu_1", "bash", "bash", "python -m shop.report --json",
                                     "python -m shop.report --json", ""))
    text = out.getvalue()
    assert "[notes given: deploy-cmd; index: staging-env]" in text
    assert text.count("python -m shop.report --json") == 1 and "! needs approval: python -m shop.report" in text


async def test_a_confirmed_check_command_is_no_error_and_a_failed_check_has_one_glyph():
    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=SMALL) as pilot:
        mgr.emit(ev.SessionSpawned("f00003", "fix add", "m", "/ws", "/t", True),
                 ev.Reviewed("f00003", "check-confirm", False, "pytest -q"),  # asked: run this command?
                 ev.Reviewed("f00003", "check", False, "check failed: pytest -q exited 1"))
        await until(pilot, lambda: "f00003" in app.panes and len(app.views["f00003"].blocks) == 2, "both results")
        await settled(pilot, app)
        body = app.panes["f00003"].query_one("#pane-body").plain_text()
        assert "✗ ✗" not in body and "✗ check-confirm" not in body
        assert "✗ check: check failed: pytest -q exited 1" in body
        assert [b.kind for b in app.views["f00003"].blocks] == ["note", "error"]


def _waiting_and_asking(mgr: FakeManager, wt: ev.WorktreeRef | None = None) -> None:
    mgr.emit(*session_script("f00004", "fix the login redirect so it keeps the query string and the fragment",
                             S.WAITING, text="Done."))
    if wt is not None:  # (a second spawn event: the worktree, as the runtime reports it)
        mgr.emit(ev.SessionSpawned("f00004", "fix the login redirect so it keeps the query string and the fragment",
                                   "m", "/ws", "/t", True, worktree=wt))
    ask = ev.ApprovalRequested("f00005", "tu_1", "bash", "bash", "make deploy", "make deploy", "Bash(make *)")
    mgr.emit(ev.SessionSpawned("f00005", "deploy", "m", "/ws", "/t", True),
             ev.ToolCall("f00005", "tu_1", "bash", {"command": "make deploy"}), ask,
             ev.StatusChanged("f00005", S.NEEDS_APPROVAL, "make deploy"))


async def test_at_80_columns_the_footer_keeps_detach_and_the_palette_and_the_header_the_missing_notes():
    from textual.widgets._footer import FooterKey

    mgr = FakeManager()
    mgr.outlives_app = True  # attached to a server: q detaches
    app = CockpitApp(mgr, notify_os=False, notes_missing="/home/someone/projects/webshop/notes")
    async with app.run_test(size=SMALL) as pilot:
        _waiting_and_asking(mgr)
        await until(pilot, lambda: app.views.get("f00005") is not None and app.views["f00005"].pending, "the ask")
        await pilot.press("2")  # the pane that asks: the widest set of keys
        await settled(pilot, app)
        lines = screen_lines(app)
        assert "q Detach" in lines[-1] and "^p palette" in lines[-1], lines[-1]
        assert "n Spawn" in lines[-1] and "y " in lines[-1] and "a " in lines[-1]  # the answers stay
        for key in app.screen.query(FooterKey):
            assert key.region.right <= SMALL[0], key.description
        assert "no notes folder" in lines[0], lines[0]


async def test_at_80_columns_the_spawn_dialog_shows_the_whole_model_id_and_wraps_the_notes_line():
    from cockpit.tui.screens.spawn import SpawnDialog

    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False, model="claude-sonnet-4-5-20250929",
                     notes_missing="/home/someone/projects/webshop/notes")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, SpawnDialog), "the spawn dialog")
        await settled(pilot, app)
        shown = "\n".join(screen_lines(app))
        assert "claude-sonnet-4-5-20250929" in shown
        words = " ".join(line.strip("█ ") for line in shown.splitlines())
        assert "the session starts without project notes." in " ".join(words.split())


async def test_at_80_columns_the_diff_title_names_the_branch():
    from cockpit.runtime.worktree import Diff, FileChange

    mgr = FakeManager()
    mgr.diffs["f00004"] = Diff((FileChange("calc.py", "M", 1, 1, "diff --git a/calc.py b/calc.py\n@@ -1 +1 @@\n-a\n+b\n"),))
    branch = "cockpit/f00004-fix-the-login-redirect"
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=SMALL) as pilot:
        _waiting_and_asking(mgr, ev.WorktreeRef("/wt/f00004", branch, "0123456789abcdef", "main"))
        await until(pilot, lambda: "f00004" in app.panes and app.views["f00004"].worktree, "the session")
        await pilot.press("1", "d")
        await until(pilot, lambda: getattr(app.screen, "diff", None) is not None, "the diff screen")
        await settled(pilot, app)
        assert f"⎇ {branch}" in screen_lines(app)[0], screen_lines(app)[0]


async def test_the_memory_screen_down_goes_to_the_results_and_enter_opens_a_note(tmp_path):
    from textual.widgets import Input, ListView
    from tui_fakes import FakeEngine, FakeHit

    from cockpit.tui.screens.memory import MemoryScreen

    notes = {name: tmp_path / f"{name}.md" for name in ("deploy-cmd", "deploy-staging", "ports")}
    for name, path in notes.items():
        path.write_text(f"---\nname: {name}\n---\nbody of {name}\n")
    engine = FakeEngine(hits=[FakeHit(name, f"about {name}", "", False, 0.5, path) for name, path in notes.items()])
    app = CockpitApp(FakeManager(), engine, notify_os=False)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, MemoryScreen), "the memory screen")
        screen = app.screen
        assert "⏎ Open note" in screen_lines(app)[-1]  # the footer names the key
        await pilot.press(*"deploy")
        await until(pilot, lambda: len(screen.hits) == 2, "two results")
        await pilot.press("down")  # from the search box into the results
        assert isinstance(screen.focused, ListView)
        await pilot.press("down", "enter")  # the second result
        await until(pilot, lambda: getattr(screen, "opened", None) == notes["deploy-staging"], "the highlighted note")
        box = screen.query_one("#memory-query", Input)
        box.focus()
        box.value = ""
        await pilot.press(*"ports", "enter")  # Enter before the search answered: the first result, once it does
        await until(pilot, lambda: getattr(screen, "opened", None) == notes["ports"], "the first result opened")


async def test_the_keys_panel_footer_and_palette_agree_on_what_q_does():
    for attached, label, other in ((True, "Detach", "Quit"), (False, "Quit", "Detach")):
        mgr = FakeManager()
        mgr.outlives_app = attached
        app = CockpitApp(mgr, notify_os=False)
        async with app.run_test(size=(120, 40)) as pilot:
            app.action_show_help_panel()
            await settled(pilot, app)
            bindings = app.screen.active_bindings
            assert bindings["q"].binding.description == bindings["ctrl+q"].binding.description == label
            panel = "\n".join(screen_lines(app))
            assert f"^q q {label}" in panel and f" {other} " not in panel, panel
            titles = [c.title for c in app.get_system_commands(app.screen)]
            assert titles.count(label) == 1 and other not in titles, titles
            await pilot.press("ctrl+c")  # Textual's "how do I quit" hint names the key and what it does
            await until(pilot, lambda app=app: any("ctrl+q" in str(n.message) for n in app._notifications), "the hint")


async def test_c_on_a_session_with_little_context_used_says_why_it_does_not_continue():
    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    async with app.run_test(size=SMALL) as pilot:
        mgr.emit(*session_script("f00006", "fix add", S.WAITING, text="Done."))
        await until(pilot, lambda: "f00006" in app.panes, "the pane")
        await pilot.press("1")
        await settled(pilot, app)
        assert "Continue fresh" not in screen_lines(app)[-1]  # not offered in the footer below 80 %
        await pilot.press("c")
        await until(pilot, lambda: app._notifications, "a message")
        message = str(list(app._notifications)[-1].message)
        assert "f00006 has used 1% of its context" in message and "80 %" in message, message


async def test_a_long_lint_warning_wraps_in_the_warnings_tab():
    from tui_fakes import FakeEngine

    engine = FakeEngine(hits=[])
    tail = "the last words of a long warning"
    engine.lint_issues = [type("I", (), {"kind": "conflict", "path": "a.md", "other": None,
                                         "message": "word " * 60 + tail})()]
    app = CockpitApp(FakeManager(), engine)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("w")
        await until(pilot, lambda: app.screen.lint_issues is not None, "lint")
        await pilot.pause()
        shown = " ".join(line.strip() for line in screen_lines(app))
        assert tail in shown  # wrapped onto the next lines, not cut at the edge


async def test_a_command_the_sandbox_stopped_says_so_on_its_line():
    """`curl … | head` exits 0 (head's status): nothing was asked, but the sandbox blocked the
    network — the pane's line says so, not only the note the model reads."""
    mgr = FakeManager()
    app = CockpitApp(mgr, notify_os=False)
    content = ("curl: (6) Could not resolve host: pypi.org\n"
               "[the sandbox blocked network access (off for this session)]")
    events = [ev.SessionSpawned("f00003", "fetch", "m", "/ws", "/t", True),
              ev.ToolCall("f00003", "tu_1", "bash", {"command": "curl -sS https://pypi.org/x | head -c 300"}),
              ev.ToolResult("f00003", "tu_1", "bash", content, False)]
    async with app.run_test(size=SMALL) as pilot:
        body = await tool_line_shown(pilot, app, mgr, events)
        assert "[⛔ the sandbox blocked network access (off for this session)]" in body
