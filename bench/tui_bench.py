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
* **Key-to-screen latency.** Every ``--key-interval`` s on average (a schedule fixed in advance,
  never waiting on the screen, each gap jittered ±50 % so keys hit every phase of the app's
  timers) a ``tab`` key event (with one session, ``z``: zoom in and out) is handed to the app's driver queue exactly as a terminal key would
  be (``driver.send_message``, the call a terminal driver's input thread makes); the clock starts
  just before that call. It stops when the first screen update that shows the key's effect has
  been composed and serialised to terminal escape codes: the key's pane is selected *and* the
  update repaints that pane's title row (``App._display`` is wrapped to also run
  ``render_segments``, the work a real terminal write needs; headless mode would otherwise skip
  it). Every key is measured: when two keys land in one frame, both stop at that frame; keys
  whose effect never reached the screen are reported as ``unmeasured``. p50/p95/max reported;
  also the app's main-thread CPU time (``time.thread_time``) from each key to its frame, which
  other processes on a loaded box do not inflate (``key_to_frame_cpu_ms``).
* **CPU** = process CPU time (user+sys, all threads: UI, runtime, SDK, SSE parsing) ÷ wall
  time over the streaming window, in cores (1.0 = one core busy). **Peak RSS** = ``VmHWM``.
* No memory engine by default (``--engine`` adds a real ``MemoryEngine`` on a tiny notes
  folder, which loads torch + MiniLM: a much larger RSS, same UI work).
* ``--server``: the sessions run in a Cockpit server (its own process, started by the bench with
  a temporary data folder) and the app is its client (``RemoteRuntime``: events over the Unix
  socket), as bare ``cockpit`` runs by default. CPU is then reported for the app and, apart, for
  the server process.
* The sessions work in a temporary folder (not a git repository: no worktrees are made).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
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


