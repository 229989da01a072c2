"""The built-in filter and score plugins (upstream's core and kafka plugins).

Penalties are sums of absolute skews; a score plugin returns `-penalty` (see framework.py).
Every spread plugin scores 0 on a StatefulSet scaled to zero, as upstream did.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streams_k8s.scheduler.framework import (
    FilterPlugin,
    PluginError,
    PluginRegistry,
    ScorePlugin,
    SpreadView,
    read_args,
)


class PodFitsResources(FilterPlugin):
    """The pod has a free slot."""

    def __init__(self, args: Mapping[str, Any]) -> None:
        read_args("PodFitsResources", args, {})

    def native(self) -> tuple[str, int] | None:
        return ("PodFitsResources", 0)

    def filter(self, view: SpreadView, ordinal: int) -> str | None:
        return None if view.state.free(ordinal) > 0 else "pod at full capacity"


class NoMaxResourceCount(FilterPlugin):
    """A vpod never spreads over more pods than `NumPartitions` (its topic's partitions)."""

    def __init__(self, args: Mapping[str, Any]) -> None:
        self.num_partitions = read_args("NoMaxResourceCount", args, {"NumPartitions": 0})["NumPartitions"]

    def native(self) -> tuple[str, int] | None:
        return ("NoMaxResourceCount", self.num_partitions)

    def filter(self, view: SpreadView, ordinal: int) -> str | None:
        if ordinal not in view.pod_spread and len(view.pod_spread) + 1 > self.num_partitions:
            return "pod increases total # of pods beyond partition count"
        return None


class EvenPodSpread(FilterPlugin, ScorePlugin):
    """Keep this vpod's vreplicas even across pods.

    As a filter, one more vreplica on the pod must leave it within `MaxSkew` of every other
    pod; as a score, the penalty is the total skew. Pods that other vpods have filled and that
    hold none of this vpod are left out (in both roles; upstream's score kept overcommitted ones).
    """

    def __init__(self, args: Mapping[str, Any]) -> None:
        self.max_skew = read_args("EvenPodSpread", args, {"MaxSkew": 0})["MaxSkew"]

    def native(self) -> tuple[str, int] | None:
        return ("EvenPodSpread", self.max_skew)

    def filter(self, view: SpreadView, ordinal: int) -> str | None:
        if view.state.replicas <= 0:
            return None
        memo_key = ("EvenPodSpread.filter", view.pod_spread.get(ordinal, 0), view.state.free(ordinal) > 0)
        fits = view.memo.get(memo_key)
        if fits is None:
            after = view.pod_spread.get(ordinal, 0) + 1
            others = view.other_pod_values(ordinal)
            fits = int(
                not others
                or (others[-1][0] - after <= self.max_skew and after - others[0][0] <= self.max_skew)
            )
            view.memo[memo_key] = fits
        return None if fits else "pod will cause an uneven spread"

    def score(self, view: SpreadView, ordinal: int) -> int:
        if view.state.replicas <= 0:
            return 0
        memo_key = ("EvenPodSpread.score", view.pod_spread.get(ordinal, 0), view.state.free(ordinal) > 0)
        penalty = view.memo.get(memo_key)
        if penalty is None:
            after = view.pod_spread.get(ordinal, 0) + 1
            penalty = sum(count * abs(after - value) for value, count in view.other_pod_values(ordinal))
            view.memo[memo_key] = penalty
        return -penalty


class AvailabilityNodePriority(ScorePlugin):
    """Prefer the node holding the fewest of this vpod's vreplicas (skew against every node)."""

    def __init__(self, args: Mapping[str, Any]) -> None:
        self.max_skew = read_args("AvailabilityNodePriority", args, {"MaxSkew": 0})["MaxSkew"]

    def native(self) -> tuple[str, int] | None:
        return ("AvailabilityNodePriority", self.max_skew)

    def score(self, view: SpreadView, ordinal: int) -> int:
        if view.state.replicas <= 0:
            return 0
        node = view.state.pod_node.get(ordinal)
        if node is None:
            raise PluginError(f"AvailabilityNodePriority: node does not exist for pod ordinal {ordinal}")
        memo_key = ("AvailabilityNodePriority", node)
        penalty = view.memo.get(memo_key)
        if penalty is None:
            spread = view.node_spread
            after = spread.get(node, 0) + 1
            penalty = sum(abs(after - spread.get(n, 0)) for n in view.state.nodes if n != node)
            view.memo[memo_key] = penalty
        return -penalty


class AvailabilityZonePriority(ScorePlugin):
    """Prefer the zone holding the fewest of this vpod's vreplicas (skew against every zone)."""

    def __init__(self, args: Mapping[str, Any]) -> None:
        self.max_skew = read_args("AvailabilityZonePriority", args, {"MaxSkew": 0})["MaxSkew"]

    def native(self) -> tuple[str, int] | None:
        return ("AvailabilityZonePriority", self.max_skew)

    def score(self, view: SpreadView, ordinal: int) -> int:
        if view.state.replicas <= 0:
            return 0
        zone = view.state.pod_zone.get(ordinal)
        if zone is None:
            raise PluginError(f"AvailabilityZonePriority: zone does not exist for pod ordinal {ordinal}")
        memo_key = ("AvailabilityZonePriority", zone)
        penalty = view.memo.get(memo_key)
        if penalty is None:
            spread = view.zone_spread
            after = spread.get(zone, 0) + 1
            penalty = sum(abs(after - spread.get(z, 0)) for z in view.state.zones if z != zone)
            view.memo[memo_key] = penalty
        return -penalty


class LowestOrdinalPriority(ScorePlugin):
    def __init__(self, args: Mapping[str, Any]) -> None:
        read_args("LowestOrdinalPriority", args, {})

    def native(self) -> tuple[str, int] | None:
        return ("LowestOrdinalPriority", 0)

    def score(self, view: SpreadView, ordinal: int) -> int:
        return -ordinal


class RemoveWithEvenPodSpreadPriority(ScorePlugin):
    """Descheduler: prefer the pod whose loss of one vreplica evens this vpod's pods out most."""

    def __init__(self, args: Mapping[str, Any]) -> None:
        self.max_skew = read_args("RemoveWithEvenPodSpreadPriority", args, {"MaxSkew": 0})["MaxSkew"]

    def score(self, view: SpreadView, ordinal: int) -> int:
        if view.state.replicas <= 0:
            return 0
        after = view.pod_spread.get(ordinal, 0) - 1
        return -sum(abs(after - n) for o, n in view.pod_spread.items() if o != ordinal)


class RemoveWithAvailabilityNodePriority(ScorePlugin):
    """Descheduler: prefer the node whose loss of one vreplica evens the vpod's nodes out most."""

    def __init__(self, args: Mapping[str, Any]) -> None:
        self.max_skew = read_args("RemoveWithAvailabilityNodePriority", args, {"MaxSkew": 0})["MaxSkew"]

    def score(self, view: SpreadView, ordinal: int) -> int:
        if view.state.replicas <= 0:
            return 0
        node = view.state.pod_node.get(ordinal)
        if node is None:
            raise PluginError(
                f"RemoveWithAvailabilityNodePriority: node does not exist for pod ordinal {ordinal}"
            )
        after = view.node_spread.get(node, 0) - 1
        return -sum(abs(after - n) for other, n in view.node_spread.items() if other != node)


class RemoveWithAvailabilityZonePriority(ScorePlugin):
    """Descheduler: prefer the zone whose loss of one vreplica evens the vpod's zones out most."""

    def __init__(self, args: Mapping[str, Any]) -> None:
        self.max_skew = read_args("RemoveWithAvailabilityZonePriority", args, {"MaxSkew": 0})["MaxSkew"]

    def score(self, view: SpreadView, ordinal: int) -> int:
        if view.state.replicas <= 0:
            return 0
        zone = view.state.pod_zone.get(ordinal)
        if zone is None:
            raise PluginError(
                f"RemoveWithAvailabilityZonePriority: zone does not exist for pod ordinal {ordinal}"
            )
        after = view.zone_spread.get(zone, 0) - 1
        return -sum(abs(after - n) for other, n in view.zone_spread.items() if other != zone)


class RemoveWithHighestOrdinalPriority(ScorePlugin):
    def __init__(self, args: Mapping[str, Any]) -> None:
        read_args("RemoveWithHighestOrdinalPriority", args, {})

    def score(self, view: SpreadView, ordinal: int) -> int:
        return ordinal


_BUILTIN = PluginRegistry()
for _filter in (PodFitsResources, NoMaxResourceCount, EvenPodSpread):
    _BUILTIN.register_filter(_filter.__name__, _filter)
for _score in (
    EvenPodSpread,
    AvailabilityNodePriority,
    AvailabilityZonePriority,
    LowestOrdinalPriority,
    RemoveWithEvenPodSpreadPriority,
    RemoveWithAvailabilityNodePriority,
    RemoveWithAvailabilityZonePriority,
    RemoveWithHighestOrdinalPriority,
):
    _BUILTIN.register_score(_score.__name__, _score)


def default_registry() -> PluginRegistry:
    """A fresh registry holding the built-in plugins, ready for a deployment's own."""
    return _BUILTIN.copy()
