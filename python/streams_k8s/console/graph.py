"""The job graph: what the console draws, as a pure, JSON-serialisable model of a plan.

Operators (by topology node index) grouped into PEs, parallel regions with their channels, the
streams between operators with their port labels, and the streams imported from or exported to
other jobs. Built from the typed plan alone (``graph_from_plan``), so the offline picture
(``streams-k8s plan -o html``) and the live console draw the same thing; live state reaches the
picture only as a ``Health`` per PE and operator id (see ``console.render``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

import orjson

from streams_k8s.app.model import AdlExport, AdlImport
from streams_k8s.app.plan import Plan
from streams_k8s.app.specs import to_wire
from streams_k8s.app.topology import Node
from streams_k8s.console.graph_constraints import PeConstraints, constraints_of, deciding_constraint


class Health(StrEnum):
    """How a PE or operator is doing, as the picture colours it."""

    OK = "ok"
    STARTING = "starting"
    FAILED = "failed"
    UNKNOWN = "unknown"


def pe_key(pe: int) -> str:
    """The key of a PE in a health mapping."""
    return f"pe:{pe}"


def operator_key(operator: int) -> str:
    """The key of an operator (by id) in a health mapping."""
    return f"op:{operator}"


@dataclass(frozen=True, slots=True)
class ChannelRef:
    """An operator's place in one enclosing parallel region: ``channel`` is the global channel
    (the ``[n]`` of its name), unique across the channels of enclosing regions."""

    region: str  # the region's alias
    channel: int
    local: int  # the channel within this replica of the region: 0 to width - 1

    @property
    def key(self) -> str:
        return f"{self.region}/{self.channel}"


@dataclass(frozen=True, slots=True)
class PortLabel:
    index: int
    name: str
    stream: str | None = None  # output ports: the stream's name


@dataclass(frozen=True, slots=True)
class OperatorNode:
    id: int  # topology node index: stable across re-plans of the same job
    name: str
    kind: str  # the operator's definition, e.g. spl.relational::Functor
    pe: int
    channels: tuple[ChannelRef, ...]  # outermost region first; empty outside parallel regions
    consistent_region: int | None
    constraints: tuple[str, ...]  # its placement and fusion constraints, as SPL names them
    decided_by: str  # the constraint (or fusion rule) that put it in its PE
    inputs: tuple[PortLabel, ...]
    outputs: tuple[PortLabel, ...]

    @property
    def channel(self) -> ChannelRef | None:
        """The innermost channel, the one a channel box groups by."""
        return self.channels[-1] if self.channels else None


@dataclass(frozen=True, slots=True)
class PeNode:
    id: int
    operators: tuple[int, ...]  # operator ids, by id
    content_id: str
    placement: dict[str, Any]  # the PE's Placement as the CR states it
    restartable: bool


@dataclass(frozen=True, slots=True)
class RegionNode:
    """A parallel region: ``channels[n]`` holds the operator ids of global channel ``n``'s
    replicas that this region is the innermost region of, or encloses."""

    index: int
    alias: str
    width: int
    channels: dict[int, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class StreamEdge:
    src: int
    src_port: int
    dst: int
    dst_port: int
    stream: str  # the output port's stream name
    src_label: str  # output port name
    dst_label: str  # input port name


@dataclass(frozen=True, slots=True)
class ExternalStream:
    """A stream to or from another job: ``operator``'s port imports or exports it."""

    direction: str  # "import" | "export"
    operator: int
    port: int
    via: str  # the Import or Export operator's name
    label: str  # what is matched: application/stream, a subscription, or export properties

    @property
    def key(self) -> str:
        return f"{self.direction}:{self.via}"


@dataclass(frozen=True, slots=True)
class JobGraph:
    job: str
    application: str
    operators: tuple[OperatorNode, ...]  # by id
    pes: tuple[PeNode, ...]  # by id
    regions: tuple[RegionNode, ...]  # by index
    streams: tuple[StreamEdge, ...]
    external: tuple[ExternalStream, ...]
    consistent_regions: tuple[int, ...]
    notices: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict(), option=orjson.OPT_NON_STR_KEYS)


