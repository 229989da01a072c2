"""A job's flow: per operator, per stream, per parallel region, from its PEs' windows of readings.

Pure: `job_flow` takes each PE's `PeWindow` (or why it has none) and the job's `FlowShape` (which
logical operator is in which region, which stream goes where: from the plan, optional) and gives
rates in tuples/s, queue fill, drops and congestion. An unknown figure is ``None``, never 0:
a PE not yet read twice, or whose reading fails, leaves its operators unknown.

The runtime measures congestion per PE connection only (``pe_output_congestion_factor``, 0-100:
the share of time a sender waited on that connection). An operator's congestion is the highest of
its PE's connections; a stream's is that of the connections between its two operators' PEs; a
region's the highest of its operators'.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from streams_k8s.app.flow_window import PeWindow
from streams_k8s.app.plan import Plan

_CHANNEL = re.compile(r"\[\d+\]")


def logical_name(name: str) -> str:
    """An operator's name with its channels' ``[n]`` taken out, as the runtime's ``logical_name``."""
    return _CHANNEL.sub("", name)


class PeState(StrEnum):
    READ = "read"  # two readings or more: rates known
    PENDING = "pending"  # not read twice yet (no address, just started)
    FAILING = "failing"  # its last reading failed


@dataclass(frozen=True, slots=True)
class FlowShape:
    """What the metrics do not say: each logical operator's innermost parallel region and the
    streams between logical operators ((src, src port, dst, dst port))."""

    regions: Mapping[str, str] = field(default_factory=dict)
    streams: frozenset[tuple[str, int, str, int]] = frozenset()


def shape_of_plan(plan: Plan) -> FlowShape:
    aliases = {r.index: r.alias for r in plan.parallel_regions}
    nodes = plan.topology.nodes
    regions = {logical_name(n.name): aliases[n.channels[-1].region] for n in nodes.values() if n.channels}
    streams = frozenset(
        (logical_name(nodes[e.src].name), e.src_port, logical_name(nodes[e.dst].name), e.dst_port)
        for e in plan.topology.edges
    )
    return FlowShape(regions, streams)


def _total(values: Iterable[float | None]) -> float | None:
    """The sum, unknown if any part is unknown; None for no parts."""
    found = list(values)
    if not found or any(v is None for v in found):
        return None
    return sum(v for v in found if v is not None)


