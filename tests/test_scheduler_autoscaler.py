"""Autoscaler formulas (spec §5 worked numbers), compaction, leadership, annotation clearing."""

from __future__ import annotations

from scheduler_fixtures import HA_PROFILE, nodes_in_zones, pods_on, policy, snapshot, vpod
from streams_k8s.scheduler import (
    MAXFILLUP,
    UNSCHEDULABLE_ANNOTATION,
    Autoscaler,
    AutoscaleResult,
    Eviction,
    Node,
    Placement,
    Pod,
    Policy,
    State,
    Taint,
)


def leader(policy_: Policy | str, **kwargs: object) -> Autoscaler:
    autoscaler = Autoscaler(policy_, refresh_period=100.0, **kwargs)  # type: ignore[arg-type]
    autoscaler.promote()
    return autoscaler


def eighteen_on_two_pods(zones: int, nodes: int) -> State:
    """§5: one vpod of 18 vreplicas placed 8/7 on 2 pods of capacity 10 (pending 3, last ordinal 1)."""
    node_zones = [f"z{i % zones}" for i in range(nodes)]
    snap = snapshot(
        2, nodes_in_zones(*node_zones), pods_on("node0", "node1"), (vpod("ns/a", 18, p0=8, p1=7),)
    )
    return State.build(snap, {})


def test_worked_numbers_zone_priority() -> None:
    zone_policy = policy([], [("AvailabilityZonePriority", 10, {"MaxSkew": 2})])
    assert leader(zone_policy).desired_replicas(eighteen_on_two_pods(zones=3, nodes=3)) == 5


def test_worked_numbers_node_priority() -> None:
    node_policy = policy([], [("AvailabilityZonePriority", 10, {}), ("AvailabilityNodePriority", 10, {})])
    assert leader(node_policy).desired_replicas(eighteen_on_two_pods(zones=3, nodes=6)) == 8


def test_worked_numbers_even_pod_spread_predicate() -> None:
    even = policy([("EvenPodSpread", {"MaxSkew": 2})], [])
    state = eighteen_on_two_pods(zones=1, nodes=2)
    state.add_vpod(vpod("ns/b", 1, p1=1), {})  # free capacity [2, 2] ... then [2, 3] below
    state.remove_vpod("ns/b")
    state.set_vreplicas("ns/a", 0, 8)
    assert state.free_table() == [2, 3]
    assert leader(even).desired_replicas(state) == 4


def test_worked_numbers_even_pod_spread_and_zone_priority() -> None:
    both = policy([("EvenPodSpread", {"MaxSkew": 2})], [("AvailabilityZonePriority", 10, {})])
    assert leader(both).desired_replicas(eighteen_on_two_pods(zones=3, nodes=3)) == 5


def test_maxfillup_is_ceil_of_expected_over_capacity() -> None:
    snap = snapshot(
        5, nodes_in_zones("a"), pods_on(*["node0"] * 5), (vpod("ns/a", 21), vpod("ns/b", 4, p0=4))
    )
    assert leader(MAXFILLUP).desired_replicas(State.build(snap, {})) == 3


def test_only_the_leader_acts() -> None:
    autoscaler = Autoscaler(MAXFILLUP, refresh_period=1.0)
    state = State.build(snapshot(1, nodes_in_zones("a"), pods_on("node0"), (vpod("ns/a", 30),)), {})
    assert autoscaler.autoscale(state, attempt_scale_down=False, now=0.0) is None
    autoscaler.promote()
    result = autoscaler.autoscale(state, attempt_scale_down=False, now=0.0)
    assert result is not None
    assert result.replicas == 3
    autoscaler.demote()
    assert autoscaler.autoscale(state, attempt_scale_down=False, now=0.0) is None


def test_scale_down_only_on_the_periodic_run() -> None:
    state = State.build(
        snapshot(4, nodes_in_zones("a"), pods_on(*["node0"] * 4), (vpod("ns/a", 5, p0=5),)), {}
    )
    autoscaler = leader(MAXFILLUP)
    triggered = autoscaler.autoscale(state, attempt_scale_down=False, now=0.0)
    periodic = autoscaler.autoscale(state, attempt_scale_down=True, now=0.0)
    assert triggered is not None
    assert triggered.replicas == 4
    assert periodic is not None
    assert periodic.replicas == 1


def test_compaction_evicts_the_top_pods_through_the_evictor_with_a_grace_period() -> None:
    calls: list[tuple[str, str, Placement]] = []
    vps = (vpod("ns/a", 13, p0=9, p2=4), vpod("ns/b", 3, p1=2, p2=1))
    state = State.build(snapshot(3, nodes_in_zones("a"), pods_on(*["node0"] * 3), vps), {})
    autoscaler = leader(MAXFILLUP, evictor=lambda pod, key, p: calls.append((pod, key, p)))
    result = autoscaler.autoscale(state, attempt_scale_down=True, now=1000.0)  # ceil(16/10) = 2 < 3
    assert result is not None
    assert result.replicas == 2  # scale-down first; no compaction in the same run
    state = State.build(snapshot(2, nodes_in_zones("a"), pods_on(*["node0"] * 2), vps), {})
    result = autoscaler.autoscale(state, attempt_scale_down=True, now=1000.0)
    assert result is not None
    assert result.evictions == (Eviction("ns/a", "sts-2", 4), Eviction("ns/b", "sts-2", 1))
    assert calls == [("sts-2", "ns/a", Placement("sts-2", 4)), ("sts-2", "ns/b", Placement("sts-2", 1))]
    again = autoscaler.autoscale(state, attempt_scale_down=True, now=1050.0)
    assert again is not None
    assert again.evictions == ()  # within the grace period


