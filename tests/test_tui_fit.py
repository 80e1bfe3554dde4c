"""What a fresh user sees in an 80×24 terminal: every key and answer that matters is on screen,
no label cut mid-word. Pilot tests over the fake manager, read as the composed frame's text."""

from __future__ import annotations

from textual.widgets import Button
from tui_fakes import FakeManager, screen_lines, settled, until

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
        mgr.emit(*events)
        await until(pilot, lambda: "f00002" in app.panes and any(b.result for b in app.views["f00002"].blocks),
                    "the result")
        await settled(pilot, app)
        body = " ".join(app.panes["f00002"].query_one("#pane-body").plain_text().split())  # unwrapped
        assert "[✓ allowed once · ran outside the sandbox] → ok" in body
        assert "Read-only" not in body
        assert app.views["f00002"].blocks[-1].result == content  # the sandboxed failure stays in the full result
    out = io.StringIO()
    for e in events:
        _Shower("f00002", out).show(e)
    assert "→ ran outside the sandbox: ok" in out.getvalue() and "Read-only" not in out.getvalue()


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
