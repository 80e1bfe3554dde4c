"""Save ``docs/three-agents.svg`` (and .png) and ``docs/three-agents-requests.md``: three panes
running three different agents on the same task — Cockpit's own loop, Claude Code over ACP
(``claude-agent-acp``) and OpenCode over ACP (``opencode acp``) — each with its notes strip, and
the first request of each as the model endpoint received it, with the block.

Real path: the app, the real ``SessionManager`` and ``MemoryEngine`` (packaged MiniLM, offline)
on the seed notes, the real agents from npm, and one loopback Messages API stand-in
(``tests/standin.py``) per session, so each agent's first request is its own. Needs
``claude-agent-acp`` and ``opencode`` on PATH (``cockpit agents install claude opencode``).
Rerun from the repo root::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/three_agents_shot.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from cockpit.runtime.spawn import SpawnSpec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

AGENTS = (("cockpit", "Cockpit's own loop"), ("acp:claude", "Claude Code over ACP"),
          ("acp:opencode", "OpenCode over ACP"))


def _first_user_texts(api, question: str) -> list[str]:
    for body in api.message_requests:
        content = body["messages"][0]["content"]
        texts = [content] if isinstance(content, str) else [b.get("text", "") for b in content
                                                               if b.get("type") == "text"]
        if any(question in t for t in texts):
            return texts
    return []


async def main(docs: Path) -> None:
    from helpers import make_repo
    from screenshot import save, wait
    from seed_data import QUESTION, write_seed
    from standin import FactResponder, StandIn

    from cockpit.events import SessionStatus as S
    from cockpit.runtime import RuntimeConfig, SessionManager
    from cockpit.tui import CockpitApp
    from memory import MemoryEngine

    tmp = Path(tempfile.mkdtemp(prefix="cockpit-three-"))
    os.environ["COCKPIT_DATA_DIR"] = str(tmp / "data")
    notes, seed_ws = write_seed(tmp)
    ws = make_repo(tmp / "repo", {"README.md": (seed_ws / "README.md").read_text()})
    engine = MemoryEngine(notes, index_path=tmp / "index.sqlite")
    apis = [StandIn(FactResponder(), tokens_per_second=80).start() for _ in AGENTS]
    base = dict(api_key="demo", model="claude-sonnet-4-5", sessions_dir=tmp / "sessions", interactive=True,
                worktrees_dir=tmp / "worktrees", acp_timeout=120.0)
    try:
        mgr = SessionManager(engine, RuntimeConfig(base_url=apis[0].base_url, **base))
        app = CockpitApp(mgr, engine, workspace=ws, notify_os=False, sessions_dir=tmp / "sessions")
        async with app.run_test(size=(216, 40)) as pilot:  # ≥ 64 columns a pane: its notes strip shows
            await wait(pilot, lambda: app.memory.model_state == "ready", 120)
            for (backend, _), api in zip(AGENTS, apis, strict=True):
                await mgr.spawn(SpawnSpec(QUESTION, workspace=ws, backend=backend),
                                config=RuntimeConfig(base_url=api.base_url, backend=backend, **base))
            await wait(pilot, lambda: len(app.views) == 3 and all(
                v.status in (S.WAITING, S.DONE, S.ERROR) for v in app.views.values()), 300)
            await pilot.pause(0.5)
            app.clear_notifications()
            await pilot.pause(0.2)
            save(app, docs / "three-agents.svg")
            sessions = list(mgr.sessions)
            await app.shutdown()
    finally:
        for api in apis:
            api.stop()
        engine.close()
    lines = ["# Three agents, one task, one preseed: the first request of each", "",
             "Written by `bench/three_agents_shot.py` (the screenshot beside it: `three-agents.svg`). "
             "The first request each agent sent to its model endpoint (a loopback Messages API stand-in "
             "per session), as the endpoint received it: the text blocks of the first user message. "
             "The `<project-notes>` block is there before the task, before the model's first turn.", ""]
    for (backend, title), api, s in zip(AGENTS, apis, sessions, strict=True):
        texts = _first_user_texts(api, QUESTION)
        lines += [f"## {title} (`--backend {backend}`): {s.status.value}", "",
                  f"Answer: {s.final_text.strip()!r}", "", "```json", json.dumps(texts, indent=1, ensure_ascii=False),
                  "```", ""]
    (docs / "three-agents-requests.md").write_text("\n".join(lines))
    print(f"wrote {docs / 'three-agents-requests.md'}")


if __name__ == "__main__":
    asyncio.run(main(ROOT / "docs"))
