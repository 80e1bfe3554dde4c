"""Snapshots (pytest-textual-snapshot) of the main screen with several sessions, a pane asking
for approval, the diff screen, the review screen and the spawn dialog. Deterministic: a fake manager plays a fixed event script, fixed
ids, a fixed clock, fixed transcript files; no spinners or clocks on screen.

Update after an intended UI change: ``pytest tests/test_tui_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tui_fakes import NOTES, FakeEngine, FakeHit, FakeManager, session_script, settled

from cockpit import events as ev
from cockpit.events import SessionStatus as S
from cockpit.events import Usage, WorktreeRef
from cockpit.runtime.worktree import Diff, FileChange
from cockpit.tui import CockpitApp

SIZE = (180, 50)
FIXED_CLOCK = lambda *a: time.gmtime(a[0] if a else 0)  # noqa: E731


def _script(mgr: FakeManager) -> None:
    mgr.emit(*session_script(
        "a1b2c3", "what port does staging run on, which host, what command?", S.WAITING,
        text="Staging runs on **port 6443** on host `callisto`.\n\nDeploy with:\n\n```\nmake ship-v2\n```",
        notes=NOTES, tool=("read_file", {"path": "README.md"}, "# Demo\nStaging on 8080"),
    ))
    mgr.emit(*session_script("d4e5f6", "refactor the login flow", S.STREAMING,
                             text="Looking at `auth/login.py` first. The session check", usage=Usage(900, 120, 0, 1800),
                             cost=0.0041))
    mgr.emit(*session_script("0badf0", "summarise the open issues", S.ERROR, text="Partial answer",
                             usage=Usage(300, 10, 0, 0), cost=0.0011))
    mgr.emit(*session_script("77aa11", "write release notes for v2", S.DONE,
                             text="## Release notes\n\n- faster search\n- new deploy command", notes=NOTES[1:],
                             usage=Usage(2000, 600, 400, 1200), cost=None))


async def _settle(pilot, cond) -> None:
    for _ in range(200):
        if cond():
            break
        await pilot.pause(0.05)
    await settled(pilot, pilot.app)  # every event folded and painted (no clock)


def test_main_screen_with_several_sessions(snap_compare):
    mgr = FakeManager()
    app = CockpitApp(mgr, FakeEngine(), clock=FIXED_CLOCK, watch_notes=False)

    async def run_before(pilot):
        _script(mgr)
        await _settle(pilot, lambda: len(app.panes) == 4 and app.memory.last_sync)
        await pilot.press("1")
        await settled(pilot, app)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def _write_transcripts(folder: Path) -> None:
    folder.mkdir(parents=True)
    header = {"type": "header", "ts": "2026-01-01T00:00:00.000+00:00", "version": 1, "session_id": "a1b2c3",
              "task": "what port does staging run on?", "model": "claude-sonnet-4-5", "workspace": "/ws",
              "preseed_enabled": True, "top_k": 5, "started_at": "2026-01-01T00:00:00.000+00:00",
              "injected": [{"name": "staging-env", "score": 0.82, "priority": True,
                            "description": "staging host, port", "path": "/notes/staging.md"}],
              "preseed_text": "<project-notes>\n★ [staging-env] staging host, port — Staging listens on 6443.\n</project-notes>",
              "preseed_tokens": 31, "system_prompt": "…", "resumed_from": None}
    records = [
        header,
        {"type": "message", "role": "user", "content": [{"type": "text", "text": "what port does staging run on?"}]},
        {"type": "status", "status": "streaming", "detail": ""},
        {"type": "tool_call", "id": "tu_1", "name": "read_file", "input": {"path": "README.md"}},
        {"type": "tool_result", "id": "tu_1", "name": "read_file", "content": "# Demo\nStaging on 8080", "is_error": False},
        {"type": "usage", "usage": {"input": 1200, "output": 40, "cache_write": 900, "cache_read": 0},
         "cost_usd": 0.0076, "stop_reason": "tool_use", "model": "claude-sonnet-4-5"},
        {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Staging runs on port 6443 (the README is out of date)."}]},
        {"type": "end", "status": "done", "final_text": "Staging runs on port 6443.", "stop_reason": "end_turn",
         "usage": {"input": 1200, "output": 40, "cache_write": 900, "cache_read": 0}, "cost_usd": 0.0076},
    ]
    (folder / "20260101-000000-a1b2c3.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    other = dict(header, session_id="99ffee", task="list the TODOs in the repo", injected=[], preseed_text="",
                 preseed_tokens=0)
    (folder / "20260101-000100-99ffee.jsonl").write_text(
        json.dumps(other) + "\n" + json.dumps({"type": "end", "status": "killed", "cost_usd": 0.0002}) + "\n")


def test_review_screen(snap_compare, tmp_path):
    sessions = tmp_path / "sessions"
    _write_transcripts(sessions)
    app = CockpitApp(FakeManager(), None, sessions_dir=sessions, clock=FIXED_CLOCK)

    async def run_before(pilot):
        await pilot.press("r")
        screen = app.screen
        await _settle(pilot, lambda: getattr(screen, "text", "") and len(screen.infos) == 2)
        await pilot.press("down")
        await _settle(pilot, lambda: screen.shown.session_id == "a1b2c3" and "6443" in screen.text)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_spawn_dialog_with_notes_preview(snap_compare):
    hits = [FakeHit("staging-env", "staging host and port", "", True, 0.82, Path("/n/staging.md")),
            FakeHit("deploy-cmd", "the staging deploy command", "", False, 0.64, Path("/n/deploy.md"))]
    app = CockpitApp(FakeManager(), FakeEngine(hits=hits), clock=FIXED_CLOCK, watch_notes=False)

    async def run_before(pilot):
        await _settle(pilot, lambda: app.memory.last_sync)
        await pilot.press("n")
        dialog = app.screen
        dialog.query_one("#spawn-task").cursor_blink = False  # no blinking in a snapshot
        await pilot.press(*"deploy to staging")
        await _settle(pilot, lambda: dialog.preview_for == "deploy to staging")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


EDIT_DIFF = """--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,6 @@
 def add(a, b):
