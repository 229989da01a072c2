"""Event-loop lag: a task that should wake every ``interval`` measures how late it wakes.

A loop blocked by synchronous work starves every watch and worker while the process still looks
alive; the lag gauge shows it and ``stalled`` turns liveness red.
"""

from __future__ import annotations

import asyncio
import time
from typing import NoReturn

from streams_k8s.k8s.metrics import RuntimeMetrics


class LoopMonitor:
    def __init__(self, metrics: RuntimeMetrics, interval: float = 0.5) -> None:
        self.interval = interval
        self.lag = 0.0
        self.last_tick = time.monotonic()
        self._gauge = metrics.loop_lag

    async def run(self) -> NoReturn:
        while True:
            before = time.monotonic()
            await asyncio.sleep(self.interval)
            self.last_tick = time.monotonic()
            self.lag = max(0.0, self.last_tick - before - self.interval)
            self._gauge.set(self.lag)

    def stalled(self, budget: float) -> bool:
        """True when the loop woke more than ``budget`` late, or the monitor has not run for that long."""
        return self.lag > budget or time.monotonic() - self.last_tick > self.interval + budget
