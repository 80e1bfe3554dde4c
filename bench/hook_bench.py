"""`cockpit memory hook` (Claude Code `UserPromptSubmit`): wall and CPU time, p50 / p95.

Three cases, each run a first prompt of a new session, process start → exit (stdin JSON in,
JSON or nothing out), CPU = user + system of the hook process itself (``os.wait4``):

- **cold**: a fresh data folder and no server. The hook starts one in the background (detached,
  not waited for) and returns with nothing for this prompt; after each run the bench waits for
  that server and kills it.
- **warm**: a server up, its engine for the notes warm; the hook prints the block.
- **hung**: the same server stopped with SIGSTOP (it still accepts connections); the hook gives
  up within its budget and prints nothing.

Run: ``HF_HUB_OFFLINE=1 python bench/hook_bench.py [--runs 20] [--cold-runs 10] [--json]``. Uses
temporary data folders; kills every server it (or the hook) started.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOTES = {
    "staging-stack": "Staging runs on port 6443 and we deploy to the host callisto.",
    "deploy-command": "Deploy with make ship-v2; the old make ship target is gone.",
}
PROMPT = "what port does staging run on, and how do we deploy?"


def _notes(root: Path) -> Path:
    notes = root / "notes"
    notes.mkdir()
    for name, desc in NOTES.items():
        (notes / f"{name}.md").write_text(f"---\nname: {name}\ndescription: {desc}\n---\n{desc}\n")
    for i in range(20):
        (notes / f"filler-{i}.md").write_text(f"---\nname: filler-{i}\ndescription: Filler note {i} about topic {i}\n"
                                              f"---\nNothing about staging.\n")
    return notes


def _env(data: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "COCKPIT_NO_SERVER"}
    env.update(COCKPIT_DATA_DIR=str(data), HF_HUB_OFFLINE="1")
    return env


def _hook_once(notes: Path, env: dict, session: str) -> tuple[float, float, bytes]:
    """(wall s, CPU s, stdout) of one hook process: wall until its stdout closes and it exits."""
    payload = json.dumps({"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT,
                          "cwd": str(notes.parent)}).encode()
    r, w = os.pipe()
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "cockpit", "memory", "hook", "--notes", str(notes)],
                            stdin=subprocess.PIPE, stdout=w, stderr=subprocess.DEVNULL, env=env)
    os.close(w)
    assert proc.stdin is not None
    proc.stdin.write(payload)
    proc.stdin.close()
    chunks = []
    while chunk := os.read(r, 65536):  # until every holder of the pipe closed it
        chunks.append(chunk)
    os.close(r)
    _, _status, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped here
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, b"".join(chunks)


def _server_pid(env: dict) -> int | None:
    code = "from cockpit.server.client import server_pid; print(server_pid() or '')"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout.strip()
    return int(out) if out else None


def _kill(pid: int) -> None:
    for sig in (signal.SIGKILL, signal.SIGCONT):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _until(pred, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while not (value := pred()):
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(0.05)
    return value


def _stats(samples: list[tuple[float, float, bytes]]) -> dict:
    walls = sorted(s[0] * 1000 for s in samples)
    cpus = sorted(s[1] * 1000 for s in samples)

    def pct(xs: list[float], p: float) -> float:
        return xs[min(len(xs) - 1, round(p * (len(xs) - 1)))]

    return {"runs": len(samples), "wall_ms_p50": round(statistics.median(walls), 1), "wall_ms_p95": round(pct(walls, 0.95), 1),
            "wall_ms_max": round(walls[-1], 1), "cpu_ms_p50": round(statistics.median(cpus), 1),
            "cpu_ms_p95": round(pct(cpus, 0.95), 1), "printed_block": sum(1 for s in samples if s[2])}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--cold-runs", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="hook-bench-") as tmp:
        root = Path(tmp)
        notes = _notes(root)
        cold = []
        for i in range(args.cold_runs):
            env = _env(root / f"cold-{i}")
            cold.append(_hook_once(notes, env, f"cold-{i}"))
            pid = _until(lambda env=env: _server_pid(env))  # the server the hook started
            _kill(pid)
        results["cold (fresh data folder, no server)"] = _stats(cold)

        env = _env(root / "warm")
        subprocess.run([sys.executable, "-m", "cockpit", "server", "start"], env=env, check=True,
                       capture_output=True)
        pid = _server_pid(env)
        assert pid is not None
        try:
            # warm the engine for these notes (what the hook's background start does)
            code = ("import sys; from cockpit.server.client import BlockingClient; "
                    "BlockingClient().call('memory.wait_ready', notes=sys.argv[1], timeout=120)")
            subprocess.run([sys.executable, "-c", code, str(notes.resolve())], env=env, check=True)
            _hook_once(notes, env, "warm-up")
            results["warm (server up, engine warm)"] = _stats(
                [_hook_once(notes, env, f"warm-{i}") for i in range(args.runs)])
            os.kill(pid, signal.SIGSTOP)
            results["hung (server stopped with SIGSTOP)"] = _stats(
                [_hook_once(notes, env, f"hung-{i}") for i in range(args.runs)])
        finally:
            _kill(pid)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'case':<40}{'runs':>5}{'wall p50':>10}{'p95':>8}{'max':>8}{'CPU p50':>9}{'p95':>8}  block printed")
    for name, r in results.items():
        print(f"{name:<40}{r['runs']:>5}{r['wall_ms_p50']:>8.0f}ms{r['wall_ms_p95']:>6.0f}ms{r['wall_ms_max']:>6.0f}ms"
              f"{r['cpu_ms_p50']:>7.0f}ms{r['cpu_ms_p95']:>6.0f}ms  {r['printed_block']}/{r['runs']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
