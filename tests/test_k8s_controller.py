"""The controller loop without a server: keys in, reconciles out, with the queue's guarantees."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from k8s_support import eventually
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.backoff import ItemBackoff, RetryLimiter, TokenBucket
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.controller import (
    Controller,
    Requeue,
    any_of,
    generation_changed,
    labels_changed,
    owner_mapper,
)
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.objects import ObjectKey


def fast_limiter() -> RetryLimiter[ObjectKey]:
    return RetryLimiter(ItemBackoff(base=0.01, maximum=0.1), TokenBucket(1000.0, 1000))


class Instrumented:
    """A reconciler that records runs and fails when two runs of one key overlap."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.runs: Counter[ObjectKey] = Counter()
        self.in_flight: set[ObjectKey] = set()
        self.overlaps = 0
        self.fail_first: dict[ObjectKey, int] = {}

    async def __call__(self, key: ObjectKey) -> Requeue | None:
        if key in self.in_flight:
            self.overlaps += 1
        self.in_flight.add(key)
        try:
            self.runs[key] += 1
            await asyncio.sleep(self.delay)
            if self.fail_first.get(key, 0) > 0:
                self.fail_first[key] -= 1
                raise RuntimeError("transient")
            return None
        finally:
            self.in_flight.discard(key)


async def run_until(controller: Controller, condition: Callable[[], bool]) -> None:
    task = asyncio.create_task(controller.run())
    try:
        await eventually(condition)
    finally:
        await controller.shutdown(grace=1.0)
        await task


async def test_keys_are_reconciled_once_each_by_bounded_workers() -> None:
    reconciler = Instrumented(delay=0.01)
    controller = Controller("c", reconciler, workers=4)
    keys = [ObjectKey("ns", f"k{i}") for i in range(50)]
    for key in keys:
        controller.queue.add(key)
    await run_until(controller, lambda: sum(reconciler.runs.values()) == 50 and not reconciler.in_flight)
    assert set(reconciler.runs) == set(keys)
    assert reconciler.overlaps == 0


async def test_re_adds_during_a_reconcile_cost_exactly_one_more_run() -> None:
    reconciler = Instrumented(delay=0.1)
    controller = Controller("c", reconciler, workers=4)
    key = ObjectKey("ns", "busy")
    controller.queue.add(key)
    task = asyncio.create_task(controller.run())
    await asyncio.sleep(0.03)
    for _ in range(20):
        controller.queue.add(key)
    await asyncio.sleep(0.4)
    await controller.shutdown(1.0)
    await task
    assert reconciler.runs[key] == 2
    assert reconciler.overlaps == 0


async def test_failures_retry_with_backoff_until_success() -> None:
    reconciler = Instrumented()
    key = ObjectKey("ns", "flaky")
    reconciler.fail_first[key] = 3
    controller = Controller("c", reconciler, limiter=fast_limiter())
    controller.queue.add(key)
    await run_until(controller, lambda: reconciler.runs[key] == 4 and not reconciler.in_flight)
    assert controller.queue.retries(key) == 0  # forgotten after the success
    sample = controller.metrics.registry.get_sample_value
    assert sample("streams_k8s_reconcile_total", {"controller": "c", "result": "error"}) == 3
    assert sample("streams_k8s_reconcile_total", {"controller": "c", "result": "success"}) == 1


def stale_write() -> ApiError:
    return ApiError(409, "Conflict", "the object has been modified; please apply your changes")


def slow_failure_limiter() -> RetryLimiter[ObjectKey]:
    """Failures wait 2 s, 4 s, ...: any conflict that took the failure path would show."""
    return RetryLimiter(ItemBackoff(base=2.0, maximum=30.0), TokenBucket(1000.0, 1000))


async def test_conflicts_retry_promptly_and_are_no_failures() -> None:
    """A write from a stale cache (409) retries within a second, not after the failure backoff."""
    runs = 0

    async def conflicts_four_times(key: ObjectKey) -> None:
        nonlocal runs
        runs += 1
        if runs <= 4:
            raise stale_write()

    controller = Controller("c", conflicts_four_times, limiter=slow_failure_limiter())
    key = ObjectKey("ns", "width-change")
    controller.queue.add(key)
    await run_until(controller, lambda: runs == 5)  # 10+20+40+80 ms; failures would take 2+4+8+16 s
    assert controller.queue.retries(key) == 0
    sample = controller.metrics.registry.get_sample_value
    assert sample("streams_k8s_reconcile_total", {"controller": "c", "result": "conflict"}) == 4
    assert sample("streams_k8s_reconcile_total", {"controller": "c", "result": "error"}) == 0
    assert sample("streams_k8s_reconcile_total", {"controller": "c", "result": "success"}) == 1