def _paints_title(renderable, pane) -> bool:
    """Whether a compositor update repaints the first cell of ``pane``'s title (its top border
    row, two cells in)."""
    region = pane.region
    x, y = region.x + 2, region.y
    spans = getattr(renderable, "spans", None)
    if spans is not None:  # ChopsUpdate: (y, x1, x2) spans of changed cells
        return any(sy == y and x1 <= x < x2 for sy, x1, x2 in spans)
    update_region = getattr(renderable, "region", None)
    if update_region is not None:  # LayoutUpdate: a whole region
        return update_region.contains(x, y)
    return True  # a full-screen update


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


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def bench(base_url: str, seconds: float, sessions: int, key_interval: float, engine_on: bool,
                through_server: bool = False) -> dict:
    from textual import events

    from cockpit.events import SessionStatus as S
    from cockpit.runtime import RuntimeConfig, SessionManager
    from cockpit.tui import CockpitApp

    tmp = Path(tempfile.mkdtemp(prefix="tui-bench-"))
    os.environ["COCKPIT_DATA_DIR"] = str(tmp / "data")
    workspace = tmp / "workspace"
    workspace.mkdir()
    engine = None
    if engine_on:
        from memory import MemoryEngine

        notes = tmp / "notes"
        notes.mkdir()
        (notes / "a.md").write_text("---\nname: a\ndescription: staging port 6443\n---\nport 6443\n")
        engine = MemoryEngine(notes, index_path=tmp / "index.sqlite")
    # every session streams at once: the concurrency cap is the number of sessions (a cap below it
    # would queue the rest, and the bench would wait for them forever)
    os.environ["COCKPIT_CONCURRENCY"] = str(sessions)
    config = RuntimeConfig(api_key="bench", base_url=base_url, model="claude-sonnet-4-5", concurrency=sessions,
                           max_tokens=64000, sessions_dir=tmp / "sessions", interactive=True)
    server_pid = None
    if through_server:
        from cockpit.server.client import BlockingClient, start_server
        from cockpit.server.remote import RemoteRuntime

        os.environ.pop("COCKPIT_NO_SERVER", None)
        start_server()
        with BlockingClient() as c:
            server_pid = c.call("server.status")["pid"]
        _STARTED.append(server_pid)  # stopped by main's finally, however the bench ends

        class _Attached(CockpitApp):
            async def on_load(self) -> None:
                self.manager = await RemoteRuntime.attach(config)

        app = _Attached(None, engine, workspace=workspace, api_key_missing=False)
    else:
        mgr = SessionManager(engine, config)
        app = CockpitApp(mgr, engine, workspace=workspace)

    # (t0, pane the key selects | zoom state it leaves, main-thread CPU at t0, whether the key shows
    # another page), oldest first
    pending: list[tuple[float, object, float, bool]] = []
    latencies: list[float] = []
    latencies_cpu: list[float] = []  # the app's main-thread CPU time from each key to its frame
    switch_ms: list[tuple[float, float]] = []  # (wall, main-thread CPU) of the keys that showed another page
    original_display = app._display

    def display(screen, renderable):
        original_display(screen, renderable)
        if renderable is not None and hasattr(renderable, "render_segments"):
            renderable.render_segments(app.console)  # the escape codes a terminal write needs
        if not pending:
            return
        # the newest pending key whose effect this frame shows: its pane is selected (one pane:
        # zoomed or not, as that key leaves it) *and* the frame repaints that pane's title row
        # (so the highlight is on the terminal now)
        selected = getattr(app.screen, "selected", None)
        for i in range(len(pending) - 1, -1, -1):
            want = pending[i][1]
            if isinstance(want, bool):  # the zoom key: the state it leaves
                shown = (getattr(app.screen, "maximized", None) is not None) == want
                target = selected
            else:
                shown, target = want is selected, want
            if shown and target is not None and _paints_title(renderable, target):
                now, cpu_now = time.perf_counter(), time.thread_time()
                # keys before it were superseded by it: they too are on screen only now
                latencies.extend(now - t0 for t0, *_ in pending[: i + 1])
                latencies_cpu.extend(cpu_now - c0 for _, _, c0, _ in pending[: i + 1])
                switch_ms.extend(((now - t0) * 1000, (cpu_now - c0) * 1000)
                                 for t0, _, c0, crossing in pending[: i + 1] if crossing)
                del pending[: i + 1]
                break

    app._display = display  # type: ignore[method-assign]

    async with app.run_test(size=(200, 50)):
        for n in range(sessions):
            app.spawn(f"benchmark session {n + 1}: stream a long answer")
        deadline = time.monotonic() + 120
        while not (len(app.views) == sessions and all(v.status is S.STREAMING for v in app.views.values())):
            if time.monotonic() > deadline:
                states = sorted(v.status.value for v in app.views.values())
                raise SystemExit(f"tui_bench: the sessions did not all stream within 120 s ({states})")
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
        server_cpu0 = _cpu_s(server_pid) if server_pid else 0.0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        presses = 0
        panes = list(grid.panes)
        page_size = grid.page_size
        current = app.screen.selected
        index = panes.index(current) if current in panes else -1
        next_at = wall0
        jitter = random.Random(4)
        zoomed = False
        while time.perf_counter() - wall0 < seconds:
            # each tab selects the next pane (one pane: z zooms it in and out); the target follows
            # the keys sent, not the screen, so a key still queued behind the previous one is
            # measured too
            if len(panes) > 1:
                crossing = (index + 1) % len(panes) // page_size != max(index, 0) // page_size
                index = (index + 1) % len(panes)
                key: str = "tab"
                pending.append((time.perf_counter(), panes[index], time.thread_time(), crossing))
            else:
                zoomed, key = not zoomed, "z"
                pending.append((time.perf_counter(), zoomed, time.thread_time(), False))
            event = events.Key(key, None)
            event.set_sender(app)
            app._driver.send_message(event)
            presses += 1
            # a schedule fixed in advance (the bench waits for nothing on screen), jittered
            # ±50 % so keys land at every phase of the app's 20 Hz flush and 60 Hz frame timers
            # (a fixed 150 ms would hit the same phase every time: p50 moved 4 ↔ 12 ms by chance)
            next_at += key_interval * jitter.uniform(0.5, 1.5)
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
        cpu = time.process_time() - cpu0
        wall = time.perf_counter() - wall0
        server_cpu = (_cpu_s(server_pid) - server_cpu0) if server_pid else None
        await asyncio.sleep(0.5)  # the last keys' frames
        unmeasured = len(pending)
        pending.clear()
        if profile is not None:
            profile.disable()
            profile.dump_stats(os.environ["TUI_BENCH_PROFILE"])
        await asyncio.sleep(1.0)  # drain queued keys before closing
        statuses = [v.status.value for v in app.views.values()]
        end_text = sum(len(b.text) for v in app.views.values() for b in v.blocks)
        events_seen = app.events_seen - start_events
        if through_server:
            await app.manager.stop_all()
        await app.shutdown()
    if engine is not None:
        engine.close()
    if through_server:
        _stop_servers()
    return {
        "sessions": sessions,
        "seconds": round(wall, 1),
        "key_presses": presses,
        "key_to_screen_ms": {
            "p50": round(statistics.median(latencies) * 1000, 1) if latencies else None,
            "p95": round(pct(latencies, 95) * 1000, 1) if latencies else None,
            "max": round(max(latencies) * 1000, 1) if latencies else None,
            "n": len(latencies),
            "unmeasured": unmeasured,
        },
        # the app's main-thread CPU time from each key to its frame: what the app did meanwhile
        # (the key, events, other frames), not inflated by other processes on a loaded box
        "key_to_frame_cpu_ms": {
            "p50": round(statistics.median(latencies_cpu) * 1000, 1) if latencies_cpu else None,
            "p95": round(pct(latencies_cpu, 95) * 1000, 1) if latencies_cpu else None,
            "max": round(max(latencies_cpu) * 1000, 1) if latencies_cpu else None,
        },
        # the keys that showed another page: key-to-screen, and the app's main-thread CPU time from
        # the key to its frame (what load does not inflate; it includes events folded meanwhile)
        "page_switch_ms": {
            "n": len(switch_ms),
            "wall_p50": round(statistics.median(w for w, _ in switch_ms), 1) if switch_ms else None,
            "wall_max": round(max(w for w, _ in switch_ms), 1) if switch_ms else None,
            "cpu_p50": round(statistics.median(c for _, c in switch_ms), 1) if switch_ms else None,
            "cpu_p95": round(pct([c for _, c in switch_ms], 95), 1) if switch_ms else None,
            "cpu_max": round(max(c for _, c in switch_ms), 1) if switch_ms else None,
        },
        "cpu_cores": round(cpu / wall, 3),
        "server_cpu_cores": None if server_cpu is None else round(server_cpu / wall, 3),
        "through_server": through_server,
        "peak_rss_mb": round(vm_hwm_mb(), 1),
        "events_per_s": round(events_seen / wall),
        "tokens_per_s_per_session": round(events_seen / wall / sessions, 1),
        "text_chars_streamed": end_text - start_text,
        "statuses_at_end": sorted(set(statuses)),
        "engine": engine_on,
    }


