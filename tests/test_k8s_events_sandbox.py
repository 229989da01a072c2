"""The events recorder against the sandbox: one Event per distinct occurrence, repeats aggregated."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from k8s_support import eventually_async
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.event_delivery import CORE_EVENTS
from streams_k8s.k8s.events import EVENTS, EventRecorder
from streams_k8s.sandbox import Sandbox

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def subject(client: KubeClient) -> dict[str, Any]:
    return await client.create(CONFIGMAPS, {"metadata": {"name": "subject", "namespace": "default"}})


async def test_repeats_become_one_event_with_a_series(client: KubeClient, subject: dict[str, Any]) -> None:
    recorder = EventRecorder(client, "streams-controller", "replica-1")
    for _ in range(3):
        await recorder.record(subject, "Warning", "BundleFetchFailed", "GET https://x/app.sab: 404")
    await recorder.record(subject, "Normal", "Submitted", "job submitted")
    events, _ = await client.list_all(EVENTS, "default")
    by_reason = {e["reason"]: e for e in events}
    assert sorted(by_reason) == ["BundleFetchFailed", "Submitted"]
    failed = by_reason["BundleFetchFailed"]
    assert failed["type"] == "Warning"
    assert failed["note"] == "GET https://x/app.sab: 404"
    assert failed["series"]["count"] == 3
    assert failed["regarding"]["uid"] == subject["metadata"]["uid"]
    assert failed["reportingController"] == "streams-controller"
    assert failed["reportingInstance"] == "replica-1"
    assert "series" not in by_reason["Submitted"]
    sample = client.metrics.registry.get_sample_value
    assert sample("streams_k8s_events_total", {"outcome": "created"}) == 2
    assert sample("streams_k8s_events_total", {"outcome": "aggregated"}) == 2


async def test_an_expired_event_is_started_afresh(client: KubeClient, subject: dict[str, Any]) -> None:
    recorder = EventRecorder(client, "streams-controller", "replica-1")
    await recorder.record(subject, "Normal", "Submitted", "job submitted")
    events, _ = await client.list_all(EVENTS, "default")
    await client.delete(EVENTS, events[0]["metadata"]["name"], "default")  # the API server's TTL
    await recorder.record(subject, "Normal", "Submitted", "job submitted")
    events, _ = await client.list_all(EVENTS, "default")
    assert len(events) == 1
    assert "series" not in events[0]


async def test_a_flood_on_one_object_is_throttled(client: KubeClient, subject: dict[str, Any]) -> None:
    recorder = EventRecorder(client, "streams-controller", "replica-1", burst=5)
    for i in range(8):
        await recorder.record(subject, "Normal", "Progress", f"step {i}")
    events, _ = await client.list_all(EVENTS, "default")
    assert len(events) == 5
    assert client.metrics.registry.get_sample_value("streams_k8s_events_total", {"outcome": "dropped"}) == 3


async def test_recording_never_raises(sandbox: Sandbox, client: KubeClient, subject: dict[str, Any]) -> None:
    sandbox.faults.fail(403, 1, verb="create", resource="events")
    recorder = EventRecorder(client, "streams-controller", "replica-1")
    await recorder.record(subject, "Normal", "Submitted", "job submitted")  # the API refuses: logged, counted
    assert client.metrics.registry.get_sample_value("streams_k8s_events_total", {"outcome": "failed"}) == 1


async def test_events_carry_first_and_last_timestamps_and_both_apis_agree(
    client: KubeClient, subject: dict[str, Any]
) -> None:
    recorder = EventRecorder(client, "streams-controller", "replica-1")
    await recorder.record(subject, "Warning", "PodFailed", "pe-3 exited with 1")
    (first,) = (await client.list_all(CORE_EVENTS, "default"))[0]
    assert first["firstTimestamp"] == first["lastTimestamp"]  # what `kubectl get events` sorts on
    assert first["eventTime"].startswith(first["firstTimestamp"][:19])
    assert first["count"] == 1
    await asyncio.sleep(1.1)  # lastTimestamp has whole seconds
    await recorder.record(subject, "Warning", "PodFailed", "pe-3 exited with 1")
    (core,) = (await client.list_all(CORE_EVENTS, "default"))[0]
    assert core["firstTimestamp"] == first["firstTimestamp"]
    assert core["lastTimestamp"] > first["lastTimestamp"]
    assert (core["count"], core["series"]["count"]) == (2, 2)
    assert core["series"]["lastObservedTime"].startswith(core["lastTimestamp"][:19])
    # events.k8s.io/v1 readers see the same Event through the API server's conversion.
    (new,) = (await client.list_all(EVENTS, "default"))[0]
    assert new["eventTime"] == core["eventTime"]
    assert new["series"] == core["series"]
    assert new["deprecatedLastTimestamp"] == core["lastTimestamp"]
    assert (new["reportingController"], new["action"]) == ("streams-controller", "Reconcile")


@pytest.mark.sandbox(disabled_apis=["events.k8s.io/v1"])  # an older cluster
async def test_events_are_recorded_where_events_k8s_io_is_not_served(
    client: KubeClient, subject: dict[str, Any]
) -> None:
    recorder = EventRecorder(client, "streams-controller", "replica-1")
    for _ in range(2):
        await recorder.record(subject, "Warning", "PodFailed", "pe-3 exited with 1")
    events, _ = await client.list_all(CORE_EVENTS, "default")
    assert [(e["reason"], e["message"], e["count"]) for e in events] == [
        ("PodFailed", "pe-3 exited with 1", 2)
    ]
    assert events[0]["involvedObject"]["name"] == "subject"
    assert events[0]["source"] == {"component": "streams-controller"}


async def test_an_event_the_api_server_did_not_take_is_delivered_later_once(
    sandbox: Sandbox, client: KubeClient, subject: dict[str, Any]
) -> None:
    sandbox.faults.fail(500, 3, verb="create", resource="events")
    recorder = EventRecorder(client, "streams-controller", "replica-1")
    recorder.delivery.first_delay = 0.05
    await recorder.record(subject, "Normal", "Running", "all 3 PE pods are ready")
    await recorder.record(subject, "Normal", "Running", "all 3 PE pods are ready")  # counted meanwhile

    async def delivered() -> bool:
        return recorder.delivery.pending == 0

    await eventually_async(delivered, within=10)
    events, _ = await client.list_all(CORE_EVENTS, "default")
    assert [(e["reason"], e["count"]) for e in events] == [("Running", 2)]
    sample = client.metrics.registry.get_sample_value
    assert sample("streams_k8s_events_total", {"outcome": "queued"}) == 1


async def test_a_throttled_event_never_holds_its_caller_and_is_delivered_after_the_retry_after(
    sandbox: Sandbox, client: KubeClient, subject: dict[str, Any]
) -> None:
    """A 429 (Retry-After: 1) on an Event's create: the recording reconcile goes on at once (the
    write waits in the queue, not in the client's inline retries), and the Event comes once."""
    sandbox.faults.fail(429, 1, verb="create", resource="events", retry_after=1)
    recorder = EventRecorder(client, "streams-controller", "replica-1")
    recorder.delivery.first_delay = 0.05
    await recorder.record(subject, "Normal", "Submitted", "job submitted")
    assert recorder.delivery.pending == 1  # returned after one attempt, the write still owed

    async def delivered() -> bool:
        return recorder.delivery.pending == 0

    await eventually_async(delivered, within=10)
    events, _ = await client.list_all(CORE_EVENTS, "default")
    assert [(e["reason"], e["count"]) for e in events] == [("Submitted", 1)]
    creates = [r for r in sandbox.requests if r.method == "POST" and r.path.endswith("/events")]
    assert [r.status for r in creates] == [429, 201]
    assert creates[1].time - creates[0].time >= 1.0  # the Retry-After honoured by the queue


