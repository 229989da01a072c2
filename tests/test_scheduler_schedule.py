"""Scheduling one vpod: plugin policy (rebalance), descheduler, MAXFILLUP, reservations."""

from __future__ import annotations

import pytest

from scheduler_fixtures import HA_PROFILE, as_dict, nodes_in_zones, pods_on, policy, snapshot, vpod
from streams_k8s.scheduler import MAXFILLUP, NotEnoughReplicas, Pod, Scheduler, SpreadView, default_registry

# §2.11 (upstream test S30): 3 pods in zones 0-2, node3-5 in the same zones, node6 unlabelled.
S30_NODES = nodes_in_zones("zone0", "zone1", "zone2", "zone0", "zone1", "zone2", None)
S30_POLICY = policy(
    [("PodFitsResources", {}), ("EvenPodSpread", {"MaxSkew": 2})],
    [("LowestOrdinalPriority", 2, {}), ("AvailabilityZonePriority", 10, {"MaxSkew": 2})],
)


def test_worked_example_s30_round_robins_over_zones() -> None:
    snap = snapshot(3, S30_NODES, pods_on("node0", "node1", "node2"), (vpod("ns/a", 20),))
    scheduler = Scheduler(S30_POLICY)
    result, state = scheduler.schedule_snapshot(snap, "ns/a")
    assert result.error is None
    assert as_dict(result.placements) == {"sts-0": 7, "sts-1": 7, "sts-2": 6}
    assert scheduler.reserved == {"ns/a": {"sts-0": 7, "sts-1": 7, "sts-2": 6}}
    assert state.free_table() == [3, 3, 4]


def test_already_scheduled_vpod_is_left_alone() -> None:
    snap = snapshot(2, S30_NODES, pods_on("node0", "node1"), (vpod("ns/a", 3, p1=3),))
    scheduler = Scheduler(S30_POLICY)
    result, _ = scheduler.schedule_snapshot(snap, "ns/a")
    assert as_dict(result.placements) == {"sts-1": 3}
    assert scheduler.reserved == {}


def test_zero_vreplicas_without_placements_returns_none() -> None:
    result, _ = Scheduler(S30_POLICY).schedule_snapshot(
        snapshot(1, S30_NODES, pods_on("node0"), (vpod("ns/a", 0),)), "ns/a"
    )
    assert result.placements is None
    assert result.error is None


def test_plugin_scale_up_rebalances_every_vreplica() -> None:
    # 2 vreplicas both on sts-0; scaling to 3 re-places all three, one per zone.
    snap = snapshot(3, S30_NODES, pods_on("node0", "node1", "node2"), (vpod("ns/a", 3, p0=2),))
    result, _ = Scheduler(S30_POLICY).schedule_snapshot(snap, "ns/a")
    assert as_dict(result.placements) == {"sts-0": 1, "sts-1": 1, "sts-2": 1}


def test_plugin_shortfall_keeps_existing_placements_and_reports_left() -> None:
    vps = (vpod("ns/a", 8, p0=2), vpod("ns/b", 15, p0=8, p1=7))
    snap = snapshot(2, S30_NODES, pods_on("node0", "node1"), vps)
    scheduler = Scheduler(policy([("PodFitsResources", {})], [("LowestOrdinalPriority", 1, {})]))
    result, state = scheduler.schedule_snapshot(snap, "ns/a")
    assert as_dict(result.placements) == {"sts-0": 2}
    assert isinstance(result.error, NotEnoughReplicas)
    assert result.error.left == 3  # 5 free slots for 8 vreplicas
    assert "insufficient running pods replicas for StatefulSet ns/sts" in str(result.error)
    assert "(left: 3)" in str(result.error)
    assert state.placements["ns/a"] == {0: 2}  # the attempt left no trace
    assert state.free_table() == [0, 3]


def test_plugin_shortfall_without_placements_returns_none() -> None:
    snap = snapshot(1, S30_NODES, pods_on("node0"), (vpod("ns/a", 11),))
    result, _ = Scheduler(S30_POLICY).schedule_snapshot(snap, "ns/a")
    assert result.placements is None
    assert result.error is not None


def test_placements_on_unschedulable_pods_are_replaced() -> None:
    snap = snapshot(3, S30_NODES, pods_on("node0", "", "node2"), (vpod("ns/a", 4, p0=2, p1=2),))
    result, state = Scheduler(MAXFILLUP).schedule_snapshot(snap, "ns/a")
    assert as_dict(result.placements) == {"sts-0": 4}
    assert state.free(1) == 10


def test_maxfillup_never_picks_missing_or_pending_pods() -> None:
    nodes = nodes_in_zones("a", "b")
    pods = (Pod("sts-1", ""), Pod("sts-2", "node1"))  # sts-0 missing, sts-1 Pending
    result, _ = Scheduler(MAXFILLUP).schedule_snapshot(snapshot(3, nodes, pods, (vpod("ns/a", 14),)), "ns/a")
    assert as_dict(result.placements) == {"sts-2": 10}
    assert result.error is not None
    assert result.error.left == 4


def test_overcommitted_pod_gives_back_its_excess() -> None:
    vps = (vpod("ns/a", 6, p0=6), vpod("ns/b", 6, p0=6))
    snap = snapshot(2, S30_NODES, pods_on("node0", "node1"), vps)
    result, state = Scheduler(MAXFILLUP).schedule_snapshot(snap, "ns/a")
    assert as_dict(result.placements) == {"sts-0": 4, "sts-1": 2}
    assert state.free_table() == [0, 8]


