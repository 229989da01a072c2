"""What a vpod's owner sees: the Scheduled condition, Events, and the leader-only autoscaler."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from scheduler_sandbox import NAMESPACE, Deployment, consumer_crd, statefulset
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.kinds import STATEFULSETS
from streams_k8s.sandbox import Sandbox
from streams_k8s.scheduler import MAXFILLUP

pytestmark = pytest.mark.sandbox(nodes=3, zones=["z0", "z1", "z2"])

CAPACITY = 4
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")


@pytest.fixture
async def deployment(sandbox: Sandbox) -> AsyncIterator[Deployment]:
    sandbox.install_crd(consumer_crd())
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        deployment = Deployment(sandbox, client)
        try:
            yield deployment
        finally:
            await deployment.stop()


async def reasons(deployment: Deployment, name: str) -> set[str]:
    items, _ = await deployment.client.list_all(EVENTS, NAMESPACE)
    return {e["reason"] for e in items if (e.get("regarding") or {}).get("name") == name}


async def test_scheduled_condition_and_observed_generation(deployment: Deployment) -> None:
    await deployment.create_pool(2)
    await deployment.create_consumer("a", 3)
    await deployment.start(MAXFILLUP, capacity=CAPACITY)
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    condition = await deployment.condition("a")
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "Scheduled")
    assert condition["message"] == "3 vreplicas on 1 pod"
    await deployment.set_vreplicas("a", 6)

    async def caught_up() -> bool:
        obj = (await deployment.consumers())["a"]
        return bool(obj["status"].get("observedGeneration") == obj["metadata"]["generation"] == 2)

    await deployment.until(caught_up)
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    assert await deployment.placements() == {"a": {"pool-0": 4, "pool-1": 2}}


async def test_bad_vreplicas_are_reported_and_the_placements_kept(deployment: Deployment) -> None:
    await deployment.create_pool(2)
    await deployment.create_consumer("a", 3)
    await deployment.start(MAXFILLUP, capacity=CAPACITY)
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    placed = await deployment.placements()

    await deployment.set_vreplicas("a", "three")

    async def reported() -> bool:
        condition = await deployment.condition("a")
        return condition is not None and condition["reason"] == "InvalidVReplicas"

    await deployment.until(reported)
    condition = await deployment.condition("a")
    assert condition is not None
    assert condition["status"] == "False"
    assert condition["message"] == "spec.vreplicas must be a non-negative integer, got 'three'"
    assert await deployment.placements() == placed  # nothing lost, nothing moved
    await deployment.until(lambda: _has_reason(deployment, "a", "InvalidVReplicas"))

    # Its slots stay taken: another vpod does not get them.
    await deployment.create_consumer("b", 5)
    await deployment.until(lambda: _placed(deployment, "b", 5))
    assert (await deployment.placements())["b"] == {"pool-0": 1, "pool-1": 4}

    await deployment.set_vreplicas("a", 2)
    await deployment.until(lambda: _placed(deployment, "a", 2))
    condition = await deployment.condition("a")
    assert condition is not None
    assert condition["reason"] == "Scheduled"


async def test_a_missing_statefulset_is_reported_until_it_exists(deployment: Deployment) -> None:
    await deployment.create_consumer("a", 2)
    await deployment.start(MAXFILLUP, capacity=CAPACITY)

    async def reported() -> bool:
        condition = await deployment.condition("a")
        return condition is not None and condition["reason"] == "StatefulSetNotFound"

    await deployment.until(reported)
    condition = await deployment.condition("a")
    assert condition is not None
    assert condition["message"] == f"StatefulSet {NAMESPACE}/pool not found"
    assert await deployment.placements() == {"a": {}}

    await deployment.client.create(STATEFULSETS, statefulset(0))
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    assert await deployment.replicas() == 1

    # Deleted again: reported, and the placements stay for when it is back.
    placed = await deployment.placements()
    await deployment.client.delete(STATEFULSETS, "pool", NAMESPACE)
    await deployment.until(reported)
    assert await deployment.placements() == placed


async def test_only_the_leader_scales(deployment: Deployment) -> None:
    """A shortfall is reported on the vpod either way; the StatefulSet grows only once this
    replica leads (eventing#6732: every replica scaled and they fought over the size)."""
    await deployment.create_pool(1)
    await deployment.create_consumer("a", 6)
    leading = False
    await deployment.start(MAXFILLUP, capacity=CAPACITY, is_leader=lambda: leading)

    async def short() -> bool:
        condition = await deployment.condition("a")
        return condition is not None and condition["reason"] == "NotEnoughReplicas"

    await deployment.until(short)
    condition = await deployment.condition("a")
    assert condition is not None
    assert condition["message"] == (
        "insufficient running pods replicas for StatefulSet default/pool to schedule resource "
        "replicas (left: 2): retry after 5s"
    )
    assert await deployment.placements() == {"a": {"pool-0": 4}}  # partial placements are kept
    await deployment.until(lambda: _has_reason(deployment, "a", "NotEnoughReplicas"))
    assert await deployment.replicas() == 1

    leading = True
    deployment.component.trigger_autoscaler()  # type: ignore[union-attr]
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    assert await deployment.replicas() == 2
    await deployment.until(lambda: _has_reason(deployment, "pool", "Scaled"))


async def _has_reason(deployment: Deployment, name: str, reason: str) -> bool:
    return reason in await reasons(deployment, name)


async def _placed(deployment: Deployment, name: str, vreplicas: int) -> bool:
    return sum((await deployment.placements()).get(name, {}).values()) == vreplicas


async def test_a_standby_replica_takes_over_scaling(deployment: Deployment) -> None:
    """Two replicas of the component under leader election: only the leader acts; when it
    steps down the standby schedules and scales."""
    await deployment.create_pool(1)
    await deployment.create_consumer("a", 6)
    await deployment.start(MAXFILLUP, capacity=CAPACITY, identity="first", leader_election=True)
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    assert await deployment.replicas() == 2
    standby = Deployment(deployment.sandbox, deployment.client)
    try:
        await standby.start(MAXFILLUP, capacity=CAPACITY, identity="second", leader_election=True)
        await deployment.stop()  # releases the Lease
        await deployment.set_vreplicas("a", 10)
        await deployment.until(lambda: deployment.all_placed(CAPACITY))
        assert await deployment.replicas() == 3
        assert standby.manager is not None
        assert standby.manager.leader is not None
        assert standby.manager.leader.is_leader
    finally:
        await standby.stop()
