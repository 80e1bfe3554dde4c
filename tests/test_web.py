"""``cockpit web``: the real command in a subprocess, attached to a real server, sessions against
the Messages API stand-in. Without the token nothing is served and no app starts; with it, the
page; a headless Chromium (the OS package; skipped when absent) opens the printed URL, the grid
renders, and keys typed in the page spawn a session; a phone-sized page gets the narrow layout."""

from __future__ import annotations

import asyncio
import io
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from cdp import Browser, chromium
from helpers import stop_server
from standin import Reply, StandIn

from cockpit.cli import main
from cockpit.server.client import BlockingClient, server_running

ROOT = Path(__file__).resolve().parent.parent
needs_chromium = pytest.mark.skipif(chromium() is None, reason="no chromium on PATH (Debian: apt-get install chromium)")


@dataclass
class Web:
    url: str
    port: int
    token: str
    proc: subprocess.Popen
    api: StandIn
    out: list[str]


def _start(cwd: Path, *flags: str, api: StandIn) -> Web:
    env = {k: v for k, v in os.environ.items() if k != "COCKPIT_NO_SERVER"}
    env.update(ANTHROPIC_API_KEY="test-key", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "cockpit", "web", "--base-url", api.base_url, "--model", "test-model",
                             "--notes", str(cwd / "notes"), *flags],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out: list[str] = []
    deadline = time.monotonic() + 120  # a failure guard: the server starts first
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        out.append(line)
        found = re.search(r"(http://[^\s/]+:(\d+)/([\w-]+)/)", line)
        if found:
            return Web(found.group(1), int(found.group(2)), found.group(3), proc, api, out)
    proc.kill()
    raise AssertionError(f"cockpit web printed no URL: {''.join(out)}")


def _stop(web: Web) -> str:
    """Stop serving (SIGTERM, as ctrl+c) and the server; what ``cockpit web`` printed after the URL."""
    web.proc.send_signal(signal.SIGTERM)
    try:
        rest, _ = web.proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        web.proc.kill()
        raise
    stop_server()
    return rest


@pytest.fixture
def web(tmp_path, monkeypatch) -> Iterator[Web]:
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    (tmp_path / "notes").mkdir()
    with StandIn() as api:
        api.responder = lambda body: Reply("hello from the stand-in")
        served = _start(tmp_path, api=api)
        try:
            yield served
        finally:
            _stop(served)