def _highest(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


@dataclass(frozen=True, slots=True)
class OperatorFlow:
    """One operator (a channel's replica is an operator of its own) of one PE."""

    name: str
    logical: str
    pe: int
    region: str | None
    inputs: Mapping[int, float | None]  # by input port: tuples/s processed
    outputs: Mapping[int, float | None]  # by output port: tuples/s submitted (its stream's rate)
    drops: float | None  # tuples/s dropped on its input ports
    enqueue_waits: float | None  # per second
    queued: float  # tuples queued now on its input ports
    queue_fill: float | None  # the fullest input port's queued / size (None: no bounded queue)
    congestion: float | None

    @property
    def tuples_in(self) -> float | None:
        return _total(self.inputs.values())

    @property
    def tuples_out(self) -> float | None:
        return _total(self.outputs.values())


@dataclass(frozen=True, slots=True)
class RegionFlow:
    region: str
    channels: int  # operators of the region that reported
    tuples_in: float | None  # processed by its operators on streams from outside it
    tuples_out: float | None  # submitted by its operators on streams leaving it
    drops: float | None
    queue_fill: float | None
    congestion: float | None


@dataclass(frozen=True, slots=True)
class PeFlow:
    """What a PE took in from other PEs and sent to them (its own ports), tuples/s."""

    tuples_in: float | None
    tuples_out: float | None
    congestion: float | None  # the highest of its connections


@dataclass(frozen=True, slots=True)
class JobFlow:
    operators: tuple[OperatorFlow, ...]  # by name
    regions: tuple[RegionFlow, ...]  # by alias
    links: Mapping[tuple[int, int], float]  # (src PE, dst PE): the highest congestion between them
    pes: Mapping[int, PeState]
    problems: Mapping[int, str]  # by PE: why its last reading failed
    pe_flows: Mapping[int, PeFlow] = field(default_factory=dict)  # the PEs read

    def operator(self, name: str) -> OperatorFlow | None:
        return next((o for o in self.operators if o.name == name), None)

    def link(self, src_pe: int, dst_pe: int) -> float | None:
        return self.links.get((src_pe, dst_pe))


def _operator(pe: int, window: PeWindow, name: str, logical: str, shape: FlowShape) -> OperatorFlow:
    last = window.last
    assert last is not None
    ins = {k.port: window.input_rates(k) for k in last.inputs if k.operator == name}
    outs = {k.port: window.output_rate(k) for k in last.outputs if k.operator == name}
    fills = [r.queued / r.queue_size for r in ins.values() if r is not None and r.queue_size > 0]
    return OperatorFlow(
        name=name,
        logical=logical,
        pe=pe,
        region=shape.regions.get(logical),
        inputs={p: (r.processed if r else None) for p, r in sorted(ins.items())},
        outputs=dict(sorted(outs.items())),
        drops=_total(r.dropped if r else None for r in ins.values()) if ins else None,
        enqueue_waits=_total(r.enqueue_waits if r else None for r in ins.values()) if ins else None,
        queued=sum(r.queued for r in ins.values() if r is not None),
        queue_fill=max(fills) if fills else None,
        congestion=_highest(last.congestion.values()),
    )


def _region(region: str, members: list[OperatorFlow], shape: FlowShape) -> RegionFlow:
    inside = {o.logical for o in members}
    entries = {(dst, port) for src, _, dst, port in shape.streams if dst in inside and src not in inside}
    exits = {(src, port) for src, port, dst, _ in shape.streams if src in inside and dst not in inside}
    return RegionFlow(
        region=region,
        channels=len(members),
        tuples_in=_total(o.inputs.get(p) for o in members for lg, p in entries if lg == o.logical),
        tuples_out=_total(o.outputs.get(p) for o in members for lg, p in exits if lg == o.logical),
        drops=_total(o.drops for o in members),
        queue_fill=_highest(o.queue_fill for o in members),
        congestion=_highest(o.congestion for o in members),
    )


def job_flow(
    windows: Mapping[int, PeWindow], problems: Mapping[int, str], shape: FlowShape | None = None
) -> JobFlow:
    """The job's flow from its PEs' windows (by PE id) and the PEs whose reading fails (by id)."""
    shape = shape or FlowShape()
    states: dict[int, PeState] = {}
    operators: list[OperatorFlow] = []
    links: dict[tuple[int, int], float] = {}
    pe_flows: dict[int, PeFlow] = {}
    for pe in sorted({*windows, *problems}):
        window = windows.get(pe)
        if pe in problems:
            states[pe] = PeState.FAILING
        elif window is None or len(window) < 2:
            states[pe] = PeState.PENDING
        else:
            states[pe] = PeState.READ
        last = window.last if window is not None else None
        if states[pe] is not PeState.READ or window is None or last is None:
            continue
        operators += [_operator(pe, window, n, lg, shape) for n, lg in sorted(last.operators())]
        pe_flows[pe] = PeFlow(*window.pe_rates(), _highest(last.congestion.values()))
        for connection, factor in last.congestion.items():
            if (dst := connection.dst_pe) is not None:
                links[(pe, dst)] = max(factor, links.get((pe, dst), 0.0))
    members: dict[str, list[OperatorFlow]] = defaultdict(list)
    for op in operators:
        if op.region is not None:
            members[op.region].append(op)
    return JobFlow(
        operators=tuple(sorted(operators, key=lambda o: o.name)),
        regions=tuple(_region(r, members[r], shape) for r in sorted(members)),
        links=links,
        pes=states,
        problems=dict(problems),
        pe_flows=pe_flows,
    )
