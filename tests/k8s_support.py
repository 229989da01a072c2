"""Helpers shared by the controller-runtime tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def eventually(condition: Callable[[], bool], within: float = 5.0, every: float = 0.01) -> None:
    """Wait until ``condition()`` holds; fail the test (TimeoutError) after ``within`` seconds."""
    async with asyncio.timeout(within):
        while True:
            if condition():
                return
            await asyncio.sleep(every)
