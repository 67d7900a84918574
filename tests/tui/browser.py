"""Headless Chromium (Debian's package) driven over the DevTools protocol, on loopback only.

Used by test_in_a_browser.py to look at the served app and the screenshots as a browser draws
them. A glyph counts as drawn when Chromium's canvas paints it differently from a character no
font has (U+10FFFD, which every font stack draws as the missing-glyph box) and with some ink.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = shutil.which("chromium")
START_S = 120.0
"""How long Chromium may take to start on a loaded machine before the test fails."""
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
]

GLYPHS_DRAWN_JS = """
(([chars, font]) => {
  const canvas = new OffscreenCanvas(64, 64);
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const draw = (c) => {
    ctx.clearRect(0, 0, 64, 64);
    ctx.font = font; ctx.fillStyle = '#000'; ctx.textBaseline = 'top';
    ctx.fillText(c, 8, 8);
    return ctx.getImageData(0, 0, 64, 64).data.join(',');
  };
  const missing = draw('\\u{10FFFD}');
  const blank = draw(' ');
  return chars.filter((c) => { const seen = draw(c); return seen === missing || seen === blank; });
})
"""
"""JS: of ``chars``, those ``font`` (a CSS font shorthand) draws as the missing glyph or not at all."""

RECORD_TERMINAL_JS = """
window.__terminalText = '';
const NativeWebSocket = window.WebSocket;
window.WebSocket = function (...args) {
  const socket = new NativeWebSocket(...args);
  const decoder = new TextDecoder('utf-8');
  socket.addEventListener('message', async (event) => {
    let data = event.data;
    if (data instanceof Blob) data = await data.arrayBuffer();
    if (data instanceof ArrayBuffer) window.__terminalText += decoder.decode(data, {stream: true});
  });
  return socket;
};
window.WebSocket.prototype = NativeWebSocket.prototype;
Object.assign(window.WebSocket, NativeWebSocket);
"""
"""JS run before the page's own: keeps what the served app writes to the browser's terminal."""


class Page:
    """One browser tab: send DevTools commands, evaluate JS, take screenshots."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self._ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        await self.socket.send_json({"id": message_id, "method": method, "params": params})
        while True:
            reply = json.loads((await self.socket.receive()).data)
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    async def evaluate(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}…: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def open(self, url: str) -> None:
        """Navigate to ``url`` and wait for its load event."""
        await self.send("Page.enable")
        await self.send("Page.navigate", url=url)
        while True:
            event = json.loads((await self.socket.receive()).data)
            if event.get("method") == "Page.loadEventFired":
                return

    async def until(self, expression: str, what: str, wait_s: float = START_S) -> None:
        """Evaluate ``expression`` until it is true; fail naming ``what``."""
        deadline = time.monotonic() + wait_s
        while not await self.evaluate(expression):
            assert time.monotonic() < deadline, f"{what} never happened in the browser"
            await asyncio.sleep(0.2)  # poll the page again shortly; the deadline bounds the wait

    async def glyphs_not_drawn(self, chars: list[str], font: str) -> list[str]:
        found: list[str] = await self.evaluate(f"{GLYPHS_DRAWN_JS}({json.dumps([chars, font])})")
        return found

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))


@asynccontextmanager
async def chromium(profile: Path, width: int = 1600, height: int = 1000) -> AsyncIterator[Page]:
    """A headless Chromium with a fresh profile in ``profile``; yields its first tab."""
    assert CHROMIUM is not None
    process = subprocess.Popen(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_S
        while not port_file.exists() or not port_file.read_text().strip():
            assert process.poll() is None, "chromium exited at start"
            assert time.monotonic() < deadline, "chromium never opened its DevTools port"
            await asyncio.sleep(0.1)  # the file appears once Chromium listens
        port = int(port_file.read_text().split()[0])
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as reply:
                tabs = await reply.json()
            [tab] = [t for t in tabs if t["type"] == "page"][:1]
            async with session.ws_connect(tab["webSocketDebuggerUrl"], max_msg_size=0) as socket:
                page = Page(socket)
                await page.send(
                    "Emulation.setDeviceMetricsOverride",
                    width=width,
                    height=height,
                    deviceScaleFactor=1,
                    mobile=False,
                )
                yield page
    finally:
        process.terminate()
        process.wait(timeout=START_S)


def drawn_characters(text: str) -> list[str]:
    """The characters of ``text`` a font must draw: not ASCII, not spaces, not control codes."""
    return sorted(
        {
            char
            for char in text
            if ord(char) > 0x7E and not char.isspace() and char.isprintable() and char != "\u2800"
        }
    )
