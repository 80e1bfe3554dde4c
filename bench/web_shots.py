"""Save ``docs/web-desktop.png`` (1280×800) and ``docs/web-phone.png`` (390×844): ``cockpit web``
in headless Chromium, with four sessions of a real server against the Messages API stand-in —
one asking to create a file, two waiting for a follow-up, one still streaming.

Real path: ``cockpit web`` (a subprocess) and the server it starts, in a throwaway data folder;
a git workspace; the notes of ``bench/first_run_notes`` (the packaged MiniLM, offline); the
browser driven over the DevTools protocol (``tests/cdp.py``). Needs ``chromium`` on PATH.
Rerun from the repo root::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/web_shots.py
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from cdp import Browser  # noqa: E402
from standin import Reply, StandIn, ToolUse  # noqa: E402

TASKS = (  # (task, first reply): spawned in this order, so the asking one is pane 1
    ("deploy the API to staging", Reply("I'll add the deploy script the notes describe.", tool_uses=[ToolUse(
        "str_replace_based_edit_tool",
        {"command": "create", "path": "scripts/deploy-staging.sh",
         "file_text": "#!/bin/sh\n# staging: host callisto, port 6443 (note staging-env)\nset -e\nmake ship-v2 STAGE=staging\n"})])),
    ("what port does staging run on?", Reply(
        "Staging runs on host **callisto**, port **6443** (note `staging-env`).\n\n"
        "Deploy there with `make ship-v2` from the repository root (note `deploy-command`).")),
    ("add retries to the uploader", Reply(
        "Looking at the uploader first. The note `error-handling` says transient errors are retried "
        "with exponential back-off and jitter, at most five attempts, and that every retry is logged "
        "in the structured format of `logging-format`. I'll wrap the upload call in a retry helper and "
        "add a test that fails twice before it succeeds, then run the test suite with the runner "
        "the notes name.", stall_after=25)),
    ("which logging format do we use?", Reply(
        "JSON lines, one object per event, with `ts`, `level`, `msg` and a `request_id` "
        "(note `logging-format`). Never log secrets: see `secrets-management`.")),
)


def responder(body: dict) -> Reply:
    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first if isinstance(b, dict))
    if len(body["messages"]) > 1:
        return Reply("Done.")
    return next((reply for task, reply in TASKS if task in text), Reply("Done."))


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=demo", "-c", "user.email=demo@example.com", *args], cwd=ws, check=True,
                   capture_output=True)


async def shoot(url: str, width: int, height: int, out: Path, mobile: bool, needles: tuple[str, ...]) -> None:
    async with Browser(width, height, mobile=mobile, timeout=180) as browser:
        await browser.open(url)
        await browser.wait_for("document.body.classList.contains('-first-byte')")
        await browser.click(width // 2, 4)  # the header: a tab's app is blurred until a click
        try:
            await browser.wait_for_text(*needles)
        except AssertionError:
            await browser.screenshot(Path(tempfile.gettempdir()) / f"web-shot-failed-{width}.png")
            raise
        await asyncio.sleep(1.5)  # let the last frame and the fade-in settle
        await browser.screenshot(out)
        print(f"saved {out.relative_to(ROOT)}")


def main() -> int:
    from cockpit.server.client import BlockingClient, wait_for_stop

    tmp = Path(tempfile.mkdtemp(prefix="cockpit-web-shots-"))
    ws = tmp / "shop-api"
    ws.mkdir()
    (ws / "README.md").write_text("# shop-api\n")
    (ws / "Makefile").write_text("ship-v2:\n\t@echo deploying\n")
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", ".")
    _git(ws, "commit", "-qm", "init")
    shutil.copytree(ROOT / "bench" / "first_run_notes", ws / "notes")
    env = {k: v for k, v in os.environ.items() if k != "COCKPIT_NO_SERVER"}
    env.update(COCKPIT_DATA_DIR=str(tmp / "data"), ANTHROPIC_API_KEY="test-key", PYTHONUNBUFFERED="1")
    os.environ.update(COCKPIT_DATA_DIR=env["COCKPIT_DATA_DIR"])
    os.environ.pop("COCKPIT_NO_SERVER", None)
    with StandIn(responder=responder) as api:
        web = subprocess.Popen([sys.executable, "-m", "cockpit", "web", "--base-url", api.base_url,
                                "--model", "claude-sonnet-4-5"], cwd=ws, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        try:
            url = ""
            assert web.stdout is not None
            for line in web.stdout:
                print(line, end="")
                found = re.search(r"http://\S+/", line)
                if found:
                    url = found.group(0)
                    break
            if not url:
                raise SystemExit("cockpit web printed no URL")
            config = {"api_key": "test-key", "base_url": api.base_url, "model": "claude-sonnet-4-5"}
            with BlockingClient() as c:
                for task, _ in TASKS:
                    c.call("spawn", task=task, workspace=str(ws), notes=str(ws / "notes"), config=config)
            wanted = ["needs approval", "waiting for you", "streaming", "waiting for you"]
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                with BlockingClient() as c:
                    rows = sorted(c.call("list")["sessions"], key=lambda r: r["task"])
                by_task = {r["task"]: r["status"] for r in rows}
                if [by_task.get(t) for t, _ in TASKS] == wanted:
                    break
                time.sleep(0.3)
            else:
                raise SystemExit(f"the sessions did not reach their states: {by_task}")
            asyncio.run(shoot(url, 1280, 800, ROOT / "docs" / "web-desktop.png", False,
                              ("deploy the API to staging", "which logging format")))
            asyncio.run(shoot(url, 390, 844, ROOT / "docs" / "web-phone.png", True,
                              ("✓ Allow y", "needs approval", "add retries to the")))
        finally:
            web.send_signal(signal.SIGINT)
            web.wait(timeout=60)
            api.release()
            with BlockingClient() as c:
                pid = c.call("server.status")["pid"]
                c.call("server.stop")
            wait_for_stop(pid, 30)
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