async def test_waiting_events_are_bounded_and_the_oldest_dropped_is_counted(
    sandbox: Sandbox, client: KubeClient, subject: dict[str, Any]
) -> None:
    sandbox.faults.fail(503, None, verb="create", resource="events")
    recorder = EventRecorder(client, "streams-controller", "replica-1")
    recorder.delivery.limit = 2
    for i in range(3):
        await recorder.record(subject, "Normal", "Progress", f"step {i}")
    assert recorder.delivery.pending == 2
    assert client.metrics.registry.get_sample_value("streams_k8s_events_total", {"outcome": "dropped"}) == 1
    sandbox.faults.clear()
    assert await recorder.delivery.flush_once()
    events, _ = await client.list_all(CORE_EVENTS, "default")
    assert sorted(e["message"] for e in events) == ["step 1", "step 2"]
    await recorder.close(1.0)


async def test_a_milestone_recorded_again_by_another_replica_stays_one_event(
    client: KubeClient, subject: dict[str, Any]
) -> None:
    for replica in ("replica-1", "replica-2"):
        recorder = EventRecorder(client, "streams-controller", replica)
        for _ in range(2):
            await recorder.record_once(subject, "Normal", "SubmissionSucceeded", "3 PEs submitted", "1/1")
    await EventRecorder(client, "streams-controller", "replica-1").record_once(
        subject, "Normal", "SubmissionSucceeded", "3 PEs submitted", "1/2"
    )
    events, _ = await client.list_all(CORE_EVENTS, "default")
    assert [e["reason"] for e in events] == ["SubmissionSucceeded"] * 2


async def test_a_lost_answer_makes_no_second_event(
    sandbox: Sandbox, client: KubeClient, subject: dict[str, Any]
) -> None:
    sandbox.faults.fail(500, 1, verb="create", resource="events", after_commit=True)
    recorder = EventRecorder(client, "streams-controller", "replica-1")
    recorder.delivery.first_delay = 0.05
    await recorder.record(subject, "Normal", "Running", "all 3 PE pods are ready")

    async def delivered() -> bool:
        return recorder.delivery.pending == 0

    await eventually_async(delivered, within=10)
    events, _ = await client.list_all(CORE_EVENTS, "default")
    assert [(e["reason"], e["count"]) for e in events] == [("Running", 1)]
