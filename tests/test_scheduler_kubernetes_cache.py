"""Kubernetes objects into the scheduler's model, and the live state kept from watch events."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_fixtures import HA_PROFILE
from streams_k8s.scheduler import (
    MAXFILLUP,
    UNSCHEDULABLE_ANNOTATION,
    Autoscaler,
    Node,
    Placement,
    Pod,
    Scheduler,
    Taint,
    VPod,
)
from streams_k8s.scheduler.kubernetes import ClusterCache, StatefulSetMissing
from streams_k8s.scheduler.kubernetes.objects import node_from_object, pod_from_object, statefulset_replicas
from streams_k8s.scheduler.kubernetes.source import placements_from_wire


def pod(name: str, node: str = "", phase: str = "Running", **annotations: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "annotations": annotations},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase, "podIP": "10.0.0.1"},
    }


def sts(replicas: int | None, generation: int = 1) -> dict[str, Any]:
    spec = {} if replicas is None else {"replicas": replicas}
    return {"metadata": {"name": "pool", "namespace": "ns", "generation": generation}, "spec": spec}


def test_node_conversion_keeps_zone_cordon_and_taints() -> None:
    node = node_from_object(
        {
            "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
            "spec": {
                "unschedulable": True,
                "taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}, "junk"],
            },
        }
    )
    assert node == Node("n1", "z1", True, (Taint("node.kubernetes.io/unreachable", "NoExecute"),))
    assert node_from_object({"metadata": {"name": "n2"}}) == Node("n2")


def test_pod_conversion_keeps_only_what_the_scheduler_reads() -> None:
    assert pod_from_object(pod("pool-0", "n1")) == Pod("pool-0", "n1")
    assert pod_from_object(pod("pool-0")) == Pod("pool-0", "")  # Pending
    marked = pod_from_object(pod("pool-1", "n1", **{UNSCHEDULABLE_ANNOTATION: "true", "other": "x"}))
    assert marked == Pod("pool-1", "n1", {UNSCHEDULABLE_ANNOTATION: "true"})
    assert marked.marked_unschedulable
    # Status churn converts to an equal pod.
    assert pod_from_object(pod("pool-0", "n1", phase="Failed")) == pod_from_object(pod("pool-0", "n1"))


def test_statefulset_replicas_default_to_one() -> None:
    assert statefulset_replicas(sts(3)) == 3
    assert statefulset_replicas(sts(None)) == 1
    assert statefulset_replicas({"spec": {"replicas": "3"}}) == 1


def test_placements_from_the_wire_skip_malformed_entries() -> None:
    raw = [
        {"podName": "pool-0", "vreplicas": 2},
        {"podName": "pool-1", "vreplicas": 0},
        {"podName": "", "vreplicas": 1},
        {"podName": "pool-2", "vreplicas": "3"},
        {"podName": "pool-3", "vreplicas": True},
        "pool-4",
    ]
    assert placements_from_wire(raw) == (Placement("pool-0", 2),)
    assert placements_from_wire({"podName": "pool-0"}) == ()


def cache(policy: Any = MAXFILLUP, replicas: int = 3) -> ClusterCache:
    c = ClusterCache(Scheduler(policy), "ns", "pool", capacity=4)
    c.set_statefulset(sts(replicas))
    for i in range(3):
        c.set_node(f"n{i}", Node(f"n{i}", f"z{i}"))
    for i in range(replicas):
        c.set_pod(f"pool-{i}", Pod(f"pool-{i}", f"n{i}"))
    return c


def test_no_statefulset_no_state() -> None:
    c = ClusterCache(Scheduler(MAXFILLUP), "ns", "pool", capacity=4)
    with pytest.raises(StatefulSetMissing, match="StatefulSet ns/pool not found"):
        c.state()


def test_vpod_changes_are_applied_in_place() -> None:
    c = cache()
    state = c.state()
    c.set_vpod("ns/a", VPod("ns/a", 3, (Placement("pool-0", 3),)))
    assert c.state() is state
    assert state.free(0) == 1
    c.set_vpod("ns/a", VPod("ns/a", 3, (Placement("pool-1", 3),)))
    assert (state.free(0), state.free(1)) == (4, 1)
    c.set_vpod("ns/a", None)
    assert state.free(1) == 4
    assert c.rebuilds == 1


def test_only_changes_the_scheduler_reads_rebuild_the_state() -> None:
    c = cache()
    c.state()
    assert not c.set_pod("pool-0", pod_from_object(pod("pool-0", "n0", phase="Failed")))
    assert not c.set_pod("other-0", Pod("other-0", "n0"))  # not a pod of the StatefulSet
    assert not c.set_node("n0", Node("n0", "z0"))
    c.state()
    assert c.rebuilds == 1
    assert c.set_node("n0", Node("n0", "z0", unschedulable=True))
    assert c.state().schedulable == [1, 2]
    assert c.rebuilds == 2


def test_an_older_statefulset_generation_cannot_undo_a_newer_one() -> None:
    c = cache()
    assert c.set_statefulset(sts(5, generation=3))
    assert not c.set_statefulset(sts(3, generation=2))  # a late watch event
    assert c.replicas == 5
    assert c.set_statefulset(None)
    assert c.replicas is None
    assert c.set_statefulset(sts(2, generation=1))  # recreated: generations start over


def test_vpods_needing_a_new_schedule_after_a_topology_change() -> None:
    c = cache(replicas=3)
    c.set_vpod("ns/lost", VPod("ns/lost", 2, (Placement("pool-1", 2),)))
    c.set_vpod("ns/fine", VPod("ns/fine", 2, (Placement("pool-0", 2),)))
    c.set_vpod("ns/short", VPod("ns/short", 3, (Placement("pool-0", 2),)))
    c.set_vpod("ns/beyond", VPod("ns/beyond", 1, (Placement("pool-7", 1),)))
    c.set_vpod("ns/recreated", VPod("ns/recreated", 1, (Placement("pool-2", 1),)))
    c.set_node("n1", Node("n1", "z1", taints=(Taint("node.kubernetes.io/unreachable", "NoSchedule"),)))
    c.set_pod("pool-2", Pod("pool-2", ""))  # recreated, Pending: its placements stay valid
    assert c.needing_schedule() == ["ns/beyond", "ns/lost", "ns/short"]
    c.set_pod("pool-0", Pod("pool-0", "n0", {UNSCHEDULABLE_ANNOTATION: "true"}))
    assert c.needing_schedule() == ["ns/beyond", "ns/fine", "ns/lost", "ns/short"]


def test_a_vpod_update_prunes_its_reservation() -> None:
    c = cache()
    c.set_vpod("ns/a", VPod("ns/a", 3))
    result = c.scheduler.schedule(c.state(), "ns/a")
    assert result.placements == (Placement("pool-0", 3),)
    assert c.scheduler.reserved == {"ns/a": {"pool-0": 3}}
    c.set_vpod("ns/a", VPod("ns/a", 3, result.placements))  # the status write comes back
    assert c.scheduler.reserved == {}
    assert c.state().free(0) == 1


def test_an_eviction_drops_the_reservation_on_that_pod() -> None:
    c = cache()
    c.set_vpod("ns/a", VPod("ns/a", 3))
    c.scheduler.schedule(c.state(), "ns/a")
    c.forget_reservation("ns/a", "pool-0")
    assert c.scheduler.reserved == {}
    assert c.state().free(0) == 4


def test_reserved_vreplicas_are_not_pending_for_the_autoscaler() -> None:
    """Upstream counted a placed-but-uncommitted vreplica both in the last ordinal and as
    pending, so a run in the middle of a burst scaled too far."""
    c = cache(HA_PROFILE)
    for key in ("ns/a", "ns/b", "ns/c"):
        c.set_vpod(key, VPod(key, 3))
    state = c.state()
    for key in ("ns/a", "ns/b", "ns/c"):
        assert c.scheduler.schedule(state, key).error is None
    assert state.total_pending() == 9  # nothing committed yet
    assert state.total_unplaced() == 0
    autoscaler = Autoscaler(HA_PROFILE, refresh_period=60.0)
    autoscaler.promote()
    result = autoscaler.autoscale(state, attempt_scale_down=False, now=0.0)
    assert result is not None
    assert result.replicas == 3
