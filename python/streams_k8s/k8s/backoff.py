"""Jittered exponential backoff, per-key retry delays and a token bucket.

Defaults follow kube-rs / client-go: watches back off 0.8 s up to 30 s and forget their failures
after 120 s of health; queue keys retry from 5 ms up to 1,000 s; the global bucket allows 10/s
with a burst of 100. A 409 Conflict (a write from a stale cache) is no failure: it retries from
10 ms up to 1 s on its own count, so a slow cache never pushes a key into minutes of backoff.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
Clock = Callable[[], float]


class Backoff:
    """Exponential delays with jitter that start over once the last failure is old enough."""

    def __init__(
        self,
        initial: float = 0.8,
        maximum: float = 30.0,
        factor: float = 2.0,
        jitter: float = 0.5,
        reset_after: float = 120.0,
        clock: Clock = time.monotonic,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if initial <= 0 or maximum < initial or factor < 1 or not 0 <= jitter < 1:
            raise ValueError("backoff needs 0 < initial <= maximum, factor >= 1 and 0 <= jitter < 1")
        self.initial, self.maximum, self.factor, self.jitter = initial, maximum, factor, jitter
        self.reset_after = reset_after
        self._clock, self._rng = clock, rng
        self._attempt = 0
        self._last_failure: float | None = None

    @property
    def attempts(self) -> int:
        return self._attempt

    def next_delay(self) -> float:
        """The delay to wait after one more failure."""
        now = self._clock()
        if self._last_failure is not None and now - self._last_failure >= self.reset_after:
            self._attempt = 0
        self._last_failure = now
        base = min(self.maximum, self.initial * self.factor**self._attempt)
        self._attempt += 1
        # Spread reconnects of many watchers: scale down by up to `jitter`, never above maximum.
        return base * (1.0 - self.jitter * self._rng())

    def reset(self) -> None:
        self._attempt = 0
        self._last_failure = None


class TokenBucket:
    """A token bucket that hands out reservations: the wait until the caller's token exists."""

    def __init__(self, rate: float, burst: int, clock: Clock = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a token bucket needs rate > 0 and burst >= 1")
        self.rate, self.burst = rate, burst
        self._clock = clock
        self._tokens = float(burst)
        self._updated = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._updated) * self.rate)
        self._updated = now

    def try_take(self) -> bool:
        """Take a token if one is available now; never borrow from the future."""
        self._refill()
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def reserve(self) -> float:
        """Take one token (possibly from the future) and return how long to wait for it."""
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)


class ItemBackoff(Generic[K]):
    """Per-key exponential delays (client-go's item exponential failure rate limiter)."""

    def __init__(self, base: float = 0.005, maximum: float = 1000.0) -> None:
        self.base, self.maximum = base, maximum
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        # Cap the exponent so huge failure counts never overflow a float.
        return min(self.maximum, self.base * 2.0 ** min(failures, 64))

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)


class RetryLimiter(Generic[K]):
    """Retry delay for a key: the larger of its own backoff and the global bucket's wait.

    Failures and conflicts back off separately: a conflict neither counts as a failure nor
    inherits the failure backoff, and the bucket still bounds the retries of all keys together."""

    def __init__(
        self,
        item: ItemBackoff[K] | None = None,
        bucket: TokenBucket | None = None,
        conflict: ItemBackoff[K] | None = None,
    ) -> None:
        self.item: ItemBackoff[K] = item if item is not None else ItemBackoff()
        self.bucket = bucket if bucket is not None else TokenBucket(rate=10.0, burst=100)
        self.conflict: ItemBackoff[K] = conflict if conflict is not None else ItemBackoff(0.01, 1.0)

    def when(self, key: K) -> float:
        return max(self.item.when(key), self.bucket.reserve())

    def when_conflicted(self, key: K) -> float:
        return max(self.conflict.when(key), self.bucket.reserve())

    def failures(self, key: K) -> int:
        return self.item.failures(key)

    def forget(self, key: K) -> None:
        self.item.forget(key)
        self.conflict.forget(key)
