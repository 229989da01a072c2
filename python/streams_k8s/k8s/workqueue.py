"""A deduplicating work queue: one in-flight run per key, re-adds collapse into one more run.

Same contract as client-go's workqueue: a key is *dirty* while it waits and *processing* while a
worker holds it. Adding a dirty key does nothing; adding a processing key marks it dirty, and
``done`` puts it back once, so a burst of events during a long reconcile costs one extra run.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from streams_k8s.k8s.backoff import Clock, RetryLimiter
from streams_k8s.k8s.metrics import RuntimeMetrics

K = TypeVar("K", bound=Hashable)


class QueueShutDown(Exception):
    """The queue is shutting down; workers stop taking keys."""


class WorkQueue(Generic[K]):
    def __init__(
        self,
        name: str,
        limiter: RetryLimiter[K] | None = None,
        metrics: RuntimeMetrics | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.name = name
        self.limiter: RetryLimiter[K] = limiter if limiter is not None else RetryLimiter()
        self._clock = clock
        self._ready: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._enqueued_at: dict[K, float] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        # Delayed adds: the earliest due time per key, and a heap that may hold stale entries.
        self._due: dict[K, float] = {}
        self._heap: list[tuple[float, int, K]] = []
        self._seq = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")
        self._shutting_down = False
        metrics = metrics if metrics is not None else RuntimeMetrics()
        self._m_depth = metrics.queue_depth.labels(name)
        self._m_adds = metrics.queue_adds.labels(name)
        self._m_retries = metrics.queue_retries.labels(name)
        self._m_latency = metrics.queue_latency.labels(name)

    def __len__(self) -> int:
        return len(self._ready)

    @property
    def idle(self) -> bool:
        """No key ready and none being processed (keys due later do not count)."""
        return not self._ready and not self._processing

    def add(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._m_adds.inc()
        self._dirty.add(key)
        self._enqueued_at[key] = self._clock()
        if key not in self._processing:
            self._push_ready(key)

    def add_after(self, key: K, delay: float) -> None:
        """Add ``key`` after ``delay`` seconds; of several pending delays, the earliest wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        due = self._clock() + delay
        if self._due.get(key, float("inf")) <= due:
            return
        self._due[key] = due
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, key))
        self._arm_timer()

    def add_rate_limited(self, key: K) -> None:
        """Retry ``key`` after its backoff (it failed)."""
        self._m_retries.inc()
        self.add_after(key, self.limiter.when(key))

    def add_conflicted(self, key: K) -> None:
        """Retry ``key`` after its short conflict backoff (a write of it met a newer version)."""
        self._m_retries.inc()
        self.add_after(key, self.limiter.when_conflicted(key))

    def forget(self, key: K) -> None:
        """Clear the failure history of ``key`` (it succeeded)."""
        self.limiter.forget(key)

    def retries(self, key: K) -> int:
        return self.limiter.failures(key)

    async def get(self) -> K:
        """Wait for a key and mark it processing. Raises QueueShutDown once shutting down."""
        while not self._ready:
            if self._shutting_down:
                raise QueueShutDown
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # pass the wake-up on, or a ready key would sit unclaimed
                else:
                    self._getters.remove(waiter)
                raise
        if self._shutting_down:
            raise QueueShutDown
        key = self._ready.popleft()
        self._m_depth.set(len(self._ready))
        self._dirty.discard(key)
        self._processing.add(key)
        started = self._enqueued_at.pop(key, None)
        if started is not None:
            self._m_latency.observe(self._clock() - started)
        return key

    def done(self, key: K) -> None:
        """The worker finished ``key``; if it was re-added meanwhile, queue it once more."""
        self._processing.discard(key)
        if key in self._dirty:
            self._push_ready(key)

    def shut_down(self) -> None:
        """Stop handing out keys; workers blocked in ``get`` raise QueueShutDown."""
        self._shutting_down = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _push_ready(self, key: K) -> None:
        self._ready.append(key)
        self._m_depth.set(len(self._ready))
        self._wake_one()

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _arm_timer(self) -> None:
        if not self._heap or self._heap[0][0] >= self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer_at = self._heap[0][0]
        delay = max(0.0, self._timer_at - self._clock())
        self._timer = loop.call_at(loop.time() + delay, self._fire_due)

    def _fire_due(self) -> None:
        self._timer, self._timer_at = None, float("inf")
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            due, _, key = heapq.heappop(self._heap)
            if self._due.get(key) == due:  # skip entries superseded by an earlier due time
                del self._due[key]
                self.add(key)
        self._arm_timer()
