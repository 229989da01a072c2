"""Helpers shared by the controller-runtime tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


async def eventually(condition: Callable[[], bool], within: float = 5.0, every: float = 0.01) -> None:
    """Wait until ``condition()`` holds; fail the test (TimeoutError) after ``within`` seconds."""
    async with asyncio.timeout(within):
        while True:
            if condition():
                return
            await asyncio.sleep(every)


async def eventually_async(
    check: Callable[[], Awaitable[bool]], within: float = 10.0, every: float = 0.05
) -> None:
    """Like ``eventually`` for a check that has to ask the API server."""
    async with asyncio.timeout(within):
        while True:
            if await check():
                return
            await asyncio.sleep(every)
