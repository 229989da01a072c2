"""Properties of the scheduler over generated clusters (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_fixtures import HA_PROFILE, policy
from streams_k8s.scheduler import MAXFILLUP, ClusterSnapshot, Node, Placement, Pod, Policy, Scheduler, VPod

FILL = policy(
    [("PodFitsResources", {})], [("AvailabilityZonePriority", 10, {}), ("LowestOrdinalPriority", 2, {})]
)


@st.composite
def clusters(draw: st.DrawFn) -> ClusterSnapshot:
    zones = draw(st.integers(1, 3))
    nodes = tuple(
        Node(f"n{i}", f"z{i % zones}", unschedulable=draw(st.booleans()) and i > 0)
        for i in range(draw(st.integers(1, 6)))
    )
    replicas = draw(st.integers(0, 8))
    pods = tuple(
        Pod(f"sts-{o}", draw(st.sampled_from(["", *[n.name for n in nodes]]))) for o in range(replicas)
    )
    capacity = draw(st.integers(1, 6))
    vpods = []
    for v in range(draw(st.integers(1, 5))):
        placed = draw(st.dictionaries(st.integers(0, 9), st.integers(1, 4), max_size=3))
        placements = tuple(Placement(f"sts-{o}", n) for o, n in placed.items())
        vpods.append(VPod(f"ns/v{v}", draw(st.integers(0, 12)), placements))
    return ClusterSnapshot("sts", replicas, capacity, nodes, pods, tuple(vpods))


def used_per_pod(scheduler: Scheduler, snapshot: ClusterSnapshot) -> dict[int, int]:
    state = scheduler.state(snapshot)
    return {o: state.used(o) for o in state.schedulable}


@settings(max_examples=150, deadline=None)
@given(
    clusters(), st.sampled_from([MAXFILLUP, FILL, HA_PROFILE, policy([], [("LowestOrdinalPriority", 1, {})])])
)
def test_no_pod_gets_more_than_its_capacity(snapshot: ClusterSnapshot, chosen: Policy | str) -> None:
    """Whatever the input's overcommit, scheduling never adds to a full pod, across vpods and reservations."""
    scheduler = Scheduler(chosen)
    before = used_per_pod(scheduler, snapshot)
    for vpod in snapshot.vpods:  # no status is written in between: only reservations hold the slots
        scheduler.schedule(scheduler.state(snapshot), vpod.key)
        after = used_per_pod(scheduler, snapshot)
        for ordinal, used in after.items():
            assert used <= max(snapshot.capacity, before[ordinal])
            if before[ordinal] <= snapshot.capacity:
                assert used <= snapshot.capacity


@settings(max_examples=150, deadline=None)
@given(clusters(), st.sampled_from([MAXFILLUP, FILL]))
def test_placed_is_min_of_vreplicas_and_available_capacity(
    snapshot: ClusterSnapshot, chosen: Policy | str
) -> None:
    scheduler = Scheduler(chosen)
    key = snapshot.vpods[0].key
    state = scheduler.state(snapshot)
    mine = {o: n for o, n in state.placements[key].items() if state.is_schedulable(o)}
    others_free = sum(min(state.capacity, max(0, state.free(o) + mine.get(o, 0))) for o in state.schedulable)
    want = state.vpods[key].vreplicas
    result = scheduler.schedule(state, key)
    placed = sum(p.vreplicas for p in result.placements or ())
    if chosen == MAXFILLUP or want <= others_free:
        assert placed == min(want, others_free)
    else:  # the plugin policy keeps what the vpod had when it cannot place them all
        assert result.error is not None
    assert (result.error is None) == (want <= others_free)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(0, 30), st.integers(1, 40))
def test_ha_profile_keeps_zone_skew_within_max_skew(
    zones: int, pods_per_zone: int, other: int, want: int
) -> None:
    """With room for everything, the vpod's zones never differ by more than MaxSkew (2)."""
    nodes = tuple(Node(f"n{i}", f"z{i}") for i in range(zones))
    replicas = zones * pods_per_zone
    pods = tuple(Pod(f"sts-{o}", f"n{o % zones}") for o in range(replicas))
    filler = VPod("ns/filler", other, tuple(Placement(f"sts-{o % replicas}", 1) for o in range(other)))
    snapshot = ClusterSnapshot("sts", replicas, 100, nodes, pods, (filler, VPod("ns/ha", want)))
    scheduler = Scheduler(HA_PROFILE)
    result, state = scheduler.schedule_snapshot(snapshot, "ns/ha")
    assert result.error is None
    spread = [state.zone_spread["ns/ha"].get(f"z{z}", 0) for z in range(zones)]
    assert sum(spread) == want
    assert max(spread) - min(spread) <= 2


@st.composite
def native_policies(draw: st.DrawFn) -> Policy:
    filters = draw(
        st.lists(
            st.sampled_from(
                [
                    ("PodFitsResources", {}),
                    ("NoMaxResourceCount", {"NumPartitions": draw(st.integers(0, 4))}),
                    ("EvenPodSpread", {"MaxSkew": draw(st.integers(0, 3))}),
                ]
            ),
            max_size=3,
        )
    )
    names = ["EvenPodSpread", "AvailabilityNodePriority", "AvailabilityZonePriority", "LowestOrdinalPriority"]
    priorities = [
        (name, draw(st.integers(0, 10)), {}) for name in draw(st.lists(st.sampled_from(names), max_size=4))
    ]
    return policy(filters, priorities)


@settings(max_examples=200, deadline=None)
@given(clusters(), native_policies())
def test_native_placement_loop_matches_the_python_plugins(snapshot: ClusterSnapshot, chosen: Policy) -> None:
    native, python = Scheduler(chosen, native=True), Scheduler(chosen, native=False)
    for vpod in snapshot.vpods:
        fast = native.schedule(native.state(snapshot), vpod.key)
        slow = python.schedule(python.state(snapshot), vpod.key)
        assert fast.placements == slow.placements
        assert str(fast.error) == str(slow.error)
        assert native.reserved == python.reserved
