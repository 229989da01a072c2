"""The console served against the sandbox (as `streams-k8s console` serves it), for its tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from k8s_support import eventually_async, sandbox_runtime
from streams_k8s.cli.console import start_console
from streams_k8s.console.live_flow import FlowSource
from streams_k8s.k8s.manager import Manager
from streams_k8s.sandbox import Sandbox


@dataclass
class RunningConsole:
    url: str
    manager: Manager


@contextlib.asynccontextmanager
async def console(
    sandbox: Sandbox, cache: Path, auth: str = "none", flow: FlowSource | None = None
) -> AsyncIterator[RunningConsole]:
    settings = sandbox_runtime(sandbox)
    manager = Manager(settings)
    await manager.connect()
    async with contextlib.AsyncExitStack() as stack:
        server = await start_console(manager, stack, cache, host="127.0.0.1", port=0, auth=auth, flow=flow)
        task = asyncio.create_task(manager.run(handle_signals=False))
        try:
            running = RunningConsole(f"http://127.0.0.1:{server.port}", manager)
            await eventually_async(lambda: _synced(running.url), within=15)
            yield running
        finally:
            manager.stop()
            await task


async def _synced(url: str) -> bool:
    async with aiohttp.ClientSession() as session, session.get(f"{url}/healthz") as answer:
        return answer.status == 200


async def get_json(url: str, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as answer:
        return answer.status, orjson.loads(await answer.read())


async def first_push(url: str, token: str | None = None) -> tuple[int, Any]:
    """The status of a push stream and its first event's data (None when it is refused)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as answer:
        if answer.status != 200:
            return answer.status, orjson.loads(await answer.read())
        async for line in answer.content:
            if line.startswith(b"data: "):
                return answer.status, orjson.loads(line[len(b"data: ") :])
    raise AssertionError(f"{url}: the stream ended without an event")