def test_compaction_empties_the_last_pod_when_the_others_have_room() -> None:
    vps = (vpod("ns/a", 12, p0=4, p1=4, p2=4),)
    state = State.build(snapshot(3, nodes_in_zones("a"), pods_on(*["node0"] * 3), vps, capacity=5), {})
    plugin = leader(policy([("PodFitsResources", {})], [("LowestOrdinalPriority", 1, {})]))
    result = plugin.autoscale(state, attempt_scale_down=True, now=0.0)  # plugin mode keeps 3 pods
    assert result is not None
    assert result.replicas == 3
    assert result.evictions == ()  # 1 + 1 free below < 4 used on top
    roomy = State.build(snapshot(3, nodes_in_zones("a"), pods_on(*["node0"] * 3), vps, capacity=10), {})
    result = plugin.autoscale(roomy, attempt_scale_down=True, now=0.0)
    assert result is not None
    assert result.evictions == (Eviction("ns/a", "sts-2", 4),)


def test_ha_compaction_vacates_one_pod_per_zone() -> None:
    vps = (vpod("ns/a", 6, p0=1, p1=1, p2=1, p3=1, p4=1, p5=1),)
    nodes = nodes_in_zones("a", "b", "c")
    pods = pods_on(*[f"node{i % 3}" for i in range(6)])
    result = leader(HA_PROFILE).autoscale(
        State.build(snapshot(6, nodes, pods, vps), {}), attempt_scale_down=True, now=0.0
    )
    assert result is not None
    assert {e.pod_name for e in result.evictions} == {"sts-3", "sts-4", "sts-5"}


def test_emptied_annotated_pods_below_the_size_are_unmarked() -> None:
    marked = {UNSCHEDULABLE_ANNOTATION: "true"}
    pods = (
        Pod("sts-0", "node0"),
        Pod("sts-1", "node0", marked),
        Pod("sts-2", "node0"),
        Pod("sts-3", "node0", marked),
    )
    vps = (vpod("ns/a", 25, p0=10, p2=10, p3=0),)
    state = State.build(snapshot(4, nodes_in_zones("a"), pods, vps), {})
    result = leader(policy([("PodFitsResources", {})], [])).autoscale(state, attempt_scale_down=True, now=0.0)
    assert result is not None
    # sts-2 is the last pod holding vreplicas; 5 pending need one more pod: the emptied sts-3.
    assert result.replicas == 4
    assert result.clear_annotations == ("sts-1", "sts-3")


def test_placements_beyond_the_replicas_are_evicted() -> None:
    vps = (vpod("ns/a", 11, p0=9, p5=2),)
    state = State.build(snapshot(2, nodes_in_zones("a"), pods_on("node0", "node0"), vps), {})
    result = leader(MAXFILLUP).autoscale(state, attempt_scale_down=True, now=0.0)
    assert result is not None
    assert result.evictions == (Eviction("ns/a", "sts-5", 2),)


def test_a_triggered_run_keeps_the_mark_on_a_pod_being_drained() -> None:
    """Compaction marked sts-2 and its vreplicas moved; a scale-up trigger must not unmark it."""
    marked = {UNSCHEDULABLE_ANNOTATION: "true"}
    pods = (Pod("sts-0", "node0"), Pod("sts-1", "node0"), Pod("sts-2", "node0", marked))
    state = State.build(snapshot(3, nodes_in_zones("a"), pods, (vpod("ns/a", 12, p0=6, p1=6),)), {})
    autoscaler = leader(policy([("PodFitsResources", {})], []))
    triggered = autoscaler.autoscale(state, attempt_scale_down=False, now=0.0)
    assert triggered == AutoscaleResult(3)
    periodic = autoscaler.autoscale(state, attempt_scale_down=True, now=0.0)
    assert periodic == AutoscaleResult(2)
    busy = State.build(snapshot(3, nodes_in_zones("a"), pods, (vpod("ns/a", 25, p0=10, p1=10),)), {})
    grown = autoscaler.autoscale(busy, attempt_scale_down=False, now=0.0)
    assert grown == AutoscaleResult(3, (), ("sts-2",))  # needed again: unmark instead of adding a pod


def test_plugin_mode_shrinks_to_the_last_pod_holding_vreplicas() -> None:
    """Spec §9.11: upstream never went below the last *schedulable* pod, keeping idle pods forever."""
    nodes = nodes_in_zones("a", "b", "c")
    pods = pods_on(*[f"node{i % 3}" for i in range(6)])
    state = State.build(snapshot(6, nodes, pods, (vpod("ns/a", 4, p0=2, p1=2),)), {})
    autoscaler = leader(HA_PROFILE)
    assert autoscaler.autoscale(state, attempt_scale_down=False, now=0.0) == AutoscaleResult(6)
    assert autoscaler.autoscale(state, attempt_scale_down=True, now=0.0) == AutoscaleResult(2)


def test_maxfillup_does_not_count_pods_on_lost_nodes() -> None:
    nodes = (
        Node("node0", "a", taints=(Taint("node.kubernetes.io/unreachable", "NoExecute"),)),
        Node("node1", "b"),
    )
    state = State.build(snapshot(3, nodes, pods_on("node0", "node1", "node1"), (vpod("ns/a", 25),)), {})
    assert leader(MAXFILLUP).desired_replicas(state) == 4  # ceil(25/10) = 3 usable pods, sts-0 is stranded
