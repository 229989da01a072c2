"""The work queue's contract: dedup, one in-flight run per key, delayed and rate-limited adds."""

from __future__ import annotations

import asyncio

import pytest

from streams_k8s.k8s.backoff import ItemBackoff, RetryLimiter, TokenBucket
from streams_k8s.k8s.metrics import RuntimeMetrics
from streams_k8s.k8s.workqueue import QueueShutDown, WorkQueue


async def test_adds_of_a_waiting_key_collapse() -> None:
    queue: WorkQueue[str] = WorkQueue("q")
    for key in ("a", "b", "a", "a", "c", "b"):
        queue.add(key)
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]


async def test_a_key_in_flight_is_not_handed_out_twice_and_re_adds_run_once_more() -> None:
    queue: WorkQueue[str] = WorkQueue("q")
    queue.add("a")
    key = await queue.get()
    for _ in range(5):
        queue.add("a")  # events during the reconcile
    assert len(queue) == 0  # not available to a second worker
    queue.done(key)
    assert len(queue) == 1
    assert await queue.get() == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_a_queue_is_idle_with_no_key_ready_or_in_flight() -> None:
    """What the idle collection (`k8s.idle_collection`) waits for."""
    queue: WorkQueue[str] = WorkQueue("q")
    assert queue.idle
    queue.add("a")
    assert not queue.idle
    key = await queue.get()
    assert not queue.idle  # being reconciled
    queue.done(key)
    assert queue.idle
    queue.add_after("b", 60.0)
    assert queue.idle  # due later: nothing to do now


async def test_getters_wait_for_keys() -> None:
    queue: WorkQueue[str] = WorkQueue("q")
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not getter.done()
    queue.add("x")
    assert await asyncio.wait_for(getter, 1) == "x"


async def test_a_cancelled_getter_does_not_swallow_a_key() -> None:
    queue: WorkQueue[str] = WorkQueue("q")
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("x")  # wakes `first`...
    first.cancel()  # ...which is cancelled before it runs
    assert await asyncio.wait_for(second, 1) == "x"


async def test_add_after_delays_and_the_earliest_due_time_wins() -> None:
    queue: WorkQueue[str] = WorkQueue("q")
    queue.add_after("a", 0.3)
    queue.add_after("a", 0.05)
    queue.add_after("a", 5.0)
    assert len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 1.0) == "a"
    queue.done("a")
    await asyncio.sleep(0.4)  # the superseded 0.3 s entry must not fire a second run
    assert len(queue) == 0


async def test_rate_limited_adds_back_off_per_key_until_forgotten() -> None:
    limiter: RetryLimiter[str] = RetryLimiter(ItemBackoff(base=0.02), TokenBucket(1000.0, 1000))
    metrics = RuntimeMetrics()
    queue: WorkQueue[str] = WorkQueue("q", limiter, metrics)
    loop = asyncio.get_running_loop()
    gaps = []
    for _ in range(3):
        start = loop.time()
        queue.add_rate_limited("a")
        key = await asyncio.wait_for(queue.get(), 2.0)
        gaps.append(loop.time() - start)
        queue.done(key)
    assert queue.retries("a") == 3
    assert gaps[0] >= 0.015
    assert gaps[1] >= 0.035
    assert gaps[2] >= 0.075
    queue.forget("a")
    assert queue.retries("a") == 0
    assert metrics.registry.get_sample_value("streams_k8s_workqueue_retries_total", {"name": "q"}) == 3


async def test_shutdown_releases_waiting_workers_and_ignores_new_keys() -> None:
    queue: WorkQueue[str] = WorkQueue("q")
    waiting = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.shut_down()
    with pytest.raises(QueueShutDown):
        await waiting
    queue.add("late")
    queue.add_after("later", 0.01)
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_queue_metrics_report_depth_adds_and_latency() -> None:
    metrics = RuntimeMetrics()
    queue: WorkQueue[str] = WorkQueue("jobs", metrics=metrics)
    queue.add("a")
    queue.add("b")
    queue.add("a")
    sample = metrics.registry.get_sample_value
    assert sample("streams_k8s_workqueue_depth", {"name": "jobs"}) == 2
    assert sample("streams_k8s_workqueue_adds_total", {"name": "jobs"}) == 2
    await queue.get()
    assert sample("streams_k8s_workqueue_depth", {"name": "jobs"}) == 1
    assert sample("streams_k8s_workqueue_queue_duration_seconds_count", {"name": "jobs"}) == 1
