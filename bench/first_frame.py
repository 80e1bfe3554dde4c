"""Time from launching ``cockpit`` to its first interactive frame, beside a minimal Textual app.

Usage (from the repo root)::

    .venv/bin/python bench/first_frame.py                 # 10 paired rounds
    .venv/bin/python bench/first_frame.py --rounds 20 --json /tmp/first_frame.json

Method
------
* Each round starts two fresh processes, one after the other (A B, then B A in the next round,
  so drift hits both): the app (``python -m cockpit --notes N --workspace W``, exactly what the
  ``cockpit`` command runs, on this repo's own ``notes/`` with a warm index and a warm exported
  model, the way a user's second launch finds them) and a minimal Textual app (one ``Static``).
  Each runs on a pseudo-terminal of 200×50 cells with ``TERM=xterm-256color``.
* The clock starts just before the process is spawned and stops when the terminal output
  first holds the app's first screen (the empty grid's "No sessions yet." text, or the minimal
  app's text): the **first frame**. Then ``n`` is typed and the clock stops again when the spawn
  dialog ("New session") appears: the **first key answered**, i.e. the frame was interactive.
  Then ``q`` (and, if needed, SIGTERM) ends the process.
* The child runs through a tiny launcher (``--child``) that installs an audit hook recording
  when each top-level package is first imported (monotonic clock, shared with the parent), then
  runs ``cockpit`` exactly as ``python -m cockpit``. The report lists the heavy packages
  (torch, sentence-transformers, transformers, onnxruntime, anthropic, numpy, …) imported
  before the first frame and after it.
* ``ANTHROPIC_API_KEY`` is unset and ``COCKPIT_DATA_DIR`` is a temp folder, so nothing of the
  user's state is read or written; the exported ONNX model is taken from the user's model cache
  (``COCKPIT_MODEL_CACHE`` if set) — the first round's launch of a machine that never exported
  it would include the one-off export in the background, not in the first frame.

* ``--no-server`` launches ``cockpit --no-server`` (sessions in the app's process); by default
  the app attaches to the Cockpit server as bare ``cockpit`` does. The first round then includes
  starting the server (no server runs in the temp data folder); later rounds find it running,
  as a user's next launch does. The server is stopped at the end.

The figures are medians over the rounds (min and max shown); the ratio is taken round by round.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = ["torch", "sentence_transformers", "transformers", "onnxruntime", "tokenizers", "anthropic",
         "httpx", "httpx2", "pydantic", "numpy", "sqlite_vec", "frontmatter", "yaml", "watchfiles",
         "textual", "rich", "memory", "cockpit"]

MINIMAL_APP = """
from textual.app import App
from textual.widgets import Static

class Minimal(App):
    def compose(self):
        yield Static("minimal textual app ready")

