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
