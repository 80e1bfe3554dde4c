"""Nine spawns at once: from the command to each session's first model request.

One ``cockpit run T1 … T9 --detach`` (nine sessions, each in its own git worktree of a fresh
repository, preseeded from a notes folder, sandboxed as by default) against the Messages API
stand-in (``tests/standin.py``), which records when each request arrives. Per session the
figure is *command start → its first ``POST /v1/messages``* — worktree, preseed, sandbox and
session start included. Two cases, alternated round by round:

- **cold**: no server runs; the command starts one (a fresh data folder each round);
- **warm**: a server already runs (started with ``cockpit server start`` and idle since, its
  notes' engine not yet used), a fresh data folder each round.

Every round uses new task texts (no preseed or query cache hit). Prints one JSON object: per
case, each round's nine delays (seconds, sorted) and the median of the rounds' slowest.

Usage (offline)::

    HF_HUB_OFFLINE=1 python bench/spawn_bench.py [--rounds 3] [--sessions 9]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from seed_data import write_seed  # noqa: E402
from standin import StandIn  # noqa: E402

TOPICS = ["staging port", "deploy host", "deploy command", "database", "cache", "queue", "login", "billing",
          "search", "metrics", "alerts", "backups"]


def _env(data: Path, base_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COCKPIT_")}
    env.update(COCKPIT_DATA_DIR=str(data), ANTHROPIC_API_KEY="bench-key", ANTHROPIC_BASE_URL=base_url,
               HF_HUB_OFFLINE="1", COCKPIT_MODEL="standin-model")
    return env


def _cockpit(*args: str) -> list[str]:
    return [sys.executable, "-m", "cockpit", *args]


def _until(pred, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


class _Stamped(list):
    """The stand-in's request list, each request stamped with its arrival (``time.time()``)."""

    def append(self, req) -> None:
        req.headers["x-arrived"] = time.time()
        super().append(req)


def _stop_server(env: dict) -> None:
    subprocess.run(_cockpit("server", "stop"), env=env, capture_output=True, timeout=60)


def one_round(case: str, n: int, tag: str, base: Path, standin: StandIn) -> list[float]:
    work = base / f"{case}-{tag}"
    work.mkdir()
    notes, ws = write_seed(work)
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run(["git", "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qam", "init", "--allow-empty"],
                   cwd=ws, check=True)
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True)
    subprocess.run(["git", "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "files"], cwd=ws, check=True)
    data = work / "data"
    env = _env(data, standin.base_url)
    if case == "warm":
        subprocess.run(_cockpit("server", "start"), env=env, check=True, capture_output=True, timeout=120)
        time.sleep(2.0)  # idle, as a running server is when a user spawns
    tasks = [f"[{tag}-{i}] what is our {TOPICS[i % len(TOPICS)]} setup, round {tag}? ({os.urandom(4).hex()})"
             for i in range(n)]
    seen_before = len(standin.requests)
    t0 = time.monotonic()
    wall0 = time.time()
    proc = subprocess.run(_cockpit("run", *tasks, "--detach", "--notes", str(notes), "--workspace", str(ws)),
                          env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"cockpit run failed ({proc.returncode}): {proc.stderr.strip()}")

    def firsts() -> dict[str, float]:
        out: dict[str, float] = {}
        for r in standin.requests[seen_before:]:
            if r.method != "POST" or not r.path.rstrip("/").endswith("/v1/messages"):
                continue
            text = json.dumps(r.body)
            for i in range(n):
                key = f"[{tag}-{i}]"
                if key in text and key not in out:
                    out[key] = r.headers.get("x-arrived", 0.0)
        return out

    ok = _until(lambda: len(firsts()) == n, 120)
    got = firsts()
    _stop_server(env)
    if not ok:
        raise SystemExit(f"only {len(got)} of {n} sessions reached the model in 120 s")
    return sorted(round(t - wall0, 3) for t in got.values()) if t0 else []


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=9)
    ap.add_argument("--cases", default="cold,warm")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="spawn-bench-"))
    out: dict = {"sessions": args.sessions, "load_start": os.getloadavg()[0]}
    standin = StandIn()
    standin.requests = _Stamped()
    try:
        with standin:
            for r in range(args.rounds):
                for case in args.cases.split(","):
                    delays = one_round(case, args.sessions, f"r{r}{case[0]}", base, standin)
                    out.setdefault(case, []).append(delays)
                    print(f"{case} round {r}: slowest {delays[-1]:.2f} s, fastest {delays[0]:.2f} s",
                          file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    out["load_end"] = os.getloadavg()[0]
    for case in args.cases.split(","):
        out[f"{case}_slowest_median_s"] = statistics.median(d[-1] for d in out[case])
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
