"""Background work's turn on the operator's event loop: at once while the controllers are idle,
else once they are, and at a deadline at the latest, so work that waits its turn is late, never
lost. The reading of the PEs' metrics waits its turn before each read (`flow.scraper`): a round of
1,000 reads takes ~0.4 s of the event loop, and one that fell into an upgrade or a submission held
their writes back for as long.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

STEP = 0.05  # seconds between looks while the controllers are busy

Turn = Callable[[], Awaitable[None]]


async def now() -> None:
    """The turn of work that waits for nothing."""


class IdleTurn:
    """Awaited before each piece of background work (see the module docs); ``deadline`` by
    ``clock``."""

    def __init__(
        self,
        idle: Callable[[], bool],
        deadline: float,
        clock: Callable[[], float] = time.monotonic,
        step: float = STEP,
    ) -> None:
        self._idle, self._deadline, self._clock, self._step = idle, deadline, clock, step
        # One waiter looks at a time; the others queue behind it, so a hundred reads waiting
        # wake the loop as often as one does.
        self._lock = asyncio.Lock()

    def _due(self) -> bool:
        return self._idle() or self._clock() >= self._deadline

    async def __call__(self) -> None:
        if self._due():
            return
        async with self._lock:
            # The controllers' idleness is a look at their queues, not an event to wait on.
            while not self._due():  # noqa: ASYNC110
                await asyncio.sleep(self._step)
