"""Save ``docs/screenshot.svg`` (and ``docs/screenshot.png``): the main screen from a real run.

Real path: the app with the real ``SessionManager`` and ``MemoryEngine`` (the packaged MiniLM,
offline) on a small demo notes folder, sessions streaming from the loopback Messages API
stand-in (``tests/standin.py``, FactResponder: it answers from the notes it was given).
Rerun from the repo root::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/screenshot.py

Everything it writes besides the two images lives in a temp folder.
"""

from __future__ import annotations

import asyncio
import os
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
}
TASKS = [
    "what port does staging run on, which host do we deploy to, and with what command?",
    "how do I page the on-call engineer?",
    "what must happen before a release is tagged?",
    "summarise the deploy process for a new engineer",
    "which host do we deploy staging to?",
]


async def main(out: Path) -> None:
    from standin import StandIn

    from cockpit.events import SessionStatus as S
    from cockpit.runtime import RuntimeConfig, SessionManager
    from cockpit.tui import CockpitApp
    from memory import MemoryEngine

    tmp = Path(tempfile.mkdtemp(prefix="cockpit-shot-"))
    os.environ["COCKPIT_DATA_DIR"] = str(tmp / "data")
    notes, ws = tmp / "notes", tmp / "workspace"
    notes.mkdir()
    ws.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text)
    (ws / "README.md").write_text("# Demo\nStaging runs on port 8080 on host io; deploy with make deploy.\n")
    engine = MemoryEngine(notes, index_path=tmp / "index.sqlite")
    with StandIn(tokens_per_second=12) as api:
        config = RuntimeConfig(api_key="demo", base_url=api.base_url, model="claude-sonnet-4-5",
                               sessions_dir=tmp / "sessions", interactive=True)
        mgr = SessionManager(engine, config)
        app = CockpitApp(mgr, engine, workspace=ws)
        async with app.run_test(size=(200, 52)) as pilot:
            while app.memory.model_state != "ready" or app.memory.notes < len(NOTES):
                await pilot.pause(0.1)
            for task in TASKS:
                app.spawn(task)
                await pilot.pause(0.3)
            while not all(v.status in (S.WAITING, S.DONE) for v in app.views.values()) or len(app.views) < len(TASKS):
                await pilot.pause(0.1)
            app.spawn("list every TODO in the workspace")  # still streaming in the picture
            await pilot.pause(2.5)
            await pilot.press("1")
            await pilot.pause(0.5)
            app.save_screenshot(str(out.name), path=str(out.parent))
            await app.shutdown()
    engine.close()


if __name__ == "__main__":
    target = ROOT / "docs" / "screenshot.svg"
    asyncio.run(main(target))
    try:
        import cairosvg

        cairosvg.svg2png(url=str(target), write_to=str(target.with_suffix(".png")))
    except ImportError:
        pass
    print(f"wrote {target}")