-    return a - b
+    \"\"\"The sum of a and b.\"\"\"
+    return a + b


 def sub(a, b):
"""
WT = WorktreeRef("/wt/c0ffee", "cockpit/c0ffee-fix-add", "3f2a9c1d0e4b5a6f7e8d9c0b1a2f3e4d5c6b7a89", "main")


def _coding_session(mgr: FakeManager) -> None:
    sid = "c0ffee"
    mgr.emit(
        ev.SessionSpawned(sid, "fix add() in calc.py and run the tests", "claude-sonnet-4-5", "/ws",
                          f"/t/{sid}.jsonl", True, permission_mode="default", cwd="/wt/c0ffee", worktree=WT,
                          placement="worktree"),
        ev.Preseeded(sid, NOTES[1:], 60, "<notes/>"),
        ev.StatusChanged(sid, S.STREAMING),
        ev.TextDelta(sid, "`add` subtracts. Let me look first."),
        ev.ToolCall(sid, "tu_1", "str_replace_based_edit_tool", {"command": "view", "path": "calc.py"}),
        ev.ToolResult(sid, "tu_1", "str_replace_based_edit_tool", "1\tdef add(a, b):\n2\t    return a - b", False),
        ev.StatusChanged(sid, S.STREAMING),
        ev.TextDelta(sid, "Fixing it and documenting it."),
        ev.ToolCall(sid, "tu_2", "str_replace_based_edit_tool",
                    {"command": "str_replace", "path": "calc.py", "old_str": "    return a - b",
                     "new_str": "    \"\"\"The sum of a and b.\"\"\"\n    return a + b"}),
        ev.ApprovalRequested(sid, "tu_2", "str_replace_based_edit_tool", "edit", "str_replace calc.py (+2 -1)",
                             EDIT_DIFF, "Edit"),
        ev.UsageUpdate(sid, Usage(900, 80, 1500, 0), Usage(900, 80, 1500, 0), 0.0072, 0.0072, 2400, 200_000),
        ev.StatusChanged(sid, S.NEEDS_APPROVAL, "str_replace calc.py (+2 -1)"),
    )


def _quiet_app() -> tuple[FakeManager, CockpitApp]:
    """An app over a fake runtime, with no OS notifications and no notes watcher."""
    mgr = FakeManager()
    return mgr, CockpitApp(mgr, FakeEngine(), clock=FIXED_CLOCK, watch_notes=False, notify_os=False)


def _asking_beside_an_answer(mgr: FakeManager) -> None:
    """The coding session asking to approve its edit, and a question answered from the notes."""
    _coding_session(mgr)
    mgr.emit(*session_script("a1b2c3", "what port does staging run on?", S.WAITING,
                             text="Staging runs on **port 6443**.", notes=NOTES))


def test_a_pane_asking_for_approval(snap_compare):
    mgr, app = _quiet_app()

    async def run_before(pilot):
        _asking_beside_an_answer(mgr)
        await _settle(pilot, lambda: len(app.panes) == 2 and app.memory.last_sync)
        await pilot.press("1")
        await settled(pilot, app)

    assert snap_compare(app, terminal_size=(140, 36), run_before=run_before)


def test_the_diff_screen(snap_compare):
    mgr, app = _quiet_app()
    test_patch = ("diff --git a/test_calc.py b/test_calc.py\nnew file mode 100644\n--- /dev/null\n"
                  "+++ b/test_calc.py\n@@ -0,0 +1,5 @@\n+from calc import add\n+\n+\n+def test_add():\n"
                  "+    assert add(2, 3) == 5\n")
    mgr.diffs["c0ffee"] = Diff((
        FileChange("calc.py", "M", 2, 1, "diff --git a/calc.py b/calc.py\n" + EDIT_DIFF),
        FileChange("test_calc.py", "A", 5, 0, test_patch),
    ))

    async def run_before(pilot):
        _coding_session(mgr)
        await _settle(pilot, lambda: len(app.panes) == 1)
        await pilot.press("d")
        screen = app.screen
        await _settle(pilot, lambda: getattr(screen, "diff", None) is not None)
        await pilot.press("shift+down")
        await settled(pilot, app)

    assert snap_compare(app, terminal_size=(140, 30), run_before=run_before)


def test_the_narrow_layout_on_a_phone(snap_compare):
    """A phone's width (cockpit web): the sessions with their states, the asking one's pane alone,
    its approve / deny buttons."""
    from cockpit.tui.widgets.narrow import SessionRow

    mgr, app = _quiet_app()

    async def run_before(pilot):
        _asking_beside_an_answer(mgr)
        mgr.emit(*session_script("d4e5f6", "refactor the login flow", S.STREAMING, text="Looking at the session check"))
        await _settle(pilot, lambda: len(app.panes) == 3 and len(app.screen.query(SessionRow)) == 3
                      and app.memory.last_sync)
        await pilot.press("1")
        await _settle(pilot, lambda: app.screen.query_one("#bar-allow").display)
        app.clear_notifications()  # the "waiting for you" toast would cover the buttons
        await settled(pilot, app)

    assert snap_compare(app, terminal_size=(44, 40), run_before=run_before)
