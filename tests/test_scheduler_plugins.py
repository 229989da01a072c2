"""Each built-in plugin on its own, against the semantics of the spec (§3)."""

from __future__ import annotations

from scheduler_fixtures import nodes_in_zones, pods_on, snapshot, vpod
from streams_k8s.scheduler import PolicyError, SpreadView, State, default_registry


def view_of(state: State, key: str = "ns/a") -> SpreadView:
    return SpreadView(state, key)


def plugin(kind: str, name: str, args: dict[str, int] | None = None):  # type: ignore[no-untyped-def]
    registry = default_registry()
    table = registry.filters if kind == "filter" else registry.scores
    return table[name](args or {})


def test_pod_fits_resources() -> None:
    state = State.build(
        snapshot(2, nodes_in_zones("a"), pods_on("node0", "node0"), (vpod("ns/a", 10, p0=10),)), {}
    )
    fits = plugin("filter", "PodFitsResources")
    assert fits.filter(view_of(state), 0) == "pod at full capacity"
    assert fits.filter(view_of(state), 1) is None


def test_no_max_resource_count_limits_pods_per_vpod() -> None:
    state = State.build(
        snapshot(3, nodes_in_zones("a"), pods_on(*["node0"] * 3), (vpod("ns/a", 4, p0=1, p1=1),)), {}
    )
    limit = plugin("filter", "NoMaxResourceCount", {"NumPartitions": 2})
    assert limit.filter(view_of(state), 0) is None  # already used
    assert limit.filter(view_of(state), 2) == "pod increases total # of pods beyond partition count"
    assert plugin("filter", "NoMaxResourceCount", {"NumPartitions": 3}).filter(view_of(state), 2) is None


def test_even_pod_spread_filter_and_score() -> None:
    # ns/a: 3 on sts-0, 0 elsewhere; sts-2 is filled by ns/b, so it does not count in the skew.
    vps = (vpod("ns/a", 5, p0=3), vpod("ns/b", 10, p2=10))
    state = State.build(snapshot(4, nodes_in_zones("a"), pods_on(*["node0"] * 4), vps), {})
    spread = plugin("filter", "EvenPodSpread", {"MaxSkew": 2})
    view = view_of(state)
    assert spread.filter(view, 0) == "pod will cause an uneven spread"  # 4 vs 0 on sts-1 and sts-3
    assert spread.filter(view, 1) is None
    score = plugin("score", "EvenPodSpread", {"MaxSkew": 2})
    assert score.score(view, 1) == -(abs(1 - 3) + abs(1 - 0))  # vs sts-0 and sts-3
    assert score.score(view, 0) == -(4 + 4)


def test_zone_priority_counts_every_zone_including_empty_ones() -> None:
    # zones a, b, c and an unknown node; pods only in a and b.
    nodes = nodes_in_zones("a", "b", "c", None)
    state = State.build(snapshot(2, nodes, pods_on("node0", "node1"), (vpod("ns/a", 3, p0=2),)), {})
    zone = plugin("score", "AvailabilityZonePriority", {"MaxSkew": 2})
    assert zone.score(view_of(state), 0) == -(3 + 3 + 3)  # a would hold 3; b, c, unknown hold 0
    assert zone.score(view_of(state), 1) == -(abs(1 - 2) + 1 + 1)


def test_node_priority_and_ordinal_priorities() -> None:
    state = State.build(
        snapshot(2, nodes_in_zones("a", "a"), pods_on("node0", "node1"), (vpod("ns/a", 3, p1=1),)), {}
    )
    node = plugin("score", "AvailabilityNodePriority", {"MaxSkew": 1})
    assert node.score(view_of(state), 0) == -abs(1 - 1)
    assert node.score(view_of(state), 1) == -abs(2 - 0)
    assert plugin("score", "LowestOrdinalPriority").score(view_of(state), 1) == -1
    assert plugin("score", "RemoveWithHighestOrdinalPriority").score(view_of(state), 1) == 1


def test_remove_priorities_compare_only_occupied_pods_nodes_zones() -> None:
    nodes = nodes_in_zones("a", "b", "c")
    vps = (vpod("ns/a", 6, p0=4, p1=2),)
    state = State.build(snapshot(3, nodes, pods_on("node0", "node1", "node2"), vps), {})
    view = view_of(state)
    even = plugin("score", "RemoveWithEvenPodSpreadPriority", {"MaxSkew": 2})
    assert even.score(view, 0) == -abs(3 - 2)
    assert even.score(view, 1) == -abs(1 - 4)
    assert plugin("score", "RemoveWithAvailabilityZonePriority").score(view, 0) == -1
    assert plugin("score", "RemoveWithAvailabilityNodePriority").score(view, 1) == -3


def test_scaled_to_zero_statefulset_scores_zero() -> None:
    state = State.build(snapshot(0, nodes_in_zones("a"), ()), {})
    state.add_vpod(vpod("ns/a", 1), {})
    assert plugin("score", "EvenPodSpread").score(view_of(state), 0) == 0
    assert plugin("score", "AvailabilityZonePriority").score(view_of(state), 0) == 0


def test_plugin_arguments_are_validated() -> None:
    registry = default_registry()
    for bad in ({"MaxSkw": 1}, {"MaxSkew": -1}, {"MaxSkew": "2"}):
        try:
            registry.scores["EvenPodSpread"](bad)
        except PolicyError:
            continue
        raise AssertionError(f"{bad} accepted")
    assert registry.scores["EvenPodSpread"]({"maxskew": 3}).max_skew == 3  # type: ignore[attr-defined]
