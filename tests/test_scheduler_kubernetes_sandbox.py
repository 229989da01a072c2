"""The vreplica scheduler component in the sandbox: the seed's disaster-recovery scenarios.

Six nodes over three zones (node-i in zone z{i%3}); StatefulSet `pool` (Parallel, pods
tolerate the unreachable taint as admission defaults make them do); vpods are Consumer
custom resources. Everything is driven and read back over the API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from scheduler_sandbox import CONSUMERS, HA, NAMESPACE, UNREACHABLE, Deployment, consumer_crd, statefulset
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import PODS, STATEFULSETS
from streams_k8s.sandbox import Sandbox
from streams_k8s.scheduler import (
    MAXFILLUP,
    UNSCHEDULABLE_ANNOTATION,
    Placement,
)
from streams_k8s.scheduler.kubernetes import CustomResourceVPodSource, marking_evictor

pytestmark = pytest.mark.sandbox(nodes=6, zones=["z0", "z1", "z2"])

CAPACITY = 4


@pytest.fixture
async def deployment(sandbox: Sandbox) -> AsyncIterator[Deployment]:
    sandbox.install_crd(consumer_crd())
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        deployment = Deployment(sandbox, client)
        try:
            yield deployment
        finally:
            await deployment.stop()


def zone_of(node: str) -> str:
    return f"z{int(node.rsplit('-', 1)[1]) % 3}"


def pods_on(nodes: dict[str, str], lost: set[str]) -> set[str]:
    return {pod for pod, node in nodes.items() if node in lost}


@pytest.mark.parametrize("loss", ["cordon", "unreachable"])
async def test_vreplicas_leave_a_lost_node_and_the_set_grows_then_shrinks(
    deployment: Deployment, loss: str
) -> None:
    """MAXFILLUP from zero pods: ceil(12/4) = 3 pods. Losing the node of pool-1 strands it:
    its vreplicas move and the set grows by the stranded pod (3 + 1); once the node is back
    the periodic run shrinks the set to 3 again and the vreplicas of pool-3 come back down."""
    await deployment.client.create(STATEFULSETS, statefulset(0))
    for name, vreplicas in (("a", 5), ("b", 3), ("c", 4)):
        await deployment.create_consumer(name, vreplicas)
    await deployment.start(MAXFILLUP, capacity=CAPACITY, refresh_period=1.0)
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    assert await deployment.replicas() == 3
    assert len(await deployment.pods()) == 3

    nodes = await deployment.node_of()
    lost_node = nodes["pool-1"]
    before = await deployment.placements()
    assert any("pool-1" in p for p in before.values())
    if loss == "cordon":
        await deployment.cluster.cordon(lost_node)
    else:
        await deployment.cluster.taint(lost_node, UNREACHABLE, effect="NoSchedule")
        await deployment.cluster.taint(lost_node, UNREACHABLE, effect="NoExecute")

    async def moved() -> bool:
        placements = await deployment.placements()
        return await deployment.all_placed(CAPACITY) and not any("pool-1" in p for p in placements.values())

    await deployment.until(moved)
    assert await deployment.replicas() == 4  # ceil(12 / 4) + one stranded pod below that size
    nodes = await deployment.node_of()
    assert nodes["pool-1"] == lost_node  # still bound there: cordons and tolerated taints do not evict
    assert nodes["pool-3"] != lost_node

    if loss == "cordon":
        await deployment.cluster.uncordon(lost_node)
    else:
        await deployment.cluster.untaint(lost_node, UNREACHABLE)

    async def shrunk() -> bool:
        placements = await deployment.placements()
        return (
            await deployment.replicas() == 3
            and await deployment.all_placed(CAPACITY)
            and not any("pool-3" in p for p in placements.values())
        )

    await deployment.until(shrunk)


async def test_zone_loss_moves_vreplicas_to_the_surviving_zones(deployment: Deployment) -> None:
    """HA profile, 3 consumers x 3 vreplicas on pool-0..2 (one pod per zone): one vreplica of
    each per zone. Zone z0 becomes unreachable: its pod's vreplicas move to z1 and z2, which
    lack one slot, so the set grows by last ordinal + 1 + ceil(ceil(1/4) / 2 zones) * 2 = 5."""
    await deployment.create_pool(3)
    nodes = await deployment.node_of()
    assert sorted(zone_of(nodes[f"pool-{i}"]) for i in range(3)) == ["z0", "z1", "z2"]
    for name in ("a", "b", "c"):
        await deployment.create_consumer(name, 3)
    await deployment.start(HA, capacity=CAPACITY)
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    for placed in (await deployment.placements()).values():
        assert sorted(zone_of(nodes[pod]) for pod, n in placed.items() for _ in range(n)) == [
            "z0",
            "z1",
            "z2",
        ]
    assert await deployment.replicas() == 3

    lost_nodes = {f"node-{i}" for i in range(6) if i % 3 == 0}
    deployment.lose(lost_nodes)  # the whole zone at once

    async def recovered() -> bool:
        placements = await deployment.placements()
        nodes = await deployment.node_of()
        return await deployment.all_placed(CAPACITY) and not any(
            pods_on(nodes, lost_nodes) & set(p) for p in placements.values()
        )

    await deployment.until(recovered)
    assert await deployment.replicas() == 5
    nodes = await deployment.node_of()
    for placed in (await deployment.placements()).values():
        zones = [zone_of(nodes[pod]) for pod, n in placed.items() for _ in range(n)]
        assert set(zones) == {"z1", "z2"}  # still spread over every zone that is left

    # The zone comes back: nothing is rebalanced onto it (the seed: placements stay valid).
    settled = await deployment.placements()
    for node in sorted(lost_nodes):
        await deployment.cluster.untaint(node, UNREACHABLE)
    await deployment.sandbox.settle()
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    assert await deployment.placements() == settled
    assert await deployment.replicas() == 5


async def test_a_failed_pod_is_recreated_and_keeps_its_vreplicas(deployment: Deployment) -> None:
    await deployment.create_pool(3)
    for name, vreplicas in (("a", 4), ("b", 4), ("c", 2)):
        await deployment.create_consumer(name, vreplicas)
    await deployment.start(MAXFILLUP, capacity=CAPACITY, refresh_period=1.0)
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    before = await deployment.placements()
    uid = (await deployment.pods())["pool-1"]["metadata"]["uid"]

    await deployment.cluster.fail_pod(NAMESPACE, "pool-1")

    async def recreated() -> bool:
        pod = (await deployment.pods()).get("pool-1")
        return pod is not None and pod["metadata"]["uid"] != uid and pod["status"].get("phase") == "Running"

    await deployment.until(recreated)
    await deployment.sandbox.settle()
    assert await deployment.placements() == before
    assert await deployment.replicas() == 3
    # The recreated pod takes new vreplicas like any other.
    await deployment.set_vreplicas("c", 4)
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    assert await deployment.replicas() == 3
    assert sum(sum(p.values()) for p in (await deployment.placements()).values()) == 12


async def test_an_emptied_marked_pod_is_unmarked_when_the_vpods_need_it(deployment: Deployment) -> None:
    """eventing#6866: a pod the evictor marked unschedulable stayed idle in the middle of the
    set forever. Here the autoscaler removes the mark once the pod is empty and needed."""
    await deployment.create_pool(3)
    await deployment.client.patch(
        PODS, "pool-1", {"metadata": {"annotations": {UNSCHEDULABLE_ANNOTATION: "true"}}}, NAMESPACE
    )
    for name in ("a", "b", "c"):
        await deployment.create_consumer(name, 4)
    await deployment.start(MAXFILLUP, capacity=CAPACITY)
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    assert await deployment.marked() == set()
    assert await deployment.replicas() == 3  # the marked pod was used, not a fourth one


async def test_compaction_evicts_through_the_callback_and_the_set_shrinks(deployment: Deployment) -> None:
    """HA profile: consumers spread over 6 pods; most are deleted. The periodic run compacts:
    the evictor (here recording, then doing what the default one does) empties the top pods,
    their vreplicas land lower, and the set shrinks to the last pod holding vreplicas."""
    await deployment.create_pool(6)
    for name in ("a", "b", "c", "d"):
        await deployment.create_consumer(name, 6)
    evicted: list[tuple[str, str, Placement]] = []
    source = CustomResourceVPodSource(CONSUMERS, namespace=NAMESPACE)
    default_evict = marking_evictor(deployment.client, NAMESPACE, source)

    async def evictor(pod: str, key: str, placement: Placement) -> None:
        evicted.append((pod, key, placement))
        await default_evict(pod, key, placement)

    await deployment.start(HA, capacity=CAPACITY, refresh_period=0.5, evictor=evictor, source=source)
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    assert await deployment.replicas() == 6

    for name in ("b", "c", "d"):
        await deployment.client.delete(CONSUMERS, name, NAMESPACE)

    async def compacted() -> bool:
        placements = await deployment.placements()
        used = {int(pod.rsplit("-", 1)[1]) for p in placements.values() for pod in p}
        return (
            set(placements) == {"a"}
            and await deployment.all_placed(CAPACITY)
            and await deployment.replicas() == max(used) + 1
            and await deployment.replicas() < 6
        )

    await deployment.until(compacted, within=30.0)
    assert await deployment.replicas() == 3  # one pod per zone holds a's 6 vreplicas
    assert await deployment.marked() == set()  # the marked top pods went with the scale-down
    assert evicted, "compaction went through the evictor"
    assert all(key == f"{NAMESPACE}/a" for _, key, _ in evicted)

    # Demand comes back: the pods the evictor had marked are recreated clean and used.
    for name in ("e", "f"):
        await deployment.create_consumer(name, 6)
    await deployment.until(lambda: deployment.all_placed(CAPACITY))
    used = {pod for p in (await deployment.placements()).values() for pod in p}
    # 18 vreplicas at 4 per pod need pods 0-4: pool-3 and pool-4 were marked and are used again
    # (pool-5 only if the autoscaler reached 6 before the placements fitted in 5).
    assert {"pool-3", "pool-4"} <= used
    assert await deployment.marked() == set()


async def test_failing_writes_and_dropped_watches_still_converge(deployment: Deployment) -> None:
    """Status writes answered 409/500, the scale write answered 500, every watch dropped in the
    middle: the component retries and ends with every vpod whole, no pod over capacity, and
    the size the formula gives (MAXFILLUP: ceil(30 / 4) = 8)."""
    await deployment.client.create(STATEFULSETS, statefulset(0))
    faults = deployment.sandbox.faults
    faults.fail(409, 15, verb="patch", resource="consumers/status")
    faults.fail(500, 10, verb="patch", resource="consumers/status")
    faults.fail(500, 2, verb="patch", resource="statefulsets/scale")
    for i in range(10):
        await deployment.create_consumer(f"c{i}", 3)
    await deployment.start(MAXFILLUP, capacity=CAPACITY)

    async def some_placed() -> bool:
        return any((await deployment.placements()).values())

    await deployment.until(some_placed)
    faults.drop_watches()
    await deployment.until(lambda: deployment.all_placed(CAPACITY), within=40.0)
    assert await deployment.replicas() == 8
    assert faults.rules == []  # every injected failure was met
