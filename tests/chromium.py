"""Headless Chromium (Debian's ``chromium``) driven over the DevTools protocol, for the console's
browser tests and first-paint benchmarks: open a page, evaluate JavaScript, send real mouse input.

aiohttp's websocket client speaks the protocol, so no driver package is needed; without a
``chromium`` on PATH, ``chromium_or_skip`` skips with the reason.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from k8s_support import eventually_async

LISTENING = re.compile(rb"DevTools listening on (ws://[^\s]+)")


def chromium_or_skip() -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("no chromium on PATH (apt-get install chromium; .ci/run installs it)")
    return binary


class Page:
    """One tab: ``evaluate`` returns the value of a JavaScript expression (promises awaited)."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        call = next(self._ids)
        await self._ws.send_str(json.dumps({"id": call, "method": method, "params": params}))
        async for message in self._ws:
            reply = json.loads(message.data)
            if reply.get("id") == call:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result
        raise RuntimeError(f"{method}: the browser closed the connection")

    async def evaluate(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, within: float = 30.0) -> None:
        """Until ``expression`` is truthy (polled)."""

        async def holds() -> bool:
            return bool(await self.evaluate(expression))

        await eventually_async(holds, within=within)

    async def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            await self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    async def click_element(self, selector: str) -> None:
        """A real click at the middle of the first element ``selector`` finds."""
        box = await self.evaluate(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        await self.click(*box)

    async def wheel(self, x: float, y: float, delta: float) -> None:
        await self.send("Input.dispatchMouseEvent", type="mouseWheel", x=x, y=y, deltaX=0, deltaY=delta)

    async def screenshot(self) -> bytes:
        """The tab as PNG."""
        shot = await self.send("Page.captureScreenshot", format="png")
        return base64.b64decode(shot["data"])


@asynccontextmanager
async def browser(width: int = 1400, height: int = 900) -> AsyncIterator[str]:
    """A headless Chromium for the block's length; yields its DevTools HTTP address."""
    binary = chromium_or_skip()
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        process = await asyncio.create_subprocess_exec(
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--window-size={width},{height}",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "about:blank",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            assert process.stderr is not None
            async with asyncio.timeout(60):
                while not (found := LISTENING.search(await process.stderr.readline())):
                    pass
            yield "http://" + found.group(1).decode().removeprefix("ws://").split("/", 1)[0]
        finally:
            process.terminate()
            await process.wait()


@asynccontextmanager
async def page(address: str, url: str) -> AsyncIterator[Page]:
    """A new tab on ``url``, closed afterwards."""
    async with aiohttp.ClientSession() as session:
        async with session.put(f"{address}/json/new?{url}") as response:
            target = await response.json(content_type=None)
        try:
            async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                yield Page(ws)
        finally:
            async with session.get(f"{address}/json/close/{target['id']}"):
                pass