def test_maxfillup_fills_own_pods_then_lowest_ordinals() -> None:
    vps = (vpod("ns/a", 25, p2=5), vpod("ns/b", 7, p0=7))
    snap = snapshot(4, S30_NODES, pods_on("node0", "node1", "node2", "node3"), vps)
    result, _ = Scheduler(MAXFILLUP).schedule_snapshot(snap, "ns/a")
    assert as_dict(result.placements) == {"sts-0": 3, "sts-1": 10, "sts-2": 10, "sts-3": 2}


def test_maxfillup_partial_placements_come_with_the_error() -> None:
    snap = snapshot(2, S30_NODES, pods_on("node0", "node1"), (vpod("ns/a", 25),))
    result, _ = Scheduler(MAXFILLUP).schedule_snapshot(snap, "ns/a")
    assert as_dict(result.placements) == {"sts-0": 10, "sts-1": 10}
    assert result.error is not None
    assert result.error.left == 5


def test_maxfillup_scale_down_takes_from_highest_ordinals() -> None:
    snap = snapshot(3, S30_NODES, pods_on("node0", "node1", "node2"), (vpod("ns/a", 4, p0=3, p1=2, p2=2),))
    result, _ = Scheduler(MAXFILLUP).schedule_snapshot(snap, "ns/a")
    assert as_dict(result.placements) == {"sts-0": 3, "sts-1": 1}


def test_descheduler_wraparound_is_fixed() -> None:
    """§2.6: upstream's uint64 sum wrapped for sts-7 and removed from sts-0 instead (1/3)."""
    nodes = nodes_in_zones(*["z"] * 8)
    pods = pods_on(*[f"node{i}" for i in range(8)])
    desched = policy(
        [],
        [
            ("RemoveWithEvenPodSpreadPriority", 10, {"MaxSkew": 2}),
            ("RemoveWithHighestOrdinalPriority", 2, {}),
        ],
    )
    snap = snapshot(8, nodes, pods, (vpod("ns/a", 4, p0=2, p7=3),))
    result, _ = Scheduler(S30_POLICY, desched).schedule_snapshot(snap, "ns/a")
    assert as_dict(result.placements) == {"sts-0": 2, "sts-7": 2}


def test_descheduler_never_picks_a_pod_the_vpod_already_left() -> None:
    desched = policy([], [("RemoveWithHighestOrdinalPriority", 1, {})])
    snap = snapshot(3, S30_NODES, pods_on("node0", "node1", "node2"), (vpod("ns/a", 1, p0=2, p2=1),))
    result, _ = Scheduler(S30_POLICY, desched).schedule_snapshot(snap, "ns/a")
    assert as_dict(result.placements) == {"sts-0": 1}


def test_capacity_holds_even_without_pod_fits_resources() -> None:
    vps = (vpod("ns/a", 3), vpod("ns/b", 9, p0=9))
    snap = snapshot(2, S30_NODES, pods_on("node0", "node1"), vps)
    result, _ = Scheduler(policy([], [("LowestOrdinalPriority", 1, {})])).schedule_snapshot(snap, "ns/a")
    assert as_dict(result.placements) == {"sts-0": 1, "sts-1": 2}


def test_even_spread_ignores_overcommitted_pods_like_full_ones() -> None:
    """Upstream's score skipped only pods with exactly 0 free; an overcommitted one skewed it."""
    vps = (vpod("ns/a", 1), vpod("ns/b", 12, p0=12))  # sts-0 is overcommitted (free -2)
    snap = snapshot(3, S30_NODES, pods_on("node0", "node1", "node2"), vps)
    scheduler = Scheduler(policy([], [("EvenPodSpread", 1, {})]), native=False)
    state = scheduler.state(snap)
    view = SpreadView(state, "ns/a")
    assert default_registry().scores["EvenPodSpread"]({}).score(view, 1) == -1  # only sts-2 counts


def test_ties_go_to_the_lowest_ordinal() -> None:
    snap = snapshot(3, S30_NODES, pods_on("node0", "node1", "node2"), (vpod("ns/a", 1),))
    result, _ = Scheduler(policy([("PodFitsResources", {})], [("EvenPodSpread", 1, {})])).schedule_snapshot(
        snap, "ns/a"
    )
    assert as_dict(result.placements) == {"sts-0": 1}


def test_reservations_prevent_overcommit_before_status_is_written() -> None:
    scheduler = Scheduler(HA_PROFILE)
    vps = (vpod("ns/a", 10), vpod("ns/b", 10))
    snap = snapshot(2, S30_NODES, pods_on("node0", "node1"), vps)
    first, _ = scheduler.schedule_snapshot(snap, "ns/a")
    second, state = scheduler.schedule_snapshot(snap, "ns/b")  # ns/a's status not written yet
    assert first.error is None
    assert second.error is None
    assert state.free_table() == [0, 0]
    third, _ = scheduler.schedule_snapshot(
        snapshot(2, S30_NODES, pods_on("node0", "node1"), (*vps, vpod("ns/c", 1))), "ns/c"
    )
    assert third.error is not None


def test_reservations_are_dropped_once_committed_or_deleted() -> None:
    scheduler = Scheduler(MAXFILLUP)
    snap = snapshot(2, S30_NODES, pods_on("node0", "node1"), (vpod("ns/a", 5), vpod("ns/b", 5)))
    scheduler.schedule_snapshot(snap, "ns/a")
    scheduler.schedule_snapshot(snap, "ns/b")
    assert set(scheduler.reserved) == {"ns/a", "ns/b"}
    committed = snapshot(2, S30_NODES, pods_on("node0", "node1"), (vpod("ns/a", 5, p0=5),))
    scheduler.state(committed)
    assert scheduler.reserved == {}


def test_unknown_vpod_is_an_error() -> None:
    scheduler = Scheduler(MAXFILLUP)
    with pytest.raises(KeyError, match="ns/x"):
        scheduler.schedule_snapshot(snapshot(1, S30_NODES, pods_on("node0")), "ns/x")
