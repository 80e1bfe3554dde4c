"""The ship demo of ``docs/ship-demo.md`` (issue 22), rerunnable from a checkout: three sessions of
Cockpit's own loop on one small repository, then the diff screen's check, conflict radar, merge,
send back and keep — pressed by Textual's pilot on the real app, in this process (no server).

    python bench/ship_demo.py setup DIR          # builds the demo in DIR (an earlier one's files replaced)
    python tests/standin.py --port 18822 --script bench/ship_demo_turns.json --log DIR/standin.log &
    python bench/ship_demo.py app DIR            # the app against the stand-in; prints what each key did
    python bench/ship_demo.py story TRANSCRIPT   # a session's transcript, told short

``setup`` makes ``DIR/repo`` (``calc.py``, whose ``add`` subtracts, and ``test_calc.py``, which
fails on ``main``), a bare ``DIR/origin.git`` it is pushed to, ``DIR/data/config.toml`` (the check
command), ``DIR/bin/gh`` (a fake ``gh`` that appends its arguments to ``DIR/gh-calls.txt`` as a
JSON line and prints a pull request's URL) and an empty ``DIR/notes``. ``app`` uses
``DIR/data`` as Cockpit's data folder and saves the diff screen as ``DIR/ship-diff.svg``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TASKS = ["fix add() in calc.py", "make add() take any number of arguments", "add a sub() function to calc.py"]
TURNS = len(json.loads((ROOT / "bench" / "ship_demo_turns.json").read_text(encoding="utf-8")))
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST_CALC = 'from calc import add, mul\n\nassert add(2, 3) == 5, add(2, 3)\nassert mul(2, 3) == 6\nprint("ok")\n'
LEFT = ("repo", "origin.git", "data", "bin", "notes", "gh-calls.txt", "standin.log", "ship-diff.svg")
FAKE_GH = """#!/usr/bin/env python3
import json, sys
with open({calls!r}, "a") as fh:
    fh.write(json.dumps(sys.argv[1:]) + "\\n")
