"""TUI responsiveness benchmark (issue #4): nine sessions streaming while keys are pressed.

Usage (from the repo root)::

    .venv/bin/python bench/tui_bench.py                 # 9 sessions × ~50 tokens/s × 30 s
    .venv/bin/python bench/tui_bench.py --seconds 10    # shorter
    .venv/bin/python bench/tui_bench.py --json          # machine-readable result

Design
------
* **Real path.** The app (``CockpitApp``) runs inside ``App.run_test`` (headless, 200×50) with the
  real ``SessionManager`` and the real ``anthropic`` client, talking HTTP + SSE to the loopback
  stand-in (``tests/standin.py``). The stand-in runs in a **separate process** (this script with
  ``--serve``) so its CPU is not counted as the app's; it answers every request with a long
  reply paced at ``--tps`` text deltas per second (one delta ≈ one word ≈ one token).
* **Key-to-screen latency.** Every ~``--key-interval`` s a ``tab`` key event is handed to the
  app's driver queue exactly as a terminal key would be (``driver.send_message``); the clock
  stops when the first screen update after the selection moved has been composed and serialised to
  terminal escape codes (``App._display`` is wrapped to also run ``render_segments``, the work a
  real terminal write needs; headless mode would otherwise skip it). p50/p95/max reported.
* **CPU** = process CPU time (user+sys, all threads: UI, runtime, SDK, SSE parsing) ÷ wall
  time over the streaming window, in cores (1.0 = one core busy). **Peak RSS** = ``VmHWM``.
* No memory engine by default (``--engine`` adds a real ``MemoryEngine`` on a tiny notes
  folder, which loads torch + MiniLM: a much larger RSS, same UI work).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))


def serve(port: int, tps: float, words: int) -> None:
    """The stand-in process: every request gets a long paced reply."""
    from standin import Reply, StandIn

    text = " ".join(f"word{i % 97}" + ("\n\n" if i % 40 == 39 else "") for i in range(words))
    server = StandIn(lambda body: Reply(text), tokens_per_second=tps, port=port).start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))
    return values[k]


async def bench(base_url: str, seconds: float, sessions: int, key_interval: float, engine_on: bool) -> dict:
    from textual import events

    from cockpit.events import SessionStatus as S
    from cockpit.runtime import RuntimeConfig, SessionManager
    from cockpit.tui import CockpitApp

    tmp = Path(tempfile.mkdtemp(prefix="tui-bench-"))
    os.environ["COCKPIT_DATA_DIR"] = str(tmp / "data")
    engine = None
    if engine_on:
        from memory import MemoryEngine

        notes = tmp / "notes"
        notes.mkdir()
        (notes / "a.md").write_text("---\nname: a\ndescription: staging port 6443\n---\nport 6443\n")
        engine = MemoryEngine(notes, index_path=tmp / "index.sqlite")
    config = RuntimeConfig(api_key="bench", base_url=base_url, model="claude-sonnet-4-5",
                           max_tokens=64000, sessions_dir=tmp / "sessions", interactive=True)
    mgr = SessionManager(engine, config)
    app = CockpitApp(mgr, engine, workspace=ROOT)

    pending: dict = {}
    latencies: list[float] = []
    original_display = app._display

    def display(screen, renderable):
        original_display(screen, renderable)
        if renderable is not None and hasattr(renderable, "render_segments"):
            renderable.render_segments(app.console)  # the escape codes a terminal write needs
        target = pending.get("target")
        if target is not None and getattr(app.screen, "selected", None) is target:
            latencies.append(time.perf_counter() - pending.pop("t0"))
            pending.clear()

    app._display = display  # type: ignore[method-assign]

    async with app.run_test(size=(200, 50)) as pilot:
        for n in range(sessions):
            app.spawn(f"benchmark session {n + 1}: stream a long answer")
        while not (len(app.views) == sessions and all(v.status is S.STREAMING for v in app.views.values())):
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # let the streams settle
        grid = app.screen.query_one("#grid")
        start_text = sum(len(b.text) for v in app.views.values() for b in v.blocks)
        start_events = app.events_seen
        profile = None
        if os.environ.get("TUI_BENCH_PROFILE"):  # developer aid: cProfile of the measured window
            import cProfile

            profile = cProfile.Profile()
            profile.enable()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        presses = 0
        while time.perf_counter() - wall0 < seconds:
            panes = grid.panes
            current = app.screen.selected
            index = panes.index(current) if current in panes else -1
            pending["target"] = panes[(index + 1) % len(panes)]
            pending["t0"] = time.perf_counter()
            event = events.Key("tab", None)
            event.set_sender(app)
            app._driver.send_message(event)
            presses += 1
            await asyncio.sleep(key_interval)
        cpu = time.process_time() - cpu0
        wall = time.perf_counter() - wall0
        pending.clear()
        if profile is not None:
            profile.disable()
            profile.dump_stats(os.environ["TUI_BENCH_PROFILE"])
        await asyncio.sleep(1.0)  # drain queued keys before closing
        statuses = [v.status.value for v in app.views.values()]
        end_text = sum(len(b.text) for v in app.views.values() for b in v.blocks)
        events_seen = app.events_seen - start_events
        await app.shutdown()
    if engine is not None:
        engine.close()
    return {
        "sessions": sessions,
        "seconds": round(wall, 1),
        "key_presses": presses,
        "key_to_screen_ms": {
            "p50": round(statistics.median(latencies) * 1000, 1),
            "p95": round(pct(latencies, 95) * 1000, 1),
            "max": round(max(latencies) * 1000, 1),
            "n": len(latencies),
        },
        "cpu_cores": round(cpu / wall, 3),
        "peak_rss_mb": round(vm_hwm_mb(), 1),
        "events_per_s": round(events_seen / wall),
        "tokens_per_s_per_session": round(events_seen / wall / sessions, 1),
        "text_chars_streamed": end_text - start_text,
        "statuses_at_end": sorted(set(statuses)),
        "engine": engine_on,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--sessions", type=int, default=9)
    ap.add_argument("--tps", type=float, default=50.0, help="tokens per second per session")
    ap.add_argument("--key-interval", type=float, default=0.15, help="seconds between key presses")
    ap.add_argument("--engine", action="store_true", help="also run a real MemoryEngine (loads torch)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    ap.add_argument("--words", type=int, default=4000, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve is not None:
        serve(args.serve, args.tps, args.words)
        return 0
    words = int(args.tps * (args.seconds + 20))
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "0", "--tps", str(args.tps), "--words", str(words)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        base_url = server.stdout.readline().strip()
        result = asyncio.run(bench(base_url, args.seconds, args.sessions, args.key_interval, args.engine))
    finally:
        server.terminate()
        server.wait(10)
    result["tps_target"] = args.tps
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        k = result["key_to_screen_ms"]
        print(f"{result['sessions']} sessions streaming at ~{args.tps:g} tokens/s for {result['seconds']} s "
              f"(measured {result['tokens_per_s_per_session']} deltas/s/session)")
        print(f"key-to-screen: p50 {k['p50']} ms  p95 {k['p95']} ms  max {k['max']} ms  (n={k['n']})")
        print(f"CPU {result['cpu_cores']} cores   peak RSS {result['peak_rss_mb']} MB   "
              f"events {result['events_per_s']}/s   engine={'on' if args.engine else 'off'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
