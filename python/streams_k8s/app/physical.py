"""The physical model: PEs and their ports, as fusion and port assignment leave them, and what
a PE's children need of it (its AADL and content id, placement, restartable flag, consistent
regions, exported and imported streams)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from streams_k8s.app.model import AdlExport
from streams_k8s.app.specs import ExportSpec, ImportSpec, Placement
from streams_k8s.app.topology import Edge, Topology

_LAST = 2**63  # sort key of ports with no peer PE (imports, exports)


@dataclass(slots=True)
class PeInputPort:
    id: int
    node: int
    port: int
    senders: list[tuple[int, Edge]] = field(default_factory=list)  # (source PE id, edge)


@dataclass(slots=True)
class PeOutputPort:
    id: int
    node: int
    port: int
    channel: tuple[int, int] | None  # (splitter region, channel) for parallel fan-out
    receivers: list[tuple[int, Edge]] = field(default_factory=list)  # (destination PE id, edge)
    exports: tuple[tuple[str, AdlExport], ...] = ()  # (Export operator name, what it exports)


@dataclass(slots=True)
class PlannedPe:
    id: int
    index: int  # container index: position when ordered by smallest node index
    nodes: list[int]
    operators: list[str]
    inputs: list[PeInputPort] = field(default_factory=list)
    outputs: list[PeOutputPort] = field(default_factory=list)
    aadl: str = ""
    content_id: str = ""
    placement: Placement = field(default_factory=Placement)
    restartable: bool = True  # every operator is (SPL restartable): its failed pods may be restarted
    signature: tuple[object, ...] = ()  # inputs of the AADL; equal signatures render equal AADL
    regions: list[int] = field(default_factory=list)  # consistent regions it holds operators of
    exports: list[ExportSpec] = field(default_factory=list)  # of its output ports, in port order
    imports: list[ImportSpec] = field(default_factory=list)  # of its input ports, in port order


@dataclass(slots=True)
class PortIndex:
    """Where every node and PE port ended up, for rendering connections."""

    pe_of: dict[int, int]  # node index → PE id
    inputs: dict[tuple[int, int], tuple[int, int]]  # (node, port) → (PE id, PE port id)
    outputs: dict[tuple[int, int, tuple[int, int] | None], tuple[int, int]]  # (node, port, channel) → ...

    @classmethod
    def of(cls, pes: Sequence[PlannedPe]) -> PortIndex:
        return cls(
            pe_of={n: pe.id for pe in pes for n in pe.nodes},
            inputs={(p.node, p.port): (pe.id, p.id) for pe in pes for p in pe.inputs},
            outputs={(p.node, p.port, p.channel): (pe.id, p.id) for pe in pes for p in pe.outputs},
        )


def assign_ports(topo: Topology, pes: list[PlannedPe]) -> None:
    """Give ``pes`` their ports (see `app.plan`'s module docs for how they are numbered)."""
    pe_of = {n: pe.id for pe in pes for n in pe.nodes}
    by_id = {pe.id: pe for pe in pes}
    inputs: dict[tuple[int, int], PeInputPort] = {}
    outputs: dict[tuple[int, int, tuple[int, int] | None], PeOutputPort] = {}
    for edge in topo.edges:
        src_pe, dst_pe = pe_of[edge.src], pe_of[edge.dst]
        if src_pe == dst_pe:
            continue
        channel = (edge.splitter.region, edge.splitter.channel) if edge.splitter else None
        out = outputs.setdefault(
            (edge.src, edge.src_port, channel), PeOutputPort(-1, edge.src, edge.src_port, channel)
        )
        out.receivers.append((dst_pe, edge))
        inp = inputs.setdefault((edge.dst, edge.dst_port), PeInputPort(-1, edge.dst, edge.dst_port))
        inp.senders.append((src_pe, edge))
    for node in topo.nodes.values():
        for port in node.imports:
            inputs.setdefault((node.index, port), PeInputPort(-1, node.index, port))
        for port, exports in node.exports.items():
            key = (node.index, port, None)
            out = outputs.setdefault(key, PeOutputPort(-1, node.index, port, None))
            out.exports = exports
    for inp in sorted(inputs.values(), key=lambda p: (p.node, p.port)):
        by_id[pe_of[inp.node]].inputs.append(inp)
    for out in sorted(outputs.values(), key=lambda p: (p.node, p.port, p.channel or (-1, -1))):
        by_id[pe_of[out.node]].outputs.append(out)
    for pe in pes:
        pe.inputs.sort(key=lambda p: (min((s for s, _ in p.senders), default=_LAST), p.node, p.port))
        pe.outputs.sort(
            key=lambda p: (
                min((r for r, _ in p.receivers), default=_LAST),
                p.node,
                p.port,
                p.channel or (-1, -1),
            )
        )
        for i, inp in enumerate(pe.inputs):
            inp.id = i
        for i, out in enumerate(pe.outputs):
            out.id = i
