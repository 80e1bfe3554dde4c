"""Save ``docs/hosts-grid.svg`` (and .png): one grid with panes from two hosts — this machine's
server (``local``) and a second server (``box``, its own data folder, reached over its Unix
socket as ``[hosts.box] socket = …`` does) — and ``docs/hosts-reconnecting.svg`` (and .png): the
same grid a moment after the link to ``box`` broke (its panes say "reconnecting"; the header too).

Real path: two real ``cockpit server`` processes, the app over
``cockpit.server.hosts.MultiHostRuntime``, the loopback Messages API stand-in
(``tests/standin.py``); ``box`` is reached through a relay socket the script cuts
(``tests/socket_relay.py``). Rerun from the repo root::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/hosts_grid_shot.py

Everything it writes besides the images lives in a temp folder; both servers are stopped at the end.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

ANSWERS = {
    "staging": "Staging runs on port **6443** on host `callisto`; deploy with `make ship-v2` from the repo root.",
    "flaky": "The flaky test is `test_upload_retry`: it sleeps 0.1 s and races the mock server. I'd wait on the "
             "mock's `ready` event instead of sleeping.",
    "gpu": "The training job fits on one GPU at batch size 32; at 64 it runs out of memory in the attention "
           "layer. Gradient checkpointing brings 64 back within 22 GB.",
}


def responder(body):
    from standin import Reply, ToolUse

    messages = body["messages"]
    task = messages[0]["content"][-1]["text"]
    if "benchmark" in task:
        if len(messages) == 1:
            return Reply("Running the benchmark on this host's GPU.",
                         [ToolUse("bash", {"command": "python bench/train_step.py --batch 64"})])
        return Reply("Done.")
    for key, answer in ANSWERS.items():
        if key in task:
            return Reply(answer)
    return Reply("Done.")


def make_workspace(ws: Path) -> None:
    from screenshot import git

    ws.mkdir(parents=True)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "user.email", "demo@example.com")
    git(ws, "config", "user.name", "Demo")
    (ws / "README.md").write_text("# Demo\n")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "start")


def start(data: Path) -> Path:
    from cockpit.server import paths
    from cockpit.server.client import start_server

    os.environ["COCKPIT_DATA_DIR"] = str(data)
    start_server()
    return paths.socket_path()


def stop(sock: Path) -> None:
    from cockpit.server.client import BlockingClient, wait_for_stop

    with BlockingClient(sock) as c:
        pid = c.call("server.status")["pid"]
        c.call("server.stop")
    wait_for_stop(pid, 30)


async def scene(docs: Path, tmp: Path, box_sock: Path) -> None:
    from screenshot import save, wait
    from socket_relay import Relay
    from standin import StandIn

    from cockpit.events import SessionStatus as S
    from cockpit.runtime import RuntimeConfig
    from cockpit.runtime.spawn import SpawnSpec
    from cockpit.server.host_config import GridHost, hosts_for_app
    from cockpit.server.hosts import Backoff, MultiHostRuntime
    from cockpit.tui import CockpitApp

    laptop, box_ws = tmp / "laptop" / "shop", tmp / "box" / "trainer"
    make_workspace(laptop)
    make_workspace(box_ws)
    relay = Relay(tmp / "box-link.sock", box_sock)
    await relay.restore()
    with StandIn() as api:
        api.responder = responder
        config = RuntimeConfig(api_key="demo", base_url=api.base_url, model="claude-sonnet-4-5", max_retries=0)
        hosts = hosts_for_app([GridHost("local"), GridHost("box", socket=str(relay.path), workspace=str(box_ws))],
                              config)

        async def attach() -> MultiHostRuntime:
            return await MultiHostRuntime.attach(hosts, config, backoff=Backoff(first=2.0, cap=8.0))

        app = CockpitApp(attach, None, workspace=laptop, model=config.model, notify_os=False,
                         sessions_dir=tmp / "sessions")
        async with app.run_test(size=(160, 42)) as pilot:
            app.spawn("what port does staging run on, and how do we deploy?")
            app.spawn("why is the upload test flaky?", focus=False)
            app.spawn(SpawnSpec("does the training job fit on one gpu at batch 64?"), focus=False, host="box")
            app.spawn(SpawnSpec("run the step benchmark at batch 64"), focus=False, host="box")
            await wait(pilot, lambda: len(app.views) == 4 and sum(v.status is S.WAITING for v in app.views.values()) == 3
                       and any(v.status is S.NEEDS_APPROVAL for v in app.views.values()))
            first = next(sid for sid, v in app.views.items() if "staging" in v.task)
            app.screen.focus_pane(app.panes[first])
            await pilot.pause(0.5)
            save(app, docs / "hosts-grid.svg")
            await relay.cut()
            await wait(pilot, lambda: all(v.link for sid, v in app.views.items() if sid.startswith("box:")))
            await pilot.pause(0.5)
            save(app, docs / "hosts-reconnecting.svg")
            await app.shutdown()


def main() -> None:
    docs = ROOT / "docs"
    tmp = Path(tempfile.mkdtemp(prefix="cockpit-hosts-shot-"))
    os.environ["COCKPIT_PREWARM"] = "0"
    box_sock = start(tmp / "box-data")
    local_sock = start(tmp / "local-data")  # the app's own data folder: "local" is this server
    try:
        asyncio.run(scene(docs, tmp, box_sock))
    finally:
        stop(box_sock)
        stop(local_sock)


if __name__ == "__main__":
    main()
