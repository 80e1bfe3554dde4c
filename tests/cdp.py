"""A headless Chromium (the OS package) driven over the Chrome DevTools Protocol, for
``tests/test_web.py`` and ``bench/web_shots.py``: open a page, read what ``cockpit web``'s
websocket brought (the terminal is drawn on a canvas, so the text is read from the stream: every
binary frame the page receives is kept, its escape sequences removed), press keys, take a
screenshot. No selenium, no playwright: aiohttp's websocket client and one JSON message a call.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

# kept before the page's own scripts run: a copy of the text of every frame the app sent
TAP = r"""
(() => {
  const Native = window.WebSocket;
  const decoder = new TextDecoder();
  window.__cockpitText = "";
  function Tapped(url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    ws.addEventListener("message", (e) => {
      if (typeof e.data === "string") return;
      let text = window.__cockpitText + decoder.decode(e.data, {stream: true});
      window.__cockpitText = text.length > 400000 ? text.slice(-200000) : text;
    });
    return ws;
  }
  Tapped.prototype = Native.prototype;
  Object.assign(Tapped, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  window.WebSocket = Tapped;
})();
"""
ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[P\]_^][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>78]")

KEYS = {  # key name → (key, code, windowsVirtualKeyCode, text)
    "enter": ("Enter", "Enter", 13, "\r"),
    "escape": ("Escape", "Escape", 27, ""),
    "tab": ("Tab", "Tab", 9, "\t"),
}


def chromium() -> str | None:
    """The Chromium binary on PATH, or None."""
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


class Browser:
    """``async with Browser(width, height) as b``: one headless tab of that size (CSS pixels,
    device scale 1; ``mobile`` emulates a phone's viewport)."""

    def __init__(self, width: int, height: int, mobile: bool = False, timeout: float = 60.0) -> None:
        self.width, self.height, self.mobile, self.timeout = width, height, mobile, timeout
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future] = {}

    async def __aenter__(self) -> Browser:
        binary = chromium()
        if binary is None:
            raise RuntimeError("no chromium on PATH")
        # (Chromium's helper processes may still write to the profile as the main one exits)
        self._profile = tempfile.TemporaryDirectory(prefix="cockpit-chromium-", ignore_cleanup_errors=True)
        argv = [binary, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={self._profile.name}",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--mute-audio",
                "--hide-scrollbars", f"--window-size={self.width},{self.height}", "about:blank"]
        if os.geteuid() == 0:
            argv.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self._profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chromium did not start (exit code {self.proc.poll()})")
            await asyncio.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        self._http = aiohttp.ClientSession()
        async with self._http.get(f"http://127.0.0.1:{port}/json/list") as r:
            pages = [t for t in await r.json() if t.get("type") == "page"]
        self._ws = await self._http.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        await self.send("Page.enable")
        await self.send("Emulation.setDeviceMetricsOverride", width=self.width, height=self.height,
                        deviceScaleFactor=1, mobile=self.mobile)
        await self.send("Page.addScriptToEvaluateOnNewDocument", source=TAP)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._reader.cancel()
        await self._ws.close()
        await self._http.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._profile.cleanup()

    async def _read(self) -> None:
        async for msg in self._ws:
            data = json.loads(msg.data)
            future = self._waiting.pop(data.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(data)

    async def send(self, method: str, **params: Any) -> dict:
        """One CDP call; its ``result`` (a CDP error raises RuntimeError)."""
        n = next(self._ids)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._waiting[n] = future
        await self._ws.send_str(json.dumps({"id": n, "method": method, "params": params}))
        data = await asyncio.wait_for(future, self.timeout)
        if "error" in data:
            raise RuntimeError(f"{method}: {data['error']}")
        return data.get("result", {})

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    async def open(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def text(self) -> str:
        """What the app has written to this page so far, escape sequences removed."""
        return ANSI.sub("", await self.evaluate("window.__cockpitText || ''") or "")

    async def wait_for_text(self, *needles: str, timeout: float | None = None) -> str:
        """Wait until every one of ``needles`` has arrived (``timeout`` bounds a failing test)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            text = await self.text()
            if all(n in text for n in needles):
                return text
            if time.monotonic() > deadline:
                missing = [n for n in needles if n not in text]
                raise AssertionError(f"the page never showed {missing!r}; last: {text[-600:]!r}")
            await asyncio.sleep(0.1)

    async def wait_for(self, expression: str, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.timeout)
        while not await self.evaluate(expression):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {expression}")
            await asyncio.sleep(0.1)

    async def click(self, x: int, y: int) -> None:
        """A left click (a tap) at CSS pixel (x, y): it focuses the terminal, and the app sees it."""
        for kind in ("mousePressed", "mouseReleased"):
            await self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    async def press(self, key: str) -> None:
        """A key, as a user's keyboard sends it: keyDown (with its text) and keyUp."""
        name, code, vk, text = KEYS.get(key) or (key, f"Key{key.upper()}" if key.isalpha() else "", ord(key.upper()), key)
        down: dict[str, Any] = {"type": "keyDown", "key": name, "code": code, "windowsVirtualKeyCode": vk}
        if text:
            down["text"] = text
        await self.send("Input.dispatchKeyEvent", **down)
        await self.send("Input.dispatchKeyEvent", type="keyUp", key=name, code=code, windowsVirtualKeyCode=vk)

    async def type(self, text: str) -> None:
        for char in text:
            await self.press(char) if char.isalnum() else await self.send("Input.insertText", text=char)

    async def screenshot(self, path: Path | None = None) -> bytes:
        data = base64.b64decode((await self.send("Page.captureScreenshot", format="png"))["data"])
        if path is not None:
            path.write_bytes(data)
        return data
