"""Save the README's pictures from real runs, as SVG and PNG, into ``docs/``:

- ``screenshot.svg``: the main screen — sessions answering from the notes they were given, one
  coding session asking for approval, one still streaming;
- ``approval.svg``: a coding session's pane asking to approve an edit (the diff in the pane);
- ``diff.svg``: the diff screen of a coding session that fixed a bug and added a test.

Real path: the app with the real ``SessionManager`` and ``MemoryEngine`` (the packaged MiniLM,
offline) on a small demo notes folder, a temp git repository as the workspace (each coding
session in its own worktree), and the loopback Messages API stand-in (``tests/standin.py``):
questions get its FactResponder (it answers from the notes it was given), "fix …" tasks a
scripted coding turn sequence (view, str_replace, create a test, run it, answer) that goes
through the real tools, permission checks and worktrees. Rerun from the repo root::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/screenshot.py

Everything it writes besides the images lives in a temp folder.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

NOTES = {
    "staging.md": "---\nname: staging-env\ndescription: Staging runs on port 6443; deploy host is callisto\n"
                  "priority: high\n---\nStaging listens on port 6443. We deploy to the host callisto.\n",
    "deploy.md": "---\nname: deploy-command\ndescription: Deploy with make ship-v2 from the repo root\n---\n"
                 "The deploy command is `make ship-v2`; it builds, tags and rolls out.\n",
    "oncall.md": "---\nname: oncall-rota\ndescription: Who is on call and how to page them\n---\n"
                 "Page the on-call engineer through the #ops-page channel; rota in ops/rota.md.\n",
    "release.md": "---\nname: release-checklist\ndescription: Steps before a release is tagged\n---\n"
                  "Run the full test suite, update CHANGELOG.md, then tag vX.Y.Z.\n",
    "tests.md": "---\nname: test-layout\ndescription: Tests live beside the code as test_*.py, runnable alone\n---\n"
                "Each module has a test_<module>.py next to it that runs with plain python3.\n",
}
QUESTIONS = [
    "what port does staging run on, which host do we deploy to, and with what command?",
    "how do I page the on-call engineer?",
    "what must happen before a release is tagged?",
    "summarise the deploy process for a new engineer",
]
FIX = "fix the add function in calc.py and add a test for it"
EDIT = "str_replace_based_edit_tool"
CALC = 'def add(a, b):\n    """The sum of a and b."""\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n'


def coding_turns():
    from standin import Reply, ToolUse

    test = ("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n    assert add(-1, 1) == 0\n\n\n"
            "if __name__ == \"__main__\":\n    test_add()\n    print(\"test_add passed\")\n")
    return [
        Reply("Let me read `calc.py` first.", [ToolUse(EDIT, {"command": "view", "path": "calc.py"})]),
        Reply("`add` subtracts instead of adding. Fixing it.",
              [ToolUse(EDIT, {"command": "str_replace", "path": "calc.py",
                              "old_str": '    """The sum of a and b."""\n    return a - b',
                              "new_str": '    """The sum of a and b."""\n    return a + b'})]),
        Reply("Adding a test beside it, as the notes say.",
              [ToolUse(EDIT, {"command": "create", "path": "test_calc.py", "file_text": test})]),
        Reply("Running it.", [ToolUse("bash", {"command": "python3 test_calc.py"})]),
        Reply("Fixed: `add` now returns `a + b`; `test_calc.py` checks it and passes."),
    ]


TODO = "list every TODO in the workspace"


def todo_turns():
    from standin import Reply, ToolUse

    long = ("I read the files in the workspace looking for TODO and FIXME markers, and for work the "
            "README promises but the code does not do yet.\n\n- `calc.py`: no marker, but `add` looks wrong "
            "(it subtracts), which another session is fixing.\n- `README.md`: the deploy command it names "
            "is out of date; the project notes say `make ship-v2`.\n\nNothing else is marked.")
    return [Reply("Reading the files first.", [ToolUse(EDIT, {"command": "view", "path": "README.md"})]),
            Reply(long)]


def responder():
    from standin import FactResponder

    facts = FactResponder()
    script = coding_turns()

    def answer(body):
        first = body["messages"][0]["content"]
        text = first[-1]["text"] if isinstance(first, list) else str(first)
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if FIX in text:
            return script[min(step, len(script) - 1)]
        if TODO in text:
            return todo_turns()[min(step, 1)]
        return facts(body)

    return answer


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_workspace(ws: Path) -> None:
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "user.email", "demo@example.com")
    git(ws, "config", "user.name", "Demo")
    (ws / "README.md").write_text("# Demo\nStaging runs on port 8080 on host io; deploy with make deploy.\n")
    (ws / "calc.py").write_text(CALC)
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "calc")


async def wait(pilot, cond, timeout: float = 60) -> None:
    for _ in range(int(timeout / 0.1)):
        if cond():
            return
        await pilot.pause(0.1)
    raise TimeoutError("the scene did not settle")


def save(app, out: Path) -> None:
    app.save_screenshot(out.name, path=str(out.parent))
    try:
        import cairosvg

        cairosvg.svg2png(url=str(out), write_to=str(out.with_suffix(".png")))
    except ImportError:
        pass
    print(f"wrote {out}")


async def main(docs: Path) -> None:
    from standin import StandIn

    from cockpit.events import SessionStatus as S
    from cockpit.runtime import RuntimeConfig, SessionManager
    from cockpit.runtime.spawn import SpawnSpec
    from cockpit.tui import CockpitApp
    from memory import MemoryEngine

    tmp = Path(tempfile.mkdtemp(prefix="cockpit-shot-"))
    os.environ["COCKPIT_DATA_DIR"] = str(tmp / "data")
    notes, ws = tmp / "notes", tmp / "workspace"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text)
    make_workspace(ws)
    engine = MemoryEngine(notes, index_path=tmp / "index.sqlite")

    def app_for(api) -> CockpitApp:
        config = RuntimeConfig(api_key="demo", base_url=api.base_url, model="claude-sonnet-4-5",
                               sessions_dir=tmp / "sessions", interactive=True)
        return CockpitApp(SessionManager(engine, config), engine, workspace=ws, notify_os=False,
                          sessions_dir=tmp / "sessions")

    def coding(app):
        return next((v for v in app.views.values() if v.task == FIX), None)

    # 1. the main screen
    with StandIn(responder(), tokens_per_second=12) as api:
        app = app_for(api)
        async with app.run_test(size=(200, 52)) as pilot:
            await wait(pilot, lambda: app.memory.model_state == "ready" and app.memory.notes == len(NOTES))
            for task in QUESTIONS:
                app.spawn(task)
                await pilot.pause(0.3)
            app.spawn(SpawnSpec(FIX, permission_mode="default"))
            await wait(pilot, lambda: len(app.views) == 5 and all(
                v.status in (S.WAITING, S.NEEDS_APPROVAL) for v in app.views.values()))
            await wait(pilot, lambda: coding(app).pending is not None and coding(app).pending.kind == "edit")
            app.spawn(TODO)  # still streaming in the picture
            todo = lambda: next((v for v in app.views.values() if "TODO" in v.task), None)  # noqa: E731
            await wait(pilot, lambda: todo() is not None and todo().status is S.STREAMING and any(
                b.kind == "text" and len(b.text) > 40 for b in todo().blocks[todo().turn_start:]))
            await pilot.press("1")
            await pilot.pause(0.5)
            app.clear_notifications()
            await pilot.pause(0.2)
            save(app, docs / "screenshot.svg")
            await app.shutdown()

    # 2. a pane asking for approval
    with StandIn(responder(), tokens_per_second=40) as api:
        app = app_for(api)
        async with app.run_test(size=(150, 40)) as pilot:
            await wait(pilot, lambda: app.memory.model_state == "ready" and app.memory.notes == len(NOTES))
            app.spawn(SpawnSpec(FIX, permission_mode="default"))
            await wait(pilot, lambda: coding(app) is not None and coding(app).pending is not None)
            app.spawn(QUESTIONS[0])
            await wait(pilot, lambda: len(app.views) == 2 and all(
                v.status in (S.WAITING, S.NEEDS_APPROVAL) for v in app.views.values()))
            await pilot.press("1")
            await pilot.pause(0.5)
            app.clear_notifications()
            await pilot.pause(0.2)
            save(app, docs / "approval.svg")
            await app.shutdown()

    # 3. the diff screen after the session did its work (edits allowed, the command approved)
    with StandIn(responder()) as api:
        app = app_for(api)
        async with app.run_test(size=(150, 40)) as pilot:
            await wait(pilot, lambda: app.memory.model_state == "ready")
            app.spawn(SpawnSpec(FIX, permission_mode="acceptEdits"))
            await wait(pilot, lambda: coding(app) is not None and coding(app).pending is not None)
            await pilot.press("y")  # allow the test run once
            await wait(pilot, lambda: coding(app).status is S.WAITING and coding(app).changes is not None)
            await pilot.press("d")
            screen = app.screen
            await wait(pilot, lambda: getattr(screen, "diff", None) is not None)
            await pilot.press("shift+down")
            await pilot.pause(0.3)
            app.clear_notifications()
            await pilot.pause(0.2)
            save(app, docs / "diff.svg")
            await app.shutdown()
    engine.close()


if __name__ == "__main__":
    asyncio.run(main(ROOT / "docs"))
