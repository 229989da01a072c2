"""The state builder: schedulable pods, topology, capacity and spreads from a snapshot."""

from __future__ import annotations

from scheduler_fixtures import nodes_in_zones, pods_on, snapshot, vpod
from streams_k8s.scheduler import UNSCHEDULABLE_ANNOTATION, Node, Placement, Pod, State, Taint, VPod


def test_schedulable_pods_exclude_pending_annotated_and_bad_nodes() -> None:
    nodes = (
        Node("ok", "z1"),
        Node("cordoned", "z1", unschedulable=True),
        Node("lost", "z2", taints=(Taint("node.kubernetes.io/unreachable", "NoExecute"),)),
        Node("lost-soft", "z2", taints=(Taint("node.kubernetes.io/unreachable", "NoSchedule"),)),
        Node("not-ready", "z2", taints=(Taint("node.kubernetes.io/not-ready", "NoExecute"),)),
    )
    pods = (
        Pod("sts-0", "ok"),
        Pod("sts-1", ""),  # Pending
        Pod("sts-2", "ok", {UNSCHEDULABLE_ANNOTATION: "TRUE"}),
        Pod("sts-3", "cordoned"),
        Pod("sts-4", "lost"),
        Pod("sts-5", "lost-soft"),
        Pod("sts-6", "not-ready"),
        Pod("sts-7", "ok", {UNSCHEDULABLE_ANNOTATION: "no"}),
        # sts-8 missing
        Pod("sts-9", "ok"),  # beyond the replicas
    )
    state = State.build(snapshot(9, nodes, pods), {})
    assert state.schedulable == [0, 6, 7]
    assert state.node_zone == {"ok": "z1", "not-ready": "z2"}
    assert state.last_ordinal == -1  # no pod holds a vreplica


def test_nodes_without_zone_count_as_unknown_zone() -> None:
    state = State.build(snapshot(2, nodes_in_zones("a", None, ""), pods_on("node0", "node1")), {})
    assert state.node_zone == {"node0": "a", "node1": "unknown", "node2": "unknown"}
    assert state.zones == ("a", "unknown")
    assert len(state.nodes) == 3


def test_free_capacity_counts_every_placement_but_spreads_only_schedulable_pods() -> None:
    vp = vpod("ns/a", 9, p0=3, p1=4, p5=2)  # sts-1 is Pending, sts-5 is beyond the replicas
    state = State.build(snapshot(3, nodes_in_zones("a", "b"), pods_on("node0", "", "node1"), (vp,)), {})
    assert state.free_table() == [7, 6, 10]
    assert state.free(5) == 8
    assert state.to_json()["freeCapPastReplicas"] == {"sts-5": 8}
    assert state.free_capacity() == 7 + 10
    assert state.pod_spread["ns/a"] == {0: 3}
    assert state.zone_spread["ns/a"] == {"a": 3}
    assert state.last_ordinal == 1  # sts-5 is past the replicas
    assert state.pending("ns/a") == 0


def test_reservations_override_committed_placements() -> None:
    vp = vpod("ns/a", 6, p0=6)
    state = State.build(
        snapshot(2, nodes_in_zones("a", "b"), pods_on("node0", "node1"), (vp,)),
        {"ns/a": {"sts-0": 3, "sts-1": 3}, "ns/gone": {"sts-1": 1}},
    )
    assert state.placements["ns/a"] == {0: 3, 1: 3}
    assert state.node_spread["ns/a"] == {"node0": 3, "node1": 3}
    assert state.free_table() == [7, 7]
    assert state.pending("ns/a") == 0  # pending counts the committed status


def test_pod_names_of_other_workloads_are_ignored() -> None:
    vp = VPod("ns/a", 2, (Placement("sts-0", 1), Placement("other-1", 1), Placement("sts-x", 1)))
    state = State.build(snapshot(1, nodes_in_zones("a"), pods_on("node0"), (vp,)), {})
    assert state.placements["ns/a"] == {0: 1}
    assert state.free_table() == [9]


def test_a_huge_ordinal_costs_nothing() -> None:
    vp = VPod("ns/a", 1, (Placement("sts-999999999", 1),))
    state = State.build(snapshot(1, nodes_in_zones("a"), pods_on("node0"), (vp,)), {})
    assert state.free_table() == [10]
    assert state.free(999999999) == 9


def test_overcommitted_pod_has_negative_free_capacity() -> None:
    vps = (vpod("ns/a", 7, p0=7), vpod("ns/b", 5, p0=5))
    state = State.build(snapshot(1, nodes_in_zones("a"), pods_on("node0"), vps), {})
    assert state.free(0) == -2
    assert state.free(7) == 10  # out of range: a whole pod


def test_state_json_has_upstream_keys() -> None:
    state = State.build(snapshot(1, nodes_in_zones("a"), pods_on("node0"), (vpod("ns/a", 2, p0=1),)), {})
    out = state.to_json()
    assert {
        "freeCap",
        "schedulablePods",
        "lastOrdinal",
        "capacity",
        "replicas",
        "numZones",
        "numNodes",
    } <= set(out)
    assert out["podSpread"] == {"ns/a": {"sts-0": 1}}
    assert out["pending"] == {"ns/a": 1}


def test_vpods_can_be_replaced_and_removed_in_place() -> None:
    state = State.build(
        snapshot(2, nodes_in_zones("a", "b"), pods_on("node0", "node1"), (vpod("ns/a", 4, p0=4),)), {}
    )
    state.add_vpod(vpod("ns/a", 4, p0=1, p1=3), {})
    assert state.free_table() == [9, 7]
    assert state.zone_spread["ns/a"] == {"a": 1, "b": 3}
    state.remove_vpod("ns/a")
    assert state.free_table() == [10, 10]
    assert "ns/a" not in state.pod_spread
