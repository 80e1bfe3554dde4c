"""Save ``docs/notes-strip.svg`` (and .png): a pane's notes strip as a user sees it — the priority
rule, the judged lines, the index of the rest with a superseded decision, the closest "why not",
and a miss counted from the session reading a note it was not given.

Real path: the app, the real ``SessionManager`` and ``MemoryEngine`` (packaged MiniLM, offline) on
a small folder of decisions, and the loopback Messages API stand-in (``tests/standin.py``) playing
a model that first reads a note with ``memory_get``, then answers. Rerun from the repo root::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/notes_strip_shot.py
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
sys.path.insert(0, str(ROOT / "bench"))

TASK = "make the orders API return errors in the format we agreed on"
NOTES = {
    "0003-error-envelope.md": "---\nname: 0003-error-envelope\ndescription: API errors use a custom {error, code} "
                              "JSON envelope\n---\n## Status\n\nSuperseded by [ADR-0012](0012-problem-json.md)\n\n"
                              "Errors are returned as {\"error\": message, \"code\": n}.\n",
    "0012-problem-json.md": "---\nname: errors-problem-json\ndescription: API errors are RFC 9457 problem+json "
                            "documents\nstatus: accepted\n---\nEvery error response is application/problem+json "
                            "with type, title, status and detail.\n",
    "money.md": "---\nname: money-decimal\ndescription: Money is Decimal with two places, never float\n"
                "priority: high\n---\nAll amounts use decimal.Decimal quantized to 0.01.\n",
    "orders.md": "---\nname: orders-service\ndescription: The orders API lives in services/orders and is FastAPI\n---\n"
                 "Routes are in services/orders/api.py; handlers raise OrdersError.\n",
    "logging.md": "---\nname: logging\ndescription: Logs are JSON lines with a request_id on every entry\n---\n"
                  "Use structlog.\n",
    "graphql.md": "---\nname: graphql\ndescription: We will not adopt GraphQL for the public API\nstatus: rejected\n"
                  "---\nDecided against in 2025.\n",
    **{f"ci-{i}.md": f"---\nname: ci-runner-{i}\ndescription: CI runner pool {i} builds branch group {i}\n---\n"
                     f"Runner pool {i}.\n" for i in range(12)},
}


def responder():
    from standin import Reply, ToolUse

    def answer(body):
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if step == 0:
            return Reply("Let me read the logging rules first.", [ToolUse("memory_get", {"name": "logging"})])
        return Reply("Errors will be application/problem+json (ADR-0012), raised from services/orders/api.py.")

    return answer


async def main(docs: Path) -> None:
    from screenshot import save, wait
    from standin import StandIn

    from cockpit.events import SessionStatus as S
    from cockpit.runtime import RuntimeConfig, SessionManager
    from cockpit.tui import CockpitApp
    from memory import MemoryEngine

    tmp = Path(tempfile.mkdtemp(prefix="cockpit-strip-"))
    os.environ["COCKPIT_DATA_DIR"] = str(tmp / "data")
    notes, ws = tmp / "notes", tmp / "ws"
    notes.mkdir()
    ws.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text)
    engine = MemoryEngine(notes, index_path=tmp / "index.sqlite")
    with StandIn(responder(), tokens_per_second=60) as api:
        config = RuntimeConfig(api_key="demo", base_url=api.base_url, model="claude-sonnet-4-5",
                               sessions_dir=tmp / "sessions", interactive=True, worktrees=False)
        app = CockpitApp(SessionManager(engine, config), engine, workspace=ws, notify_os=False,
                         sessions_dir=tmp / "sessions")
        async with app.run_test(size=(150, 34)) as pilot:
            await wait(pilot, lambda: app.memory.model_state == "ready" and app.memory.notes == len(NOTES))
            app.spawn(TASK)
            await wait(pilot, lambda: len(app.views) == 1 and next(iter(app.views.values())).status is S.WAITING)
            await wait(pilot, lambda: next(iter(app.views.values())).misses)
            await pilot.pause(0.5)
            app.clear_notifications()
            await pilot.pause(0.2)
            save(app, docs / "notes-strip.svg")
            await app.shutdown()
    engine.close()


if __name__ == "__main__":
    asyncio.run(main(ROOT / "docs"))