async def test_a_lasting_conflict_backs_off_without_a_hot_loop() -> None:
    runs = 0

    async def always_conflicts(key: ObjectKey) -> None:
        nonlocal runs
        runs += 1
        raise stale_write()

    controller = Controller("c", always_conflicts, limiter=slow_failure_limiter())
    controller.queue.add(ObjectKey("ns", "j"))
    task = asyncio.create_task(controller.run())
    await asyncio.sleep(2.5)  # 10 ms doubling up to 1 s: 9 runs by 2.27 s, the next at 3.27 s
    await controller.shutdown(grace=1.0)
    await task
    assert 5 <= runs <= 10


async def test_already_exists_is_a_failure_not_a_conflict() -> None:
    """A create refused because the name is taken may never clear: it takes the failure backoff."""
    runs = 0

    async def name_taken(key: ObjectKey) -> None:
        nonlocal runs
        runs += 1
        raise ApiError(409, "AlreadyExists", 'pods "p" already exists')

    controller = Controller("c", name_taken, limiter=slow_failure_limiter())
    key = ObjectKey("ns", "j")
    controller.queue.add(key)
    task = asyncio.create_task(controller.run())
    await asyncio.sleep(0.5)
    await controller.shutdown(grace=1.0)
    await task
    assert runs == 1
    assert controller.queue.retries(key) == 1


async def test_requeue_after_runs_the_key_again() -> None:
    runs: list[float] = []
    loop = asyncio.get_running_loop()

    async def periodic(key: ObjectKey) -> Requeue | None:
        runs.append(loop.time())
        return Requeue(after=0.05) if len(runs) < 3 else None

    controller = Controller("p", periodic)
    controller.queue.add(ObjectKey("", "x"))
    await run_until(controller, lambda: len(runs) == 3)
    assert runs[2] - runs[0] >= 0.09


async def test_graceful_shutdown_lets_in_flight_reconciles_finish() -> None:
    finished: list[ObjectKey] = []

    async def slow(key: ObjectKey) -> None:
        await asyncio.sleep(0.2)
        finished.append(key)

    controller = Controller("s", slow, workers=2)
    controller.queue.add(ObjectKey("ns", "a"))
    controller.queue.add(ObjectKey("ns", "b"))
    controller.queue.add(ObjectKey("ns", "c"))
    task = asyncio.create_task(controller.run())
    await asyncio.sleep(0.05)
    await controller.shutdown(grace=2.0)
    await task
    assert sorted(k.name for k in finished) == ["a", "b"]  # c was never started


async def test_a_pause_cancels_the_reconciles_under_way_and_resume_runs_their_keys_again() -> None:
    started: list[str] = []
    finished: list[str] = []

    async def slow(key: ObjectKey) -> None:
        started.append(key.name)
        await asyncio.sleep(0.2)
        finished.append(key.name)

    controller = Controller("p", slow, workers=2)
    for name in ("a", "b"):
        controller.queue.add(ObjectKey("ns", name))
    task = asyncio.create_task(controller.run())
    await eventually(lambda: sorted(started) == ["a", "b"])
    controller.pause()  # the Lease is lost: no write may follow
    controller.queue.add(ObjectKey("ns", "c"))  # events go on queueing keys
    await asyncio.sleep(0.4)
    assert finished == []
    assert sorted(started) == ["a", "b"]  # c waits
    assert not task.done()
    controller.resume()
    await eventually(lambda: sorted(finished) == ["a", "b", "c"])
    await controller.shutdown(grace=1.0)
    await task


async def test_a_paused_controller_shuts_down() -> None:
    controller = Controller("q", Instrumented())
    task = asyncio.create_task(controller.run())
    await asyncio.sleep(0.01)
    controller.pause()
    await asyncio.sleep(0.01)
    await controller.shutdown(grace=1.0)
    await asyncio.wait_for(task, 1.0)