def _app_children(pid: int) -> list[str]:
    """Command lines of the processes ``pid`` started that are not the Cockpit server."""
    out = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            cmdline = (status.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"\nPPid:\t{pid}\n" in text and " server " not in cmdline + " ":
            out.append(cmdline)
    return out


async def _get(url: str, **headers: str) -> tuple[int, str, dict]:
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as r:
        return r.status, await r.text(), dict(r.headers)


async def test_without_the_token_nothing_is_served_and_no_app_starts(web: Web):
    base = f"http://127.0.0.1:{web.port}"
    wrong = web.token[:-1] + ("A" if web.token[-1] != "A" else "B")
    for path in ("/", "/ws", f"/{wrong}/", f"/{wrong}/ws", f"/{wrong}/static/js/textual.js", "/static/js/textual.js",
                 f"/x/{web.token}/"):
        status, text, _ = await _get(base + path)
        assert status == 403 and "token" in text, path
    async with aiohttp.ClientSession() as http:  # a websocket without the token: refused before the upgrade
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(f"{base}/{wrong}/ws?width=80&height=24")
        assert refused.value.status == 403
        # with the token, but opened by a page of another site: refused too
        with pytest.raises(aiohttp.WSServerHandshakeError) as foreign:
            await http.ws_connect(f"{web.url}ws?width=80&height=24", origin="http://evil.example")
        assert foreign.value.status == 403
    # the websocket's address fetched as a page (curl, a prefetch): a plain 400, no app, no traceback
    status, text, _ = await _get(web.url + "ws")
    assert status == 400 and "websocket" in text
    assert _app_children(web.proc.pid) == []  # no app process was started for any of them

    status, page, headers = await _get(web.url)
    assert status == 200 and f"ws://127.0.0.1:{web.port}/{web.token}/ws" in page and "<title>Cockpit</title>" in page
    assert 'name="viewport" content="width=device-width' in page  # a phone lays it out at its own width
    assert headers["Referrer-Policy"] == "no-referrer" and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    status, script, _ = await _get(web.url + "static/js/textual.js")
    assert status == 200 and "WebSocket" in script
    # the page's URLs follow the Host the browser used (e.g. the local end of an ssh -L tunnel)
    status, page, _ = await _get(web.url, Host="localhost:9999")
    assert f"ws://localhost:9999/{web.token}/ws" in page
    assert "ssh -L" in "".join(web.out) and web.url.startswith("http://127.0.0.1:")


@needs_chromium
async def test_a_browser_shows_the_grid_and_a_key_press_spawns_a_session(web: Web, tmp_path):
    async with Browser(1280, 800) as browser:
        await browser.open(web.url)
        await browser.wait_for("document.body.classList.contains('-first-byte')", timeout=120)
        await browser.click(640, 4)  # on the header: a tab's app is blurred (its footer empty) until a click
        await browser.wait_for_text("No sessions yet", "Spawn", timeout=120)  # the grid, empty, and its keys
        assert len(_app_children(web.proc.pid)) == 1  # this tab's app
        await browser.press("n")
        await browser.wait_for_text("New session", "fix the failing test", timeout=60)  # the spawn dialog
        await browser.type("say hello from the browser")
        await browser.press("enter")
        deadline = time.monotonic() + 120
        rows: list[dict] = []
        while time.monotonic() < deadline:
            with BlockingClient() as c:
                rows = c.call("list")["sessions"]
            if rows and rows[0]["status"] == "waiting for you":
                break
            await asyncio.sleep(0.2)
        assert [r["task"] for r in rows] == ["say hello from the browser"] and rows[0]["status"] == "waiting for you"
        await browser.wait_for_text("hello from the stand-in", "waiting for you", timeout=60)  # its pane, live
        png = await browser.screenshot(tmp_path / "desktop.png")
        _assert_drawn(png, 1280, 800)
    deadline = time.monotonic() + 60  # the tab closed: its app quits (the session goes on in the server)
    while _app_children(web.proc.pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert _app_children(web.proc.pid) == []
    with BlockingClient() as c:
        assert [r["status"] for r in c.call("list")["sessions"]] == ["waiting for you"]


@needs_chromium
async def test_a_phone_sized_browser_gets_the_narrow_layout(web: Web, tmp_path):
    async with Browser(390, 844, mobile=True) as browser:
        await browser.open(web.url)
        await browser.wait_for("document.body.classList.contains('-first-byte')", timeout=120)
        await browser.click(195, 4)
        await browser.wait_for_text("+ New n", "no sessions", timeout=120)  # the narrow layout's button and list
        png = await browser.screenshot(tmp_path / "phone.png")
        _assert_drawn(png, 390, 844)


def _assert_drawn(png: bytes, width: int, height: int) -> None:
    """The screenshot is the page's size and shows more than a blank background."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.size == (width, height)
    colours = image.getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 20, "the page is (almost) one colour: nothing was drawn"


def test_listening_beyond_loopback_warns_and_names_the_tunnels(tmp_path, monkeypatch):
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    (tmp_path / "notes").mkdir()
    with StandIn() as api:
        served = _start(tmp_path, "--listen", "0.0.0.0", api=api)
        try:
            said = "".join(served.out)
            assert "warning: listening on 0.0.0.0" in said and "ssh -L" in said and "VPN" in said
            assert "starting the Cockpit server" in said  # (the seconds before the URL are explained)
            status, _, _ = asyncio.run(_get(f"http://127.0.0.1:{served.port}/"))
            assert status == 403  # still the token on every request
        finally:
            rest = _stop(served)
        assert "cockpit web: stopped" in rest


def test_bad_input_is_one_line_before_anything_starts(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["web", "--no-server"]) != 0
    assert "drop --no-server" in capsys.readouterr().err
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    assert main(["web", "--workspace", str(tmp_path / "missing")]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "workspace is not a folder" in err
    assert main(["web", "--port", "70000"]) != 0
    assert "--port 70000" in capsys.readouterr().err
    assert main(["web", "--listen", "127.0.0.1:8080"]) == 2  # ADDR:PORT: no warning, no server, one line
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--port 8080" in err and "warning" not in err
    assert main(["web", "--listen", "0.0.0.0\n--port"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not server_running()  # none was started for a refused command


def test_the_app_flags_reach_each_tabs_app_given_before_or_after_web():
    from cockpit.cli import build_parser
    from cockpit.web_cli import app_argv, is_loopback, tunnel

    args = build_parser("web").parse_args(["web", "--notes", "auto", "--no-worktree", "--permission-mode", "plan"])
    assert app_argv(args) == ["--notes", "auto", "--permission-mode", "plan", "--no-worktree"]
    args = build_parser("web").parse_args(["--model", "m1", "web", "--port", "8123"])
    assert app_argv(args) == ["--model", "m1"] and args.port == 8123
    assert app_argv(build_parser("web").parse_args(["web"])) == []
    # a grid of hosts: each tab's app gets every --host, one flag each (not a list's repr)
    args = build_parser("web").parse_args(["--host", "local", "--host", "box", "web"])
    assert app_argv(args) == ["--host", "local", "--host", "box"]
    assert tunnel("127.0.0.1", 8123, "me-box") == "ssh -L 8123:127.0.0.1:8123 me-box"
    assert tunnel("::1", 8123, "me-box") == "ssh -L 8123:[::1]:8123 me-box"  # the address bound, not 127.0.0.1
    assert tunnel("127.0.0.2", 8123, "me-box") == "ssh -L 8123:127.0.0.2:8123 me-box"
    assert tunnel("localhost", 8123, "me-box") == "ssh -L 8123:127.0.0.1:8123 me-box"
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("box.example")


def test_a_browser_tabs_app_detaches_without_a_word_in_the_web_terminal(monkeypatch, capsys):
    """Each closed tab's app would print "N sessions stay in the server" into `cockpit web`'s own
    terminal: the apps it runs (COCKPIT_WEB_TAB set) say nothing; the terminal app still does."""
    from types import SimpleNamespace

    from cockpit import tui_cli
    from cockpit.events import SessionStatus

    live = SimpleNamespace(status=SessionStatus.WAITING)
    app = SimpleNamespace(run=lambda: None, views={"a": live}, return_code=0)

    def message(n, waiting):
        return f"{n} session(s) stay in the server"

    monkeypatch.delenv(tui_cli.WEB_TAB, raising=False)
    assert tui_cli.run_detachable(app, None, message) == 0
    assert "stay in the server" in capsys.readouterr().err
    monkeypatch.setenv(tui_cli.WEB_TAB, "1")
    assert tui_cli.run_detachable(app, None, message) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("request_line", ["GET {token}/ HTTP/1.1", "OPTIONS * junk HTTP/1.1", "GET /{token}/\x01 HTTP/1.1"])
async def test_a_malformed_request_is_one_line_that_does_not_repeat_it(request_line, caplog):
    """Whoever reaches the port, token or not, cannot fill the terminal (or a log of it) with
    aiohttp's tracebacks, and a malformed request that carries the token does not put it there."""
    import logging

    from cockpit.webserve import TokenServer, new_token, serve

    token = new_token()
    stop, ports = asyncio.Event(), []
    task = asyncio.create_task(serve(TokenServer("true", token), "127.0.0.1", 0, ports.append, stop))
    try:
        while not ports:
            await asyncio.sleep(0.01)
        reader, writer = await asyncio.open_connection("127.0.0.1", ports[0])
        writer.write((request_line.format(token=token) + "\r\nHost: x\r\n\r\n").encode())
        await writer.drain()
        answer = await reader.read()
        writer.close()
    finally:
        stop.set()
        await task
    assert answer.split(b"\r\n")[0].endswith(b" 400 Bad Request")
    records = [r for r in caplog.records if r.name.startswith("aiohttp") and r.levelno >= logging.WARNING]
    assert all(r.exc_info is None for r in records), [r.getMessage() for r in records]
    assert all(len(r.getMessage().splitlines()) == 1 for r in records), [r.getMessage() for r in records]
    assert token not in caplog.text and "Traceback" not in caplog.text