_STARTED: list[int] = []  # server pids this bench started


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _stop_servers() -> None:
    """Stop the Cockpit server this bench started (also on Ctrl-C or SIGTERM): never left running."""
    from cockpit.server.client import BlockingClient, ServerError, wait_for_stop

    while _STARTED:
        pid = _STARTED.pop()
        try:
            with BlockingClient(timeout=5) as c:
                c.call("server.stop")
        except (ServerError, OSError):
            pass
        if not wait_for_stop(pid, 30):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--sessions", type=int, default=9)
    ap.add_argument("--tps", type=float, default=50.0, help="tokens per second per session")
    ap.add_argument("--key-interval", type=float, default=0.15, help="mean seconds between key presses (±50%% jitter)")
    ap.add_argument("--engine", action="store_true", help="also run a real MemoryEngine (loads torch)")
    ap.add_argument("--server", action="store_true", help="the sessions run in a Cockpit server; the app attaches")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    ap.add_argument("--words", type=int, default=4000, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.sessions < 1 and args.serve is None:
        ap.error("--sessions must be at least 1")
    if args.serve is not None:
        serve(args.serve, args.tps, args.words)
        return 0
    words = int(args.tps * (args.seconds + 20))
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "0", "--tps", str(args.tps), "--words", str(words)],
        stdout=subprocess.PIPE, text=True,
    )
    signal.signal(signal.SIGTERM, _interrupted)  # a kill runs the finally below too
    try:
        base_url = server.stdout.readline().strip()
        result = asyncio.run(bench(base_url, args.seconds, args.sessions, args.key_interval, args.engine,
                                   args.server))
    finally:
        _stop_servers()
        server.terminate()
        server.wait(10)
    result["tps_target"] = args.tps
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        k = result["key_to_screen_ms"]
        print(f"{result['sessions']} sessions streaming at ~{args.tps:g} tokens/s for {result['seconds']} s "
              f"(measured {result['tokens_per_s_per_session']} deltas/s/session)")
        print(f"key-to-screen: p50 {k['p50']} ms  p95 {k['p95']} ms  max {k['max']} ms  "
              f"(n={k['n']} of {result['key_presses']} keys, unmeasured {k['unmeasured']})")
        kc = result["key_to_frame_cpu_ms"]
        print(f"key to its frame, app main-thread CPU: p50 {kc['p50']} ms  p95 {kc['p95']} ms  max {kc['max']} ms")
        ps = result["page_switch_ms"]
        if ps["n"]:
            print(f"page switches: {ps['n']} keys, key-to-screen p50 {ps['wall_p50']} ms max {ps['wall_max']} ms; "
                  f"main-thread CPU key→frame p50 {ps['cpu_p50']} ms p95 {ps['cpu_p95']} ms max {ps['cpu_max']} ms")
        server_cpu = f" (+ server {result['server_cpu_cores']} cores)" if args.server else ""
        print(f"CPU {result['cpu_cores']} cores{server_cpu}   peak RSS {result['peak_rss_mb']} MB   "
              f"events {result['events_per_s']}/s   engine={'on' if args.engine else 'off'}   "
              f"{'through the server' if args.server else 'in-process'}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the server it started is already stopped
        print("tui_bench: interrupted", file=sys.stderr)
        sys.exit(130)