def test_generation_predicate_skips_status_only_updates() -> None:
    old = {"metadata": {"generation": 1, "resourceVersion": "1"}, "status": {"phase": "A"}}
    status_only = {"metadata": {"generation": 1, "resourceVersion": "2"}, "status": {"phase": "B"}}
    spec_change = {"metadata": {"generation": 2, "resourceVersion": "3"}}
    deleting = {"metadata": {"generation": 1, "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert not generation_changed(old, status_only)
    assert generation_changed(old, spec_change)
    assert generation_changed(old, deleting)
    assert generation_changed(None, old)
    assert generation_changed(old, None)
    assert generation_changed({"metadata": {}}, {"metadata": {}})  # kinds without generation


def test_predicates_combine() -> None:
    old = {"metadata": {"generation": 1, "labels": {"a": "1"}}}
    relabelled = {"metadata": {"generation": 1, "labels": {"a": "2"}}}
    status_only = {"metadata": {"generation": 1, "labels": {"a": "1"}}, "status": {"x": 1}}
    assert labels_changed(old, relabelled)
    assert not labels_changed(old, status_only)
    either = any_of(generation_changed, labels_changed)
    assert either(old, relabelled)
    assert not either(old, status_only)


def test_owner_mapper_finds_the_controlling_owner_of_the_kind() -> None:
    pod = {
        "metadata": {
            "name": "job1-pe-0",
            "namespace": "ns",
            "ownerReferences": [
                {
                    "apiVersion": "streams.ibm.com/v1",
                    "kind": "ProcessingElement",
                    "name": "pe0",
                    "controller": True,
                },
                {"apiVersion": "streams.ibm.com/v1", "kind": "Job", "name": "job1", "controller": False},
            ],
        }
    }
    assert list(owner_mapper("ProcessingElement")(pod)) == [ObjectKey("ns", "pe0")]
    assert list(owner_mapper("Job")(pod)) == []  # not the controller
    assert list(owner_mapper("ProcessingElement", "v1")(pod)) == []


@pytest.fixture
async def client() -> Any:
    c = KubeClient(Configuration(host="http://127.0.0.1:9"))
    yield c
    await c.close()


async def test_watched_events_enqueue_owner_keys_through_predicates(client: KubeClient) -> None:
    jobs = Informer(client, JOBS)
    pods = Informer(client, Resource("", "v1", "pods", "Pod"))

    async def noop(key: ObjectKey) -> None:
        return None

    controller = Controller("jobs", noop)
    controller.watch(jobs, predicates=[generation_changed]).owns(pods, "Job")
    job = {"metadata": {"name": "j", "namespace": "ns", "generation": 1, "resourceVersion": "1"}}
    jobs.apply_event({"type": "ADDED", "object": job})
    child = {
        "metadata": {
            "name": "j-pod",
            "namespace": "ns",
            "resourceVersion": "2",
            "ownerReferences": [{"kind": "Job", "name": "j", "controller": True, "apiVersion": "x"}],
        }
    }
    pods.apply_event({"type": "ADDED", "object": child})
    assert len(controller.queue) == 1  # the owner, once
    key = await controller.queue.get()
    assert key == ObjectKey("ns", "j")
    controller.queue.done(key)
    status_only = {**job, "metadata": {**job["metadata"], "resourceVersion": "3"}, "status": {"x": 1}}
    jobs.apply_event({"type": "MODIFIED", "object": status_only})
    assert len(controller.queue) == 0  # filtered by generation


async def test_after_a_conflict_any_event_of_the_key_runs_it_again(client: KubeClient) -> None:
    """The event that brings the cache up to date re-runs a conflicted key at once, even one the
    predicates would filter (the status-only write that made the reconcile's write stale)."""
    jobs = Informer(client, JOBS)
    seen: list[str] = []

    async def writes_from_cache(key: ObjectKey) -> None:
        current = jobs.store.get(key)
        assert current is not None
        seen.append(current["metadata"]["resourceVersion"])
        if current["metadata"]["resourceVersion"] == "1":
            raise stale_write()

    conflict_backoff = ItemBackoff[ObjectKey](base=30.0, maximum=30.0)  # only the event can re-run it
    limiter = RetryLimiter(ItemBackoff(base=30.0), TokenBucket(1000.0, 1000), conflict_backoff)
    controller = Controller("jobs", writes_from_cache, limiter=limiter)
    controller.watch(jobs, predicates=[generation_changed])
    job = {"metadata": {"name": "j", "namespace": "ns", "generation": 1, "resourceVersion": "1"}}
    jobs.apply_event({"type": "ADDED", "object": job})
    task = asyncio.create_task(controller.run())
    try:
        await eventually(lambda: seen == ["1"] and len(controller.queue) == 0)
        status_only = {**job, "metadata": {**job["metadata"], "resourceVersion": "2"}, "status": {"x": 1}}
        jobs.apply_event({"type": "MODIFIED", "object": status_only})
        await eventually(lambda: seen == ["1", "2"])
        other_status = {**job, "metadata": {**job["metadata"], "resourceVersion": "3"}, "status": {"x": 2}}
        jobs.apply_event({"type": "MODIFIED", "object": other_status})
        await asyncio.sleep(0.1)
        assert seen == ["1", "2"]  # reconciled since: filtered again
    finally:
        await controller.shutdown(grace=1.0)
        await task


async def test_watching_a_filled_cache_enqueues_what_it_already_holds(client: KubeClient) -> None:
    jobs = Informer(client, JOBS)
    for name in ("a", "b"):
        jobs.apply_event(
            {
                "type": "ADDED",
                "object": {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"}},
            }
        )

    async def noop(key: ObjectKey) -> None:
        return None

    controller = Controller("late", noop).watch(jobs)
    assert sorted([await controller.queue.get(), await controller.queue.get()]) == [
        ObjectKey("ns", "a"),
        ObjectKey("ns", "b"),
    ]


async def test_a_hung_reconcile_is_cut_off_and_retried() -> None:
    runs = 0

    async def hangs_once(key: ObjectKey) -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            await asyncio.Event().wait()  # never returns

    controller = Controller("hung", hangs_once, timeout=0.1, limiter=fast_limiter())
    controller.queue.add(ObjectKey("ns", "stuck"))
    await run_until(controller, lambda: runs == 2)
    sample = controller.metrics.registry.get_sample_value
    assert sample("streams_k8s_reconcile_total", {"controller": "hung", "result": "error"}) == 1
