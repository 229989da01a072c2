"""A deduplicating work queue drained by one asyncio task: how the simulated controllers react."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class Worker(Generic[K]):
    """Runs `handler(key)` for each queued key; a key queued while pending runs once."""

    def __init__(self, name: str, handler: Callable[[K], Awaitable[None] | None]) -> None:
        self.name = name
        self.handler = handler
        self._pending: dict[K, None] = {}
        self._wake = asyncio.Event()
        self._busy = False
        self._task: asyncio.Task[None] | None = None

    def add(self, key: K) -> None:
        self._pending[key] = None
        self._wake.set()

    @property
    def idle(self) -> bool:
        return not self._pending and not self._busy

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"sandbox-{self.name}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                key = next(iter(self._pending))
                del self._pending[key]
                self._busy = True
                try:
                    result = self.handler(key)
                    if result is not None:
                        await result
                except Exception:  # a failing item must not stop the simulated cluster
                    log.exception("sandbox %s failed on %r", self.name, key)
                finally:
                    self._busy = False
                await asyncio.sleep(0)
