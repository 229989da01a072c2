"""Backoff, token bucket and per-key retry delays: the numbers controllers and watches rely on."""

from __future__ import annotations

import pytest

from streams_k8s.k8s.backoff import Backoff, ItemBackoff, RetryLimiter, TokenBucket


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_backoff_grows_exponentially_up_to_the_maximum() -> None:
    clock = FakeClock()
    backoff = Backoff(initial=0.8, maximum=30.0, jitter=0.0, clock=clock)
    delays = [backoff.next_delay() for _ in range(8)]
    assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]


def test_backoff_jitter_only_shortens_delays() -> None:
    clock = FakeClock()
    low = Backoff(initial=1.0, jitter=0.5, clock=clock, rng=lambda: 1.0)
    high = Backoff(initial=1.0, jitter=0.5, clock=clock, rng=lambda: 0.0)
    assert low.next_delay() == pytest.approx(0.5)
    assert high.next_delay() == pytest.approx(1.0)


def test_backoff_starts_over_after_a_healthy_period() -> None:
    clock = FakeClock()
    backoff = Backoff(initial=1.0, jitter=0.0, reset_after=120.0, clock=clock)
    for _ in range(5):
        backoff.next_delay()
        clock.now += 1
    assert backoff.next_delay() == 30.0  # 32 capped
    clock.now += 119.0  # failures keep coming: no reset
    assert backoff.next_delay() == 30.0
    clock.now += 120.0  # two healthy minutes since the last failure
    assert backoff.next_delay() == 1.0


def test_backoff_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="initial"):
        Backoff(initial=5.0, maximum=1.0)


def test_token_bucket_allows_a_burst_then_paces() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10.0, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)
    clock.now += 1.0  # refills, but never beyond the burst
    assert bucket.try_take()
    assert bucket.try_take()


def test_token_bucket_try_take_never_borrows() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=1.0, burst=1, clock=clock)
    assert bucket.try_take()
    assert not bucket.try_take()
    assert not bucket.try_take()
    clock.now += 1.0
    assert bucket.try_take()


def test_item_backoff_is_per_key_and_forgettable() -> None:
    item: ItemBackoff[str] = ItemBackoff(base=0.005, maximum=1000.0)
    assert [item.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert item.when("b") == 0.005
    assert item.failures("a") == 4
    item.forget("a")
    assert item.when("a") == 0.005
    for _ in range(100):
        delay = item.when("c")
    assert delay == 1000.0


def test_retry_limiter_takes_the_larger_of_key_and_global_delays() -> None:
    clock = FakeClock()
    limiter: RetryLimiter[str] = RetryLimiter(
        ItemBackoff(base=0.005), TokenBucket(rate=1.0, burst=2, clock=clock)
    )
    assert limiter.when("a") == 0.005
    assert limiter.when("b") == 0.005
    assert limiter.when("c") == pytest.approx(1.0)  # the bucket is empty: global pacing wins
