"""Snapshots (pytest-textual-snapshot) of the main screen with several sessions, the review
screen and the spawn dialog. Deterministic: a fake manager plays a fixed event script, fixed
ids, a fixed clock, fixed transcript files; no spinners or clocks on screen.

Update after an intended UI change: ``pytest tests/test_tui_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tui_fakes import NOTES, FakeEngine, FakeHit, FakeManager, session_script

from cockpit.events import SessionStatus as S, Usage
from cockpit.tui import CockpitApp

SIZE = (180, 50)
FIXED_CLOCK = lambda *a: time.gmtime(0)  # noqa: E731


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
    await pilot.pause(0.3)  # two flush ticks


def test_main_screen_with_several_sessions(snap_compare):
    mgr = FakeManager()
    app = CockpitApp(mgr, FakeEngine(), clock=FIXED_CLOCK, watch_notes=False)

    async def run_before(pilot):
        _script(mgr)
        await _settle(pilot, lambda: len(app.panes) == 4 and app.memory.last_sync)
        await pilot.press("1")
        await pilot.pause(0.2)

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
