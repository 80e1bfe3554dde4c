"""What the sandbox costs a session: per command, and per shell start, paired against no sandbox.

    python bench/sandbox_bench.py [--runs 200] [--starts 30] [--load N] [--json out.json]

A session's shell is persistent: the sandbox (bubblewrap) is set up once, when the shell starts
(the first command, and after ``restart`` or a timeout); each later command runs in the shell
already inside it. So two figures:

- **per command**: the same command in a sandboxed and an unsandboxed persistent shell, in a real
  session worktree, alternated run by run (A B A B …), wall time of ``BashSession.run`` and the
  CPU time the shell and what it ran used (from ``/proc/<shell>/stat``: utime + stime + the
  reaped children's), p50 / p95, and the paired difference's p50;
- **rule-allowed command**: ``true`` allowed by a rule, which runs in a new shell (see
  ``BashSession.run(guarded=True)``), sandboxed vs not, alternated;
- **shell start**: a new shell and its first command (``true``), sandboxed vs not, alternated.

Every command's text is new (a counter in it), so nothing is cached by the shell. ``--load N``
runs N busy processes meanwhile (the box has 2 cores: ``--load 2`` is a loaded machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.runtime import sandbox as sb
from cockpit.runtime import worktree as wt
from cockpit.runtime.bash import BashSession, session_env

COMMANDS = {
    "true": "true #{n}",
    "ls": "ls -la >/dev/null #{n}",
    "git status": "git status --short >/dev/null #{n}",
    "python3 -c pass": "python3 -c 'pass' #{n}",
}
TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its reaped children."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / TICK


def _busy() -> None:  # pragma: no cover - a load generator
    while True:
        pass


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200, help="runs of each command in each shell")
    ap.add_argument("--starts", type=int, default=30, help="shell starts of each kind")
    ap.add_argument("--load", type=int, default=0, help="busy processes meanwhile")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    avail = sb.detect()
    if avail.backend is None:
        sys.exit(f"no sandbox here: {avail.reason}")
    backend = avail.backend
    root = Path(tempfile.mkdtemp(prefix="sandbox-bench-"))
    os.environ["COCKPIT_DATA_DIR"] = str(root / "data")
    repo = root / "repo"
    repo.mkdir()
    for cmd in (["init", "-q", "-b", "main"], ["config", "user.email", "b@x"], ["config", "user.name", "b"]):
        wt.git(*cmd, cwd=repo)
    for i in range(200):
        (repo / f"f{i}.txt").write_text(f"{i}\n")
    wt.git("add", "-A", cwd=repo)
    wt.git("commit", "-qm", "init", cwd=repo)
    info = wt.create(repo, "bench", "bench", root / "data" / "worktrees")
    conf = sb.confinement_for(info.path, info.cwd, sb.session_tmp(root / "data" / "worktrees"),
                              sb.SandboxSettings(), info.branch)
    env = session_env(dict(os.environ))
    load = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.load)]
    for p in load:
        p.start()
    out: dict = {"load": args.load, "runs": args.runs, "per_command": {}, "start": {}}
    try:
        boxed = BashSession(info.cwd, env, wrap=lambda argv: backend.command(conf, argv))
        plain = BashSession(info.cwd, env)
        await boxed.run("true")
        await plain.run("true")
        shells = {"sandboxed": boxed, "unsandboxed": plain}
        pids = {k: s._shell_pid(s.pid or 0) for k, s in shells.items()}
        n = 0
        for name, template in COMMANDS.items():
            wall: dict[str, list[float]] = {"sandboxed": [], "unsandboxed": []}
            cpu: dict[str, list[float]] = {"sandboxed": [], "unsandboxed": []}
            for i in range(args.runs):
                order = ("sandboxed", "unsandboxed") if i % 2 == 0 else ("unsandboxed", "sandboxed")
                for kind in order:
                    n += 1
                    c0, t0 = _cpu(pids[kind]), time.perf_counter()
                    r = await shells[kind].run(template.format(n=n))
                    wall[kind].append((time.perf_counter() - t0) * 1000)
                    cpu[kind].append((_cpu(pids[kind]) - c0) * 1000)
                    assert r.exit_code == 0, r.output
            diff = [a - b for a, b in zip(wall["sandboxed"], wall["unsandboxed"], strict=True)]
            out["per_command"][name] = {
                k: {"wall_p50_ms": pct(wall[k], .5), "wall_p95_ms": pct(wall[k], .95),
                    "cpu_mean_ms": statistics.mean(cpu[k])} for k in wall
            } | {"paired_overhead_p50_ms": statistics.median(diff)}
        # a rule-allowed command (no person saw it) runs in a new shell: what that costs
        guarded: dict[str, list[float]] = {"sandboxed": [], "unsandboxed": []}
        for i in range(max(10, args.runs // 4)):
            order = ("sandboxed", "unsandboxed") if i % 2 == 0 else ("unsandboxed", "sandboxed")
            for kind in order:
                n += 1
                await shells[kind].run(f"true #{n}")  # an ordinary command first: the shell is used
                t0 = time.perf_counter()
                r = await shells[kind].run(f"true #{n}", guarded=True)
                guarded[kind].append((time.perf_counter() - t0) * 1000)
                assert r.exit_code == 0, r.output
        out["guarded"] = {k: {"wall_p50_ms": pct(v, .5), "wall_p95_ms": pct(v, .95)} for k, v in guarded.items()}
        out["guarded"]["paired_overhead_p50_ms"] = statistics.median(
            [a - b for a, b in zip(guarded["sandboxed"], guarded["unsandboxed"], strict=True)])
        await boxed.close()
        await plain.close()
        starts: dict[str, list[float]] = {"sandboxed": [], "unsandboxed": []}
        for i in range(args.starts):
            order = ("sandboxed", "unsandboxed") if i % 2 == 0 else ("unsandboxed", "sandboxed")
            for kind in order:
                wrap = (lambda argv: backend.command(conf, argv)) if kind == "sandboxed" else None
                shell = BashSession(info.cwd, env, wrap=wrap)
                t0 = time.perf_counter()
                await shell.run(f"true #{i}")
                starts[kind].append((time.perf_counter() - t0) * 1000)
                await shell.close()
        out["start"] = {k: {"wall_p50_ms": pct(v, .5), "wall_p95_ms": pct(v, .95)} for k, v in starts.items()}
        out["start"]["paired_overhead_p50_ms"] = statistics.median(
            [a - b for a, b in zip(starts["sandboxed"], starts["unsandboxed"], strict=True)])
    finally:
        for p in load:
            p.terminate()
    print(f"sandbox overhead, load {args.load} busy processes on {os.cpu_count()} cores, {args.runs} runs each")
    print(f"{'command':<18} {'sandboxed p50/p95':>20} {'unsandboxed p50/p95':>20} {'paired Δ p50':>13} "
          f"{'CPU ms (box/plain)':>20}")
    for name, row in out["per_command"].items():
        b, u = row["sandboxed"], row["unsandboxed"]
        print(f"{name:<18} {b['wall_p50_ms']:>9.2f} / {b['wall_p95_ms']:>6.2f} ms {u['wall_p50_ms']:>9.2f} / "
              f"{u['wall_p95_ms']:>6.2f} ms {row['paired_overhead_p50_ms']:>10.2f} ms "
              f"{b['cpu_mean_ms']:>9.2f} / {u['cpu_mean_ms']:.2f}")
    g = out["guarded"]
    print(f"{'rule-allowed true':<18} {g['sandboxed']['wall_p50_ms']:>9.2f} / {g['sandboxed']['wall_p95_ms']:>6.2f} ms "
          f"{g['unsandboxed']['wall_p50_ms']:>9.2f} / {g['unsandboxed']['wall_p95_ms']:>6.2f} ms "
          f"{g['paired_overhead_p50_ms']:>10.2f} ms")
    s = out["start"]
    print(f"{'shell start':<18} {s['sandboxed']['wall_p50_ms']:>9.2f} / {s['sandboxed']['wall_p95_ms']:>6.2f} ms "
          f"{s['unsandboxed']['wall_p50_ms']:>9.2f} / {s['unsandboxed']['wall_p95_ms']:>6.2f} ms "
          f"{s['paired_overhead_p50_ms']:>10.2f} ms")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