print("https://github.com/example/calc/pull/1")
"""


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def setup(demo: Path) -> None:
    for name in LEFT:  # what an earlier run left; nothing else in DIR is touched
        shutil.rmtree(demo / name, ignore_errors=True)
        (demo / name).unlink(missing_ok=True)
    repo, origin = demo / "repo", demo / "origin.git"
    repo.mkdir(parents=True)
    git(demo, "init", "-q", "--bare", "-b", "main", str(origin))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "Dev")
    for name, text in {"calc.py": CALC, "test_calc.py": TEST_CALC, ".gitignore": "__pycache__/\n"}.items():
        (repo / name).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "calc: add() is wrong")
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "push", "-q", "origin", "main")
    (demo / "data").mkdir()
    (demo / "data" / "config.toml").write_text('check_command = "python3 test_calc.py"\n')
    (demo / "bin").mkdir()
    (demo / "bin" / "gh").write_text(FAKE_GH.format(calls=str(demo / "gh-calls.txt")))
    (demo / "bin" / "gh").chmod(0o755)
    (demo / "notes").mkdir()  # empty: these sessions need no notes
    print(f"set up {demo}: repo, origin.git, data/config.toml, bin/gh, notes")


async def wait(pilot, cond, timeout: float = 90) -> None:
    for _ in range(int(timeout / 0.1)):
        if cond():
            return
        await pilot.pause(0.1)
    raise TimeoutError(f"the demo did not get there: {cond}")


async def drive(demo: Path, base_url: str) -> None:
    from cockpit.events import SessionStatus as S
    from cockpit.runtime import SessionManager, load_config
    from cockpit.runtime.spawn import SpawnSpec
    from cockpit.tui import CockpitApp
    from cockpit.tui.screens.diff import DiffScreen
    from memory import MemoryEngine

    out, log = demo / "ship-diff.svg", demo / "standin.log"
    config = load_config({"base_url": base_url, "interactive": True, "permission_mode": "auto"})
    engine = MemoryEngine(demo / "notes", index_path=demo / "data" / "index.sqlite")
    app = CockpitApp(SessionManager(engine, config), engine, workspace=demo / "repo", notify_os=False,
                     sessions_dir=config.resolved_sessions_dir())
    view = lambda i: next((v for v in app.views.values() if v.task == TASKS[i]), None)  # noqa: E731
    async with app.run_test(size=(150, 40)) as pilot:
        for i in range(3):  # one after the other: the scripted turns are one queue
            app.spawn(SpawnSpec(TASKS[i]))
            await wait(pilot, lambda i=i: view(i) is not None and view(i).status is S.WAITING and view(i).changes)
        ids = [view(i).session_id for i in range(3)]
        print("sessions:", dict(zip(ids, TASKS, strict=True)))

        async def diff(i):
            app.open_diff(ids[i])
            await wait(pilot, lambda: isinstance(app.screen, DiffScreen) and app.screen.diff is not None)
            return app.screen

        async def press(key: str, done) -> None:  # a key, then what it started is done
            await pilot.press(key)
            await wait(pilot, done)

        async def merge(screen):  # m: the screen closes on a merge; back to the grid either way
            await press("m", lambda: not isinstance(app.screen, DiffScreen) or screen.result)
            await pilot.pause(1)
            if isinstance(app.screen, DiffScreen):
                await pilot.press("escape")
            return screen.result

        # 1. A: check (t), the radar marks calc.py as also changed by B and C; screenshot; merge (m)
        screen = await diff(0)
        await press("t", lambda: screen.check_state in ("passed", "failed", "error", "conflict"))
        await pilot.pause(0.5)
        app.clear_notifications()
        await pilot.pause(0.2)
        app.save_screenshot(out.name, path=str(out.parent))
        print("A check:", screen.check_state)
        print("A merge:", await merge(screen))
        # 2. B: merge (m) conflicts; send back (b); the session resolves; merge (m) again
        screen = await diff(1)
        await press("m", lambda: screen.result)
        print("B merge 1:", screen.result)
        await press("t", lambda: screen.check_state not in ("", "running"))
        print("B check:", screen.check_state)
        # B has answered when the stand-in has served every scripted turn
        await press("b", lambda: len(log.read_text().splitlines()) >= TURNS and view(1).status is S.WAITING)
        await pilot.pause(1)
        print("B after send back:", view(1).status)
        await pilot.press("escape")
        print("B merge 2:", await merge(await diff(1)))
        # 3. C: keep the branch (k)
        screen = await diff(2)
        await press("k", lambda: screen.result)
        print("C keep:", screen.result)
        await app.shutdown()
    engine.close()


def story(path: Path) -> None:
    """What was said, run and answered, the end and the review: one line (or block) each."""
    from cockpit import events as ev
    from cockpit.runtime import read_events

    for e in read_events(path):
        if isinstance(e, ev.ConversationMessage):
            blocks = e.content if isinstance(e.content, list) else [{"type": "text", "text": str(e.content)}]
            for b in blocks:
                if b.get("type") == "text" and not b["text"].startswith("<env>"):
                    print(f"[{e.role}] {b['text']}")
        elif isinstance(e, ev.ToolCall):
            print(f"[tool_call] {e.name}: {e.input.get('command')} {e.input.get('path', '')}".rstrip())
        elif isinstance(e, ev.ToolResult):
            first, *rest = e.content.strip().splitlines() or [""]
            print("\n".join([f"[tool_result] {first}", *(f"{'':14}{line}".rstrip() for line in rest)]))
        elif isinstance(e, ev.SessionDone):
            print(f"[end] {e.status.value}: {e.final_text}")
        elif isinstance(e, ev.Reviewed):
            print(f"[review] {e.action} ({'ok' if e.ok else 'refused'}): {e.message}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("setup", help="build the demo in DIR (an earlier one's files replaced)").add_argument("dir", type=Path)
    app = sub.add_parser("app", help="the app against the stand-in, driven by the pilot")
    app.add_argument("dir", type=Path)
    app.add_argument("--base-url", default="http://127.0.0.1:18822", help="the stand-in (default: %(default)s)")
    sub.add_parser("story", help="a session's transcript, told short").add_argument("transcript", type=Path)
    args = ap.parse_args(argv)
    if args.command == "setup":
        setup(args.dir.resolve())
    elif args.command == "app":
        demo = args.dir.resolve()
        if not (demo / "repo").is_dir():
            raise SystemExit(f"ship_demo: no demo in {demo}: run `python bench/ship_demo.py setup {args.dir}` first")
        os.environ["COCKPIT_DATA_DIR"] = str(demo / "data")
        asyncio.run(drive(demo, args.base_url))
    else:
        if not args.transcript.is_file():
            raise SystemExit(f"ship_demo: no transcript at {args.transcript}")
        try:
            story(args.transcript)
        except ValueError as exc:  # not a transcript
            raise SystemExit(f"ship_demo: {exc}") from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
