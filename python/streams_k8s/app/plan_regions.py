"""The plan's host pools, parallel regions and consistent regions, as the job's objects state them.

Defaults are the API models' (`api.spec_values`: a consistent region's timeouts and reset attempts
when its annotation leaves them out): the plan passes only what the application declares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streams_k8s.api.spec_values import MembershipMode, Trigger
from streams_k8s.app.model import AdlConsistentRegion
from streams_k8s.app.physical import PlannedPe
from streams_k8s.app.specs import ConsistentRegionSpec, HostPoolSpec, ParallelRegionSpec
from streams_k8s.app.topology import Node, Topology


def host_pools(topo: Topology) -> list[HostPoolSpec]:
    """The job's host pools: the application's, plus their replicas per parallel channel."""
    return [
        HostPoolSpec(
            name=pool.name,
            index=pool.index,
            hosts=list(pool.hosts),
            tags=list(pool.tags),
            membership_mode=MembershipMode.EXCLUSIVE if pool.exclusive else MembershipMode.SHARED,
            size=pool.size,
        )
        for pool in topo.hostpools
    ]


def parallel_regions(topo: Topology) -> list[ParallelRegionSpec]:
    """Every parallel region of the application at the width the topology gives it."""
    return [
        ParallelRegionSpec(index=region.index, alias=region.name, width=topo.widths[region.index])
        for region in topo.app.parallel_regions
    ]


def consistent_region_pes(topo: Topology, pes: Sequence[PlannedPe]) -> dict[int, list[int]]:
    """Consistent-region index → ids of the PEs holding one of its operators, by index."""
    regions: dict[int, set[int]] = {}
    for pe in pes:
        for node in pe.nodes:
            region = topo.nodes[node].consistent_region
            if region is not None:
                regions.setdefault(region, set()).add(pe.id)
    return {index: sorted(members) for index, members in sorted(regions.items())}


def consistent_regions(topo: Topology, region_pes: dict[int, list[int]]) -> list[ConsistentRegionSpec]:
    """The spec of every consistent region that has PEs (``region_pes``, by region index)."""
    members: dict[int, list[Node]] = {}
    for node in topo.nodes.values():
        if node.consistent_region in region_pes:
            members.setdefault(node.consistent_region, []).append(node)
    declared = {r.index: r for r in topo.app.consistent_regions}
    return [
        _consistent_region(index, pes, members.get(index, []), declared) for index, pes in region_pes.items()
    ]


def _consistent_region(
    index: int, pes: list[int], members: list[Node], declared: dict[int, AdlConsistentRegion]
) -> ConsistentRegionSpec:
    starts: dict[str, bool] = {}
    triggers: dict[str, bool] = {}
    logical: int | None = None
    for node in members:
        entry = node.operator.annotation("consistentRegionEntry")
        if entry is None:
            continue
        starts[node.name] = entry.get("isStartOfRegion") == "true"
        triggers[node.name] = entry.get("isTriggerOperator") == "true"
        raw = entry.get("logicalIndex")
        logical = int(raw) if raw is not None and raw.isdecimal() else logical
    config = declared.get(logical if logical is not None else index)
    periodic = config is not None and config.trigger == "periodic"
    settings: dict[str, Any] = {}
    if config is not None:
        declared_settings = {
            "drain_timeout": config.drain_timeout,
            "reset_timeout": config.reset_timeout,
            "max_consecutive_reset_attempts": config.max_consecutive_reset_attempts,
        }
        settings = {key: value for key, value in declared_settings.items() if value is not None}
    return ConsistentRegionSpec(
        region_index=index,
        logical_index=logical,
        num_start_operators=sum(starts.values()),
        trigger=Trigger.PERIODIC if periodic else Trigger.OPERATOR_DRIVEN,
        period=config.period if config is not None and periodic else None,
        pes_in_region=pes,
        operators_to_start_region_map=starts,
        operators_to_trigger_map=triggers,
        **settings,
    )
