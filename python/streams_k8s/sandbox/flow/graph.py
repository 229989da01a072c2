"""A workload's operators replicated at given region widths: the instances that run and the
channels between them, the shape the flow model (`flow.model`) steps over.

An instance is ``(operator, channel)``; an operator outside every region has the one channel 0.
Within one region channel c feeds channel c; across a region's boundary each sender splits its
output evenly over the receiver's channels, and each receiver hears every sender. An instance
runs in a PE of its own, keyed by the instance's name (capacity ``peCapacity``), unless
``pe_of`` fuses instances into one PE, whose capacity they then share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from streams_k8s.sandbox.flow.workload import OperatorLoad, Workload, WorkloadError

Instance = tuple[str, int]  # (operator logical name, channel)


@dataclass(frozen=True, slots=True)
class Link:
    """Part of a sender's output going to one receiver instance."""

    sender: Instance
    receiver: Instance
    share: float  # of the sender's output


@dataclass(frozen=True, slots=True)
class FlowGraph:
    workload: Workload
    widths: Mapping[str, int]  # region alias -> width
    instances: tuple[Instance, ...]  # in topological order
    links: tuple[Link, ...]
    outgoing: Mapping[Instance, tuple[Link, ...]]
    incoming: Mapping[Instance, tuple[Link, ...]]
    pe_of: Mapping[Instance, str]  # instance -> the PE it runs in

    def load(self, instance: Instance) -> OperatorLoad:
        return self.workload.operator(instance[0])

    def name(self, instance: Instance) -> str:
        """As the runtime names a parallel channel's copy: ``Op[c]`` in a region, ``Op`` outside."""
        return f"{instance[0]}[{instance[1]}]" if self.load(instance).region is not None else instance[0]

    def width(self, operator: OperatorLoad) -> int:
        return self.widths[operator.region] if operator.region is not None else 1


def build_graph(
    workload: Workload, widths: Mapping[str, int], pe_of: Mapping[Instance, str] | None = None
) -> FlowGraph:
    """The instances and links at `widths` (every region of the workload needs a width >= 1)."""
    for region in workload.regions:
        if widths.get(region, 0) < 1:
            raise WorkloadError(f"region {region} needs a width of at least 1, not {widths.get(region)}")
    width = {op.name: widths[op.region] if op.region is not None else 1 for op in workload.operators}
    region_of = {op.name: op.region for op in workload.operators}
    instances = tuple((op.name, c) for op in workload.operators for c in range(width[op.name]))
    links: list[Link] = []
    for op in workload.operators:
        for upstream in op.inputs:
            if region_of[upstream] is not None and region_of[upstream] == op.region:
                links += [Link((upstream, c), (op.name, c), 1.0) for c in range(width[op.name])]
                continue
            share = 1.0 / width[op.name]
            links += [
                Link((upstream, s), (op.name, c), share)
                for s in range(width[upstream])
                for c in range(width[op.name])
            ]
    outgoing: dict[Instance, list[Link]] = {i: [] for i in instances}
    incoming: dict[Instance, list[Link]] = {i: [] for i in instances}
    for link in links:
        outgoing[link.sender].append(link)
        incoming[link.receiver].append(link)
    named = {i: f"{i[0]}[{i[1]}]" if region_of[i[0]] is not None else i[0] for i in instances}
    return FlowGraph(
        workload,
        dict(widths),
        instances,
        tuple(links),
        {i: tuple(v) for i, v in outgoing.items()},
        {i: tuple(v) for i, v in incoming.items()},
        {i: (pe_of or {}).get(i, named[i]) for i in instances},
    )