def graph_from_plan(plan: Plan) -> JobGraph:
    """The graph of ``plan``: every operator, PE, region, stream and import/export it holds."""
    topo = plan.topology
    app = topo.app
    kinds = {d.index: d.kind for d in app.definitions}
    aliases = {r.index: r.alias for r in plan.parallel_regions}
    pe_of = plan.pe_of_node()
    facts = {pe.id: PeConstraints(topo, [topo.nodes[n] for n in pe.nodes]) for pe in plan.pes}
    operators = []
    for index in sorted(topo.nodes):
        node = topo.nodes[index]
        pe = pe_of[index]
        operators.append(
            OperatorNode(
                id=index,
                name=node.name,
                kind=kinds.get(node.operator.definition_index, ""),
                pe=pe,
                channels=tuple(ChannelRef(aliases[c.region], c.global_, c.local) for c in node.channels),
                consistent_region=node.consistent_region,
                constraints=constraints_of(topo, node),
                decided_by=deciding_constraint(plan, node, facts[pe]),
                inputs=tuple(PortLabel(p.index, p.name) for p in node.operator.input_ports),
                outputs=tuple(PortLabel(p.index, p.name, p.stream_name) for p in node.operator.output_ports),
            )
        )
    return JobGraph(
        job=plan.job_name,
        application=plan.application_name,
        operators=tuple(operators),
        pes=tuple(
            PeNode(
                id=pe.id,
                operators=tuple(sorted(pe.nodes)),
                content_id=pe.content_id,
                placement=to_wire(pe.placement),
                restartable=pe.restartable,
            )
            for pe in plan.pes
        ),
        regions=_regions(plan, operators),
        streams=tuple(
            _stream(topo.nodes[e.src], e.src_port, topo.nodes[e.dst], e.dst_port) for e in topo.edges
        ),
        external=_external(topo.nodes),
        consistent_regions=tuple(r.region_index for r in plan.consistent_regions),
        notices=tuple(plan.notices),
    )


def _regions(plan: Plan, operators: list[OperatorNode]) -> tuple[RegionNode, ...]:
    channels: dict[str, dict[int, list[int]]] = {r.alias: {} for r in plan.parallel_regions}
    for op in operators:
        for ref in op.channels:
            channels[ref.region].setdefault(ref.channel, []).append(op.id)
    return tuple(
        RegionNode(
            index=r.index,
            alias=r.alias,
            width=r.width,
            channels={n: tuple(ids) for n, ids in sorted(channels[r.alias].items())},
        )
        for r in sorted(plan.parallel_regions, key=lambda r: r.index)
    )


def _stream(src: Node, src_port: int, dst: Node, dst_port: int) -> StreamEdge:
    out = src.operator.output_port(src_port)
    inp = dst.operator.input_port(dst_port)
    return StreamEdge(
        src=src.index,
        src_port=src_port,
        dst=dst.index,
        dst_port=dst_port,
        stream=out.stream_name if out else "",
        src_label=out.name if out else str(src_port),
        dst_label=inp.name if inp else str(dst_port),
    )


def _external(nodes: Mapping[int, Node]) -> tuple[ExternalStream, ...]:
    found = []
    for index in sorted(nodes):
        node = nodes[index]
        for port, imports in sorted(node.imports.items()):
            found += [
                ExternalStream("import", index, port, via, _import_label(spec)) for via, _, spec in imports
            ]
        for port, exports in sorted(node.exports.items()):
            found += [
                ExternalStream("export", index, port, via, _export_label(spec)) for via, spec in exports
            ]
    return tuple(found)


def _import_label(spec: AdlImport) -> str:
    if spec.subscription is not None:
        return spec.subscription
    return f"{spec.application_name or '*'}/{spec.stream_name or '*'}"


def _export_label(spec: AdlExport) -> str:
    if spec.stream_name:
        return spec.stream_name
    return ", ".join(f"{p.name}={'|'.join(p.values)}" for p in spec.properties) or "(no properties)"
