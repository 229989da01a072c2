"""An operator's placement constraints, and the one that put it in its PE, in SPL's words.

Fusion (``app.fusion``, Rust) partitions by constraints first and by the fusion mode after: an
operator is in its PE because a partition constraint ties it to (or keeps it from) the others
there, because its host placement must match theirs, because of its parallel channel under a
channel fusion type, or, when none of these applies, because of the fusion mode's PE count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from streams_k8s.api.spec_values import FusionMode, FusionType
from streams_k8s.app.fusion import host_spec
from streams_k8s.app.plan import Plan
from streams_k8s.app.topology import Node, Topology


def constraints_of(topo: Topology, node: Node) -> tuple[str, ...]:
    """Every placement and fusion constraint of ``node`` (after channel substitution)."""
    parts, placement = node.partitions, node.placement
    found = [f"partitionColocation({c})" for c in parts.colocations]
    found += [f"partitionExlocation({c})" for c in parts.exlocations]
    found += ["partitionIsolation"] if parts.isolation else []
    found += [f"hostColocation({c})" for c in placement.colocations]
    found += [f"hostExlocation({c})" for c in placement.exlocations]
    found += ["hostIsolation"] if placement.isolation else []
    placed = _placed(topo, node)
    found += [placed] if placed else []
    found += [] if node.operator.restartable else ["restartable(false)"]
    found += [] if node.operator.relocatable else ["relocatable(false)"]
    return tuple(found)


def _placed(topo: Topology, node: Node) -> str | None:
    """Its host or (non-default) host pool constraint, None when it has none."""
    host, pool_index, inpool = host_spec(topo, node)
    if host:
        return f"host({host})"
    pool = topo.hostpool(pool_index) if pool_index is not None else None
    if pool is None or pool.name == "$default":
        return None
    return f"hostPool({pool.name}" + (f"[{inpool}])" if inpool is not None else ")")


class PeConstraints:
    """How many operators of one PE carry each tying constraint, so each operator's reason is
    found without comparing it to every other operator of its PE."""

    def __init__(self, topo: Topology, members: Sequence[Node]) -> None:
        self.topology = topo
        self.partition = Counter(c for m in members for c in m.partitions.colocations)
        self.host = Counter(c for m in members for c in m.placement.colocations)
        self.placed = Counter(_placed(topo, m) for m in members)


def deciding_constraint(plan: Plan, node: Node, pe: PeConstraints) -> str:
    """Why ``node`` is in its PE: the first that applies of a partition constraint shared with
    another operator there (or isolating it), a host placement it shares with one, its channel
    under a channel fusion type, the fusion mode."""
    if node.partitions.isolation:
        return "partitionIsolation"
    for c in node.partitions.colocations:
        if pe.partition[c] > 1:
            return f"partitionColocation({c})"
    for c in node.placement.colocations:
        if pe.host[c] > 1:
            return f"hostColocation({c})"
    if node.placement.isolation:
        return "hostIsolation"
    placed = _placed(pe.topology, node)
    if placed and pe.placed[placed] > 1:
        return placed
    fusion = plan.fusion
    if node.channels and fusion.type not in (None, FusionType.NO_CHANNEL_INFLUENCE):
        return f"{fusion.type}(channel {node.channels[-1].global_})"
    if fusion.mode is FusionMode.LEGACY:
        return "legacy fusion: one PE per operator unless constrained"
    count = len(plan.pes)
    return f"{fusion.mode} fusion into {count} PE{'s' if count != 1 else ''}"
