"""Reflector/informer against the sandbox, through its fault injection: stalls, 410, drops."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from k8s_support import eventually
from streams_k8s.k8s.backoff import Backoff
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.controller import Controller
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.k8s.objects import ObjectKey
from streams_k8s.sandbox import Sandbox

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)


def configmap(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": {"v": "1"}}


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


class Running:
    """Informers (and optionally a controller) running for the duration of a test."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[Any]] = []

    def start(self, *runs: Any) -> None:
        self.tasks += [asyncio.create_task(run) for run in runs]

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


@pytest.fixture
async def running() -> AsyncIterator[Running]:
    r = Running()
    yield r
    await r.stop()


def fast_informer(client: KubeClient, **options: Any) -> Informer:
    options.setdefault("namespace", "default")
    return Informer(
        client, CONFIGMAPS, backoff=Backoff(initial=0.05, maximum=0.5, reset_after=5.0), **options
    )


class Recorder:
    """An instrumented reconciler: counts runs per key and catches overlapping runs of one key."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()
        self.in_flight: set[ObjectKey] = set()
        self.overlaps = 0

    async def __call__(self, key: ObjectKey) -> None:
        if key in self.in_flight:
            self.overlaps += 1
        self.in_flight.add(key)
        try:
            self.runs[key.name] += 1
            await asyncio.sleep(0.005)
        finally:
            self.in_flight.discard(key)


async def test_list_then_watch_scoped_by_namespace_and_labels(client: KubeClient, running: Running) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": "other"}})
    await client.create(CONFIGMAPS, configmap("pre", app="streams"))
    await client.create(CONFIGMAPS, configmap("unlabelled"))
    await client.create(CONFIGMAPS, configmap("elsewhere", "other", app="streams"))
    informer = fast_informer(client, label_selector="app=streams")
    running.start(informer.run())
    await asyncio.wait_for(informer.synced.wait(), 5)
    assert list(informer.store.keys()) == [ObjectKey("default", "pre")]
    await client.create(CONFIGMAPS, configmap("post", app="streams"))
    await client.create(CONFIGMAPS, configmap("post-other", "other", app="streams"))
    await client.delete(CONFIGMAPS, "pre", "default")
    await eventually(lambda: list(informer.store.keys()) == [ObjectKey("default", "post")])


async def test_an_informer_of_several_namespaces_keeps_each_through_the_others_relists(
    sandbox: Sandbox, client: KubeClient, running: Running
) -> None:
    for namespace in ("team-a", "team-b", "team-c"):
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        await client.create(CONFIGMAPS, configmap("pre", namespace))
    informer = fast_informer(client, namespace=("team-a", "team-b"))
    events: list[tuple[str, str]] = []
    informer.add_handler(
        lambda kind, old, new: events.append((kind, str((new or old or {})["metadata"]["namespace"])))
    )
    running.start(informer.run())
    await asyncio.wait_for(informer.synced.wait(), 5)
    assert sorted(informer.store.keys()) == [ObjectKey("team-a", "pre"), ObjectKey("team-b", "pre")]
    # team-a's watch expires and team-a is relisted: team-b's objects stay, none reported deleted
    sandbox.faults.compact("configmaps")
    sandbox.faults.expire_watches("configmaps")
    await client.create(CONFIGMAPS, configmap("post", "team-b"))
    await client.create(CONFIGMAPS, configmap("post", "team-c"))
    await client.delete(CONFIGMAPS, "pre", "team-a")
    expected = [ObjectKey("team-b", "post"), ObjectKey("team-b", "pre")]
    await eventually(lambda: sorted(informer.store.keys()) == expected)
    assert ("delete", "team-b") not in events
    assert all(namespace != "team-c" for _, namespace in events)
    sample = client.metrics.registry.get_sample_value
    assert [sample("streams_k8s_watch_relists_total", {"watch": part.name}) for part in informer.parts] == [
        2,
        2,
    ]


async def test_server_timeouts_resume_from_the_last_version_without_relisting(
    client: KubeClient, running: Running
) -> None:
    informer = fast_informer(client, watch_timeout=1.0)
    running.start(informer.run())
    await asyncio.wait_for(informer.synced.wait(), 5)
    for i in range(12):  # spread over several server-closed watches
        await client.create(CONFIGMAPS, configmap(f"cm{i}"))
        await asyncio.sleep(0.3)
    await eventually(lambda: len(informer.store) == 12)
    sample = client.metrics.registry.get_sample_value
    assert sample("streams_k8s_watch_relists_total", {"watch": informer.name}) == 1


async def test_a_stalled_watch_is_detected_and_nothing_is_lost(
    sandbox: Sandbox, client: KubeClient, running: Running
) -> None:
    informer = fast_informer(client, inactivity_timeout=1.5)
    reconciler = Recorder()
    controller = Controller("stall", reconciler, workers=2).watch(informer)
    running.start(informer.run(), controller.run())
    await client.create(CONFIGMAPS, configmap("before"))
    await eventually(lambda: reconciler.runs["before"] == 1)

    assert sandbox.faults.stall_watches("configmaps") == 1
    loop = asyncio.get_running_loop()
    stalled_at = loop.time()
    for name in ("during-1", "during-2", "during-3"):
        await client.create(CONFIGMAPS, configmap(name))
    await client.delete(CONFIGMAPS, "before", "default")
    await eventually(
        lambda: (
            all(reconciler.runs[n] >= 1 for n in ("during-1", "during-2", "during-3"))
            and ObjectKey("default", "before") not in informer.store
        ),
        within=6,
    )
    recovered_in = loop.time() - stalled_at
    assert recovered_in < 1.5 + 2.5  # inactivity timeout, then relist, reconnect and processing
    sample = client.metrics.registry.get_sample_value
    assert sample("streams_k8s_watch_errors_total", {"watch": informer.name, "reason": "stalled"}) >= 1
    # relisted: a stream that stalled says nothing good of the server's watch history behind it
    assert sample("streams_k8s_watch_relists_total", {"watch": informer.name}) == 2
    assert reconciler.overlaps == 0


async def test_410_relists_with_synthetic_deletes_and_no_reconcile_storm(
    sandbox: Sandbox, client: KubeClient, running: Running
) -> None:
    for i in range(10):
        await client.create(CONFIGMAPS, configmap(f"cm{i}"))
    informer = fast_informer(client, inactivity_timeout=30)
    deletions: list[str] = []
    informer.add_handler(
        lambda kind, old, new: deletions.append(old["metadata"]["name"]) if kind == "delete" else None
    )
    reconciler = Recorder()
    controller = Controller("gone", reconciler, workers=4).watch(informer)
    running.start(informer.run(), controller.run())
    await eventually(lambda: sum(reconciler.runs.values()) == 10 and not reconciler.in_flight)

    # Go away: the watch stalls while objects change and the server forgets its history.
    sandbox.faults.stall_watches("configmaps")
    await client.delete(CONFIGMAPS, "cm3", "default")
    await client.delete(CONFIGMAPS, "cm7", "default")
    await client.patch(CONFIGMAPS, "cm5", {"data": {"v": "2"}}, "default")
    sandbox.faults.compact("configmaps")
    sandbox.faults.expire_watches("configmaps")  # in-stream 410 Expired

    await eventually(lambda: sorted(deletions) == ["cm3", "cm7"])
    await eventually(lambda: reconciler.runs["cm5"] == 2 and not reconciler.in_flight)
    await asyncio.sleep(0.3)
    sample = client.metrics.registry.get_sample_value
    assert sample("streams_k8s_watch_relists_total", {"watch": informer.name}) == 2
    assert sample("streams_k8s_watch_errors_total", {"watch": informer.name, "reason": "gone"}) >= 1
    # Only what changed while away was reconciled again: no storm over the unchanged objects.
    assert reconciler.runs == Counter({f"cm{i}": 2 if i in (3, 5, 7) else 1 for i in range(10)})
    assert sorted(k.name for k in informer.store) == sorted(f"cm{i}" for i in range(10) if i not in (3, 7))


async def test_a_dropped_watch_reconnects_and_keeps_every_event(
    sandbox: Sandbox, client: KubeClient, running: Running
) -> None:
    informer = fast_informer(client)
    running.start(informer.run())
    await asyncio.wait_for(informer.synced.wait(), 5)
    for round_ in range(3):
        sandbox.faults.drop_watches("configmaps")
        await client.create(CONFIGMAPS, configmap(f"r{round_}"))
        await asyncio.sleep(0.2)
    await eventually(lambda: len(informer.store) == 3)


async def test_list_failures_are_retried_until_the_cache_syncs(
    sandbox: Sandbox, client: KubeClient, running: Running
) -> None:
    await client.create(CONFIGMAPS, configmap("x"))
    sandbox.faults.fail(403, 3, verb="list", resource="configmaps")
    informer = fast_informer(client)
    running.start(informer.run())
    await asyncio.wait_for(informer.synced.wait(), 5)
    assert ObjectKey("default", "x") in informer.store
    sample = client.metrics.registry.get_sample_value
    assert sample("streams_k8s_watch_errors_total", {"watch": informer.name, "reason": "http"}) == 3


async def test_objects_leave_and_join_a_label_scoped_cache_when_relabelled(
    client: KubeClient, running: Running
) -> None:
    await client.create(CONFIGMAPS, configmap("moving", app="streams"))
    informer = fast_informer(client, label_selector="app=streams")
    kinds: list[str] = []
    informer.add_handler(lambda kind, old, new: kinds.append(kind))
    running.start(informer.run())
    await asyncio.wait_for(informer.synced.wait(), 5)
    await client.patch(CONFIGMAPS, "moving", {"metadata": {"labels": {"app": "other"}}}, "default")
    await eventually(lambda: len(informer.store) == 0)
    await client.patch(CONFIGMAPS, "moving", {"metadata": {"labels": {"app": "streams"}}}, "default")
    await eventually(lambda: len(informer.store) == 1)
    assert kinds == ["add", "delete", "add"]


async def test_a_bug_in_a_transform_is_counted_and_the_watcher_carries_on(
    client: KubeClient, running: Running
) -> None:
    await client.create(CONFIGMAPS, configmap("x"))
    calls = 0

    def flaky_transform(obj: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("bug")
        return obj

    informer = fast_informer(client, transform=flaky_transform)
    running.start(informer.run())
    await asyncio.wait_for(informer.synced.wait(), 5)
    assert ObjectKey("default", "x") in informer.store
    sample = client.metrics.registry.get_sample_value
    assert sample("streams_k8s_watch_errors_total", {"watch": informer.name, "reason": "unexpected"}) == 1


async def test_a_throttled_watch_waits_as_long_as_the_server_asks(
    sandbox: Sandbox, client: KubeClient, running: Running
) -> None:
    informer = fast_informer(client)
    running.start(informer.run())
    await asyncio.wait_for(informer.synced.wait(), 5)
    sandbox.faults.fail(429, 1, verb="watch", resource="configmaps", retry_after=2)
    sandbox.faults.drop_watches("configmaps")
    loop = asyncio.get_running_loop()
    dropped_at = loop.time()
    await client.create(CONFIGMAPS, configmap("late"))
    await eventually(lambda: ObjectKey("default", "late") in informer.store, within=6)
    assert loop.time() - dropped_at >= 1.9  # Retry-After: 2, not the 0.05 s backoff