Minimal().run()
"""


# --------------------------------------------------------------------------- child side

def child(kind: str, log_path: str) -> None:
    """Record first imports of top-level packages, then run the app (or the minimal app)."""
    log = open(log_path, "w", buffering=1)
    seen: set[str] = set()

    def hook(event, args):
        if event == "import":
            top = str(args[0]).split(".")[0]
            if top not in seen:
                seen.add(top)
                log.write(f"{time.monotonic():.6f} {top}\n")

    sys.addaudithook(hook)
    sys.path.insert(0, str(REPO))  # this checkout's cockpit, whatever the venv has installed
    if kind == "minimal":
        exec(compile(MINIMAL_APP, "<minimal>", "exec"), {"__name__": "__main__"})
        return
    import runpy

    sys.argv = ["cockpit", *sys.argv[sys.argv.index("--") + 1:]]
    runpy.run_module("cockpit", run_name="__main__", alter_sys=True)


# --------------------------------------------------------------------------- parent side

def _launch(kind: str, argv: list[str], env: dict, log_path: str, needle: bytes, key_needle: bytes | None,
            timeout: float = 30.0) -> dict:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, log_path, "--", *argv]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO,
                            start_new_session=True, close_fds=True)
    os.close(slave)
    buf = b""
    res: dict = {"kind": kind}
    deadline = t0 + timeout
    sent_key = False
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.05)
            if not r:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            now = time.monotonic()
            buf += chunk
            if "first_frame_s" not in res and needle in buf:
                res["first_frame_s"] = now - t0
                res["t_frame"] = now
                if key_needle is None:
                    break
                mark = len(buf)
                os.write(master, b"n")
                res["t_key"] = time.monotonic()
                sent_key = True
            elif sent_key and key_needle in buf[mark:]:
                res["key_answered_s"] = now - t0
                res["key_latency_s"] = now - res["t_key"]
                break
    finally:
        try:
            os.write(master, b"\x1b" if sent_key else b"")
            os.write(master, b"q")
        except OSError:
            pass
        try:
            proc.wait(3)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        os.close(master)
    imports = []
    with open(log_path) as fh:
        for line in fh:
            t, name = line.split()
            imports.append((float(t), name))
    tf = res.get("t_frame")
    res["before_frame"] = sorted({n for t, n in imports if tf and t <= tf and n in HEAVY})
    res["after_frame"] = sorted({n for t, n in imports if tf and t > tf and n in HEAVY})
    if "first_frame_s" not in res:
        res["error"] = f"no first frame within {timeout:.0f} s; output tail: {buf[-300:]!r}"
    return res


def _prepare(tmp: Path) -> tuple[list[str], dict]:
    """A warm index of the repo's notes in a temp data dir (what a second launch finds)."""
    env = dict(os.environ, COCKPIT_DATA_DIR=str(tmp / "data"), TERM="xterm-256color",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", COLUMNS="200", LINES="50")
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("TEXTUAL", None)
    ws = tmp / "workspace"
    ws.mkdir()
    subprocess.run([sys.executable, "-m", "cockpit", "memory", "index", "--notes", str(REPO / "notes")],
                   env=env, cwd=REPO, check=True, capture_output=True)
    return ["--notes", str(REPO / "notes"), "--workspace", str(ws)], env


def _stats(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)} if xs else {}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json", help="write the raw rounds here")
    ap.add_argument("--no-server", action="store_true", help="launch `cockpit --no-server` (in-process)")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "LOG"), help=argparse.SUPPRESS)
    args, rest = ap.parse_known_args(argv)
    if args.child:
        child(args.child[0], args.child[1])
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="first-frame-"))
    try:
        app_argv, env = _prepare(tmp)
        if args.no_server:
            app_argv = [*app_argv, "--no-server"]
        rounds = []
        for i in range(args.rounds):
            order = ["app", "minimal"] if i % 2 == 0 else ["minimal", "app"]
            r = {}
            for kind in order:
                log = str(tmp / f"imports-{kind}-{i}.txt")
                if kind == "app":
                    r[kind] = _launch(kind, app_argv, env, log, b"No sessions yet.", b"New session")
                else:
                    r[kind] = _launch(kind, [], env, log, b"minimal textual app ready", None)
            rounds.append(r)
            a, m = r["app"], r["minimal"]
            print(f"round {i + 1}: app first frame {a.get('first_frame_s', float('nan')):.3f} s, key answered "
                  f"{a.get('key_answered_s', float('nan')):.3f} s; minimal {m.get('first_frame_s', float('nan')):.3f} s"
                  + (f"  [{a.get('error') or m.get('error')}]" if a.get("error") or m.get("error") else ""),
                  file=sys.stderr)
    finally:
        subprocess.run([sys.executable, "-m", "cockpit", "server", "stop"], env=env, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    ok = [r for r in rounds if "first_frame_s" in r["app"] and "first_frame_s" in r["minimal"]]
    app = _stats([r["app"]["first_frame_s"] for r in ok])
    key = _stats([r["app"]["key_answered_s"] for r in ok if "key_answered_s" in r["app"]])
    mini = _stats([r["minimal"]["first_frame_s"] for r in ok])
    ratio = _stats([r["app"]["first_frame_s"] / r["minimal"]["first_frame_s"] for r in ok])
    before = sorted(set().union(*(r["app"]["before_frame"] for r in ok))) if ok else []
    after = sorted(set().union(*(r["app"]["after_frame"] for r in ok))) if ok else []
    summary = {"mode": "in-process" if args.no_server else "attached to the server",
               "rounds": len(rounds), "ok": len(ok), "app_first_frame_s": app, "app_first_key_answered_s": key,
               "minimal_first_frame_s": mini, "ratio_app_over_minimal": ratio,
               "imported_before_first_frame": before, "imported_after_first_frame": after,
               "loadavg": os.getloadavg()}
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
