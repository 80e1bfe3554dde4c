"""What a session's backend costs at start: Cockpit's own loop vs Claude Code, against the stand-in.

For each backend, alternately (A B A B …), spawns the seed's question (two notes, a README that is
wrong) in one warm manager and measures, per session:

- ``first request``: from ``spawn`` to the first ``POST /v1/messages`` reaching the stand-in
  (preseed, worktree-less start; for claude-code also starting the ``claude`` process and its MCP
  handshake with our in-process memory server);
- ``done``: from ``spawn`` to ``SessionDone`` (one model turn: the answer comes from the preseed).

Then one claude-code session is left waiting for a follow-up and the ``claude`` process's peak
resident memory (``VmHWM`` in ``/proc``, Linux) is read: the memory each such session adds.

Usage (offline; needs the ``claude-code`` extra)::

    python bench/backend_bench.py [--runs 10]

Prints one JSON object: per backend the median, min and max of both figures in ms, and the
answer check. Limits: the stand-in answers at once, so this is the backend's own overhead, not a
model's latency; the machine is shared (2 cores), so spreads are wide: quote medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from seed_data import FACTS, QUESTION, write_seed  # noqa: E402
from standin import FactResponder, StandIn  # noqa: E402

from cockpit.runtime.spawn import SpawnSpec  # noqa: E402


class Timed(FactResponder):
    def __init__(self) -> None:
        super().__init__()
        self.first: list[float] = []

    def __call__(self, body: dict):
        self.first.append(time.monotonic())
        return super().__call__(body)


async def one(mgr, ws, backend: str, api: Timed) -> dict:
    from cockpit.events import SessionDone

    sub = mgr.subscribe()
    seen = len(api.first)
    t0 = time.monotonic()
    s = await mgr.spawn(SpawnSpec(QUESTION, workspace=ws, backend=backend))
    async for ev in sub:
        if isinstance(ev, SessionDone) and ev.session_id == s.id:
            break
    done = time.monotonic()
    sub.close()
    return {"first_ms": (api.first[seen] - t0) * 1000, "done_ms": (done - t0) * 1000,
            "ok": s.status.value == "done" and all(f in s.final_text for f in FACTS)}


def claude_peak_rss_mib() -> float | None:
    """VmHWM of this process's ``claude`` children (the largest), MiB; None when not found."""
    peaks = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(os.getpid()) and fields.get("Name", "").strip() == "claude":
            peaks.append(int(fields["VmHWM"].split()[0]) / 1024)
    return round(max(peaks), 1) if peaks else None


async def main(runs: int) -> dict:
    from cockpit.runtime import RuntimeConfig, SessionManager
    from memory import MemoryEngine

    root = Path(tempfile.mkdtemp(prefix="backend-bench-"))
    os.environ.update(COCKPIT_DATA_DIR=str(root / "data"), CLAUDE_CONFIG_DIR=str(root / "claude-config"),
                      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", ENABLE_TOOL_SEARCH="false")
    notes, ws = write_seed(root)
    engine = MemoryEngine(notes, index_path=root / "index.sqlite")
    engine.start_warmup()
    await asyncio.to_thread(engine.sync)
    await asyncio.to_thread(engine.wait_ready, 300)
    api = Timed()
    out: dict[str, list[dict]] = {"cockpit": [], "claude-code": []}
    with StandIn(api) as server:
        cfg = RuntimeConfig(api_key="bench-key", base_url=server.base_url, interactive=False, model="standin-model",
                            claude_setting_sources=())
        async with SessionManager(engine, cfg) as mgr:
            for backend in out:  # warm-up, not counted
                await one(mgr, ws, backend, api)
            for _ in range(runs):
                for backend in out:
                    out[backend].append(await one(mgr, ws, backend, api))
            s = await mgr.spawn(SpawnSpec(QUESTION, workspace=ws, backend="claude-code", interactive=True))
            await mgr.wait_idle(120)
            rss = claude_peak_rss_mib()
            await mgr.kill(s.id)
    engine.close()

    def stats(rows: list[dict], key: str) -> dict:
        xs = [r[key] for r in rows]
        return {"median": round(statistics.median(xs), 1), "min": round(min(xs), 1), "max": round(max(xs), 1)}

    per_backend = {b: {"first_request_ms": stats(rows, "first_ms"), "done_ms": stats(rows, "done_ms"),
                       "answers_ok": sum(r["ok"] for r in rows)} for b, rows in out.items()}
    return {"runs": runs, "claude_process_peak_rss_mib": rss, **per_backend}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    print(json.dumps(asyncio.run(main(args.runs)), indent=2))
