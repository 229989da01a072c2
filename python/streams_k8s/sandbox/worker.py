"""A deduplicating work queue drained by one asyncio task: how the simulated controllers react."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)

# How long a worker handles keys before it lets the rest of the loop run. One key per turn of the
# loop starved the simulated controllers when requests filled each turn: at 10,000 PEs the kubelet
# readied pods minutes after the last was created.
_SLICE = 0.005


class Worker(Generic[K]):
    """Runs `handler(key)` for each queued key; a key queued while pending runs once."""

    def __init__(self, name: str, handler: Callable[[K], Awaitable[None] | None]) -> None:
        self.name = name
        self.handler = handler
        self._pending: dict[K, None] = {}
        self._wake = asyncio.Event()
        self._busy = False
        self._timers = 0
        self._running = asyncio.Event()
        self._running.set()
        self._task: asyncio.Task[None] | None = None
        self._spawned: set[asyncio.Task[None]] = set()

    def add(self, key: K) -> None:
        self._pending[key] = None
        self._wake.set()

    def later(self, delay: float, key: K) -> None:
        """Queue `key` after `delay` seconds; the worker is not idle until then."""
        self._timers += 1

        def fire() -> None:
            self._timers -= 1
            self.add(key)

        asyncio.get_running_loop().call_later(delay, fire)

    def spawn(self, work: Awaitable[None]) -> None:
        """Run ``work`` beside the queue (what happens in parallel in a cluster, e.g. every PE
        reporting); errors are logged; the worker is not idle until it ends."""

        async def guarded() -> None:
            try:
                await work
            except Exception:
                log.exception("sandbox %s failed in spawned work", self.name)

        task = asyncio.get_running_loop().create_task(guarded())
        self._spawned.add(task)
        task.add_done_callback(self._spawned.discard)

    def run_pending(self) -> int:
        """Handle the queued keys now, in the caller (deterministic stepping for tests and tools);
        errors propagate. Only for synchronous handlers. Returns how many keys were handled."""
        handled = 0
        while self._pending:
            key = next(iter(self._pending))
            del self._pending[key]
            result = self.handler(key)
            if result is not None:
                raise TypeError(
                    f"{self.name} has an asynchronous handler: it cannot be stepped synchronously"
                )
            handled += 1
        return handled

    def pause(self) -> None:
        """Stop handling keys (they stay queued) until resume(); a paused worker counts as idle."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def idle(self) -> bool:
        quiet = not self._pending and not self._busy and not self._timers and not self._spawned
        return self.paused or quiet

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"sandbox-{self.name}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for task in list(self._spawned):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self._running.wait()
            turn_ends = loop.time() + _SLICE
            while self._pending and not self.paused:
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
                if loop.time() >= turn_ends:
                    await asyncio.sleep(0)
                    turn_ends = loop.time() + _SLICE
            if self._pending:  # paused with work left: pick it up on resume
                self._wake.set()
