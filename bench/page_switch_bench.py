"""The CPU time of a page switch in the TUI (issue 24), apart from any load on the machine.

Usage (from the repo root)::

    .venv/bin/python bench/page_switch_bench.py              # 30 sessions, 24 page switches
    .venv/bin/python bench/page_switch_bench.py --json

Thirty sessions (a fake runtime: no server, no model, nothing streaming while measured) each
with a long answer fill four pages of a 200×50 headless app. Before each switch every session
gets more answer text (as streaming would: the panes out of sight are stale), the app settles,
then a ``tab`` from the last pane of a page shows the next page. Measured in the app's thread
(``time.thread_time``: CPU time, which other processes on the box do not inflate):

* **key → its frame**: from the key to the frame that shows the selected pane's title on the
  new page (the frame ``bench/tui_bench.py`` stops its clock at);
* **whole page**: from the key until the whole page is painted and the app is idle again
  (every pane of the page drawn with its new text).

p50 / p95 / max over the switches. Wall time is given too; it is what load inflates.
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

TEXT = " ".join(f"word{i % 97}" + ("\n\n" if i % 40 == 39 else "") for i in range(1500))


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))]


async def bench(switches: int) -> dict:
    os.environ.setdefault("COCKPIT_DATA_DIR", tempfile.mkdtemp(prefix="page-switch-bench-"))
    from tui_bench import _paints_title
    from tui_fakes import FakeManager, session_script

    from cockpit import events as ev
    from cockpit.events import SessionStatus as S
    from cockpit.tui import CockpitApp

    mgr = FakeManager()
    app = CockpitApp(mgr)
    marks: list[tuple[float, float]] = []  # (cpu, wall) at the key's frame
    want: list = []
    original_display = app._display

    def display(screen, renderable):
        original_display(screen, renderable)
        if renderable is not None and hasattr(renderable, "render_segments"):
            renderable.render_segments(app.console)  # the escape codes a terminal write needs
        if want and app.screen.selected is want[0] and _paints_title(renderable, want[0]):
            marks.append((time.thread_time(), time.perf_counter()))
            want.clear()

    app._display = display  # type: ignore[method-assign]
    key_cpu: list[float] = []
    key_wall: list[float] = []
    page_cpu: list[float] = []
    async with app.run_test(size=(200, 50)) as pilot:
        for n in range(30):
            mgr.emit(*session_script(f"s{n:05d}", f"task {n}", S.STREAMING, text=TEXT))
        while len(app.panes) < 30:
            await pilot.pause(0.05)
        grid = app.screen.query_one("#grid")
        for _ in range(4):  # every page drawn once
            await pilot.press("right_square_bracket")
            await pilot.pause(0.3)
        for _ in range(switches):
            for n in range(30):
                mgr.emit(ev.TextDelta(f"s{n:05d}", " more words here" * 20))
            page = grid.page
            last = grid.page_panes()[-1]
            app.screen.focus_pane(last)
            await pilot.pause(0.4)  # settled: the text folded, the page shown drawn
            target = grid.panes[(grid.panes.index(last) + 1) % len(grid.panes)]
            want[:] = [target]
            marks.clear()
            cpu0, wall0 = time.thread_time(), time.perf_counter()
            await pilot.press("tab")
            while getattr(grid, "revealing", False) or want:
                await pilot.pause(0.01)
            await pilot.pause()  # idle: the page's last panes painted
            cpu1 = time.thread_time()
            assert grid.page != page and marks, "the key did not show the next page"
            key_cpu.append((marks[0][0] - cpu0) * 1000)
            key_wall.append((marks[0][1] - wall0) * 1000)
            page_cpu.append((cpu1 - cpu0) * 1000)
    return {
        "switches": switches,
        "key_to_frame_cpu_ms": _summary(key_cpu),
        "key_to_frame_wall_ms": _summary(key_wall),
        "whole_page_cpu_ms": _summary(page_cpu),
    }


def _summary(values: list[float]) -> dict:
    return {"p50": round(statistics.median(values), 1), "p95": round(pct(values, 95), 1),
            "max": round(max(values), 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--switches", type=int, default=24)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result = asyncio.run(bench(args.switches))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name in ("key_to_frame_cpu_ms", "key_to_frame_wall_ms", "whole_page_cpu_ms"):
            s = result[name]
            print(f"{name:22s} p50 {s['p50']:7.1f}  p95 {s['p95']:7.1f}  max {s['max']:7.1f}  "
                  f"({result['switches']} page switches)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
