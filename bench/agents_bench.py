"""Our memory for agents outside the cockpit: `cockpit memory mcp` and `cockpit memory hook`.

Measures, on a small notes folder (the seed's two notes + 20 filler notes):

- `cockpit memory mcp` start-up (process start → MCP `initialize` answered → first
  `memory_search` answered, ms) and its peak RSS (MiB, VmHWM of the process after the search),
  with a warm Cockpit server running (thin client) and without (engine loaded in the process);
- `cockpit memory hook` end to end (process start → JSON printed → exit, ms) for a first prompt,
  through a warm server: p50 / p95 over N runs (each a new session id).

Run: ``HF_HUB_OFFLINE=1 python bench/agents_bench.py [--runs 20] [--json]``. It uses a temporary
COCKPIT_DATA_DIR and stops the server it starts.
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

SEED = {
    "staging-stack": ("Staging runs on port 6443 and we deploy to the host callisto.", True),
    "deploy-command": ("Deploy with make ship-v2; the old make ship target is gone.", False),
}


def make_notes(root: Path) -> Path:
    notes = root / "notes"
    notes.mkdir()
    items = dict(SEED)
    for i in range(20):
        items[f"filler-{i}"] = (f"Convention number {i}: the {i}th team rule about logging, naming and reviews.", False)
    for name, (desc, prio) in items.items():
        pr = "priority: high\n" if prio else ""
        (notes / f"{name}.md").write_text(f"---\nname: {name}\ndescription: {desc}\n{pr}---\n{desc}\n")
    return notes


def vm_hwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def mcp_once(notes: Path, env: dict) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "cockpit", "memory", "mcp", "--notes", str(notes)],
                                   env=env)
    t0 = time.perf_counter()
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            t_init = time.perf_counter()
            await session.call_tool("memory_search", {"query": "which port does staging use?"})
            t_search = time.perf_counter()
            pid = _mcp_pid()
            rss = vm_hwm_mib(pid) if pid else float("nan")
    return {"initialize_ms": (t_init - t0) * 1000, "first_search_ms": (t_search - t0) * 1000, "peak_rss_mib": rss}


def _mcp_pid() -> int | None:
    me = os.getpid()
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text().split()
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if int(stat[3]) == me and b"memory mcp" in cmd:
            return int(p.name)
    return None


def hook_runs(notes: Path, env: dict, runs: int) -> list[float]:
    out = []
    for i in range(runs):
        payload = json.dumps({"session_id": f"bench-{i}-{time.time()}", "cwd": str(notes.parent),
                              "hook_event_name": "UserPromptSubmit",
                              "prompt": "what port does staging run on and how do we deploy?"}).encode()
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "cockpit", "memory", "hook", "--notes", str(notes)],
                              input=payload, capture_output=True, env=env)
        out.append((time.perf_counter() - t0) * 1000)
        if b"6443" not in proc.stdout:
            raise SystemExit(f"hook gave no block: {proc.stdout!r} {proc.stderr[-300:]!r}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cockpit-agents-bench-") as tmp:
        root = Path(tmp)
        notes = make_notes(root)
        env = {**os.environ, "COCKPIT_DATA_DIR": str(root / "data"), "HF_HUB_OFFLINE": "1"}
        env.pop("COCKPIT_NO_SERVER", None)
        results: dict = {}
        results["mcp_without_server"] = asyncio.run(mcp_once(notes, {**env, "COCKPIT_NO_SERVER": "1"}))
        subprocess.run([sys.executable, "-m", "cockpit", "server", "start"], env=env, check=True, capture_output=True)
        try:
            # warm the server's engine for this folder (model load + first sync), then measure
            subprocess.run([sys.executable, "-m", "cockpit", "memory", "search", "warm up", "--notes", str(notes)],
                           env=env, check=True, capture_output=True)
            results["mcp_with_server"] = asyncio.run(mcp_once(notes, env))
            times = hook_runs(notes, env, args.runs)
            times.sort()
            results["hook_with_server_ms"] = {"runs": len(times), "p50": statistics.median(times),
                                              "p95": times[max(0, int(len(times) * 0.95) - 1)], "max": times[-1]}
        finally:
            subprocess.run([sys.executable, "-m", "cockpit", "server", "stop"], env=env, capture_output=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name in ("mcp_without_server", "mcp_with_server"):
        r = results[name]
        print(f"{name:22} initialize {r['initialize_ms']:7.0f} ms · first search {r['first_search_ms']:7.0f} ms · "
              f"peak RSS {r['peak_rss_mib']:6.0f} MiB")
    h = results["hook_with_server_ms"]
    print(f"hook (warm server)     p50 {h['p50']:.0f} ms · p95 {h['p95']:.0f} ms · max {h['max']:.0f} ms "
          f"over {h['runs']} runs")


if __name__ == "__main__":
    main()
