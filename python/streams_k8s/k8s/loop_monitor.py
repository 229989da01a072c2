"""Event-loop lag: a task that should wake every ``interval`` measures how late it wakes.

A loop blocked by synchronous work starves every watch and worker while the process still looks
alive; the lag gauge shows it and ``stalled`` turns liveness red. The worst lag of the last
``window`` seconds is kept, so a probe arriving after the loop recovered still sees the stall.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import NoReturn

from streams_k8s.k8s.metrics import RuntimeMetrics


class LoopMonitor:
    def __init__(self, metrics: RuntimeMetrics, interval: float = 0.5, window: float = 10.0) -> None:
        self.interval = interval
        self.window = window
        self.lag = 0.0
        self.last_tick = time.monotonic()
        self._recent: deque[tuple[float, float]] = deque()  # (tick time, lag), last `window` seconds
        self._gauge = metrics.loop_lag

    async def run(self) -> NoReturn:
        while True:
            before = time.monotonic()
            await asyncio.sleep(self.interval)
            self.record(time.monotonic() - before - self.interval)

    def record(self, lag: float) -> None:
        self.last_tick = time.monotonic()
        self.lag = max(0.0, lag)
        self._gauge.set(self.lag)
        self._recent.append((self.last_tick, self.lag))
        while self._recent and self._recent[0][0] < self.last_tick - self.window:
            self._recent.popleft()

    @property
    def worst_recent_lag(self) -> float:
        return max((lag for _, lag in self._recent), default=0.0)

    def stalled(self, budget: float) -> bool:
        """True when the loop woke more than ``budget`` late recently, or the monitor stopped ticking."""
        silent = time.monotonic() - self.last_tick > self.interval + budget
        return silent or self.worst_recent_lag > budget
