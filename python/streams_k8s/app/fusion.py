"""Fusion front-end: turns a topology into the plain data the native partitioner takes.

Every string constraint (colocation ids, host specs, JVM arguments, channels) is interned into an
integer here; the partitioner (``streams_k8s._native.fuse``, Rust) never sees a string. Mode
selection, the automatic PE count inputs and readable errors live here too.

Automatic fusion picks ``N = clamp(ceil(min_threads / cpu_limit), 1, ceil(max_threads / cpu_request))``,
then at most the node count (when known) and the operator count, where ``min_threads`` = sources +
threaded input ports, ``max_threads`` = operators + threaded input ports, and the CPU is one PE
pod's request/limit in cores (the limit defaults to the request). See ``rust/fusion/mod.rs``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from streams_k8s._native import FusionError, FusionNode, FusionNotice, automatic_pe_count, fuse
from streams_k8s.api.spec_values import DEFAULT_FUSION_MODE, DEFAULT_PE_REQUESTS, FusionMode, FusionType
from streams_k8s.app.topology import Node, Topology


class Fusion(Protocol):
    """How to fuse: a Job's `spec.fusion` (`api.job.Fusion`), or `FusionChoice`."""

    @property
    def mode(self) -> FusionMode: ...
    @property
    def manual(self) -> int | None: ...
    @property
    def type(self) -> FusionType | None: ...


@dataclass(frozen=True, slots=True)
class FusionChoice:
    """A fusion given outside a Job (`streams-k8s plan` of a bundle); a Job's default when none is."""

    mode: FusionMode = DEFAULT_FUSION_MODE
    manual: int | None = None  # the PE count of manual fusion
    type: FusionType | None = None


class Resources(Protocol):
    """A PE pod's resources: a Job's `ResourceRequirements` (`api.base`)."""

    @property
    def requests(self) -> Mapping[str, str | int] | None: ...
    @property
    def limits(self) -> Mapping[str, str | int] | None: ...


class FusionConstraintError(ValueError):
    """Operators that must share a PE cannot; the message names them and the constraint."""


@dataclass(frozen=True, slots=True)
class FusionResult:
    pes: list[list[int]]  # node indices per PE, PEs ordered by smallest node index
    target: int | None  # the PE count asked for (None in legacy mode)
    notices: list[str]
    inputs: FusionInputs


class _Interner:
    def __init__(self) -> None:
        self._ids: dict[Hashable, int] = {}

    def __call__(self, value: Hashable) -> int:
        return self._ids.setdefault(value, len(self._ids))


class FusionInputs:
    """Interned node specs, kept across re-fusions: a node reused by a rebuilt topology is not redone."""

    def __init__(self) -> None:
        self.ids = _Interner()
        self._specs: dict[int, tuple[Node, FusionNode]] = {}

    def spec(self, topo: Topology, node: Node, alike: dict[tuple[object, ...], FusionNode]) -> FusionNode:
        """``node``'s spec; ``alike``: the specs made for ``topo`` so far, by what they are made of
        (most operators of an application share their constraints: one spec serves them all)."""
        cached = self._specs.get(node.index)
        if cached is not None and cached[0] is node:
            return cached[1]
        op = node.operator
        channel = node.channel_key if node.channels else None
        key: tuple[object, ...] = (node.partitions, node.placement, node.consistent_region, channel)
        key = (*key, op.restartable, op.relocatable, op.jvm_arguments)
        spec = alike.get(key)
        if spec is None:
            spec = alike[key] = _fusion_node(topo, node, self.ids)
        self._specs[node.index] = (node, spec)
        return spec


def host_spec(topo: Topology, node: Node) -> tuple[str | None, int | None, int | None]:
    """(declared host, pool index, in-pool index): operators with different specs never share a PE."""
    p = node.placement
    host = p.host
    if p.pool_index is not None and p.inpool_index is not None:
        pool = topo.hostpool(p.pool_index)
        if pool is not None and p.inpool_index < len(pool.hosts):
            host = host or pool.hosts[p.inpool_index]
    return host, p.pool_index, p.inpool_index


def _fusion_node(topo: Topology, node: Node, ids: _Interner) -> FusionNode:
    op = node.operator
    return FusionNode(
        colocations=[ids(("pc", c)) for c in node.partitions.colocations],
        exlocations=[ids(("px", c)) for c in node.partitions.exlocations],
        isolated=node.partitions.isolation,
        host_colocations=[ids(("hc", c)) for c in node.placement.colocations],
        host_exlocations=[ids(("hx", c)) for c in node.placement.exlocations],
        host_isolated=node.placement.isolation,
        host_key=ids(("host", host_spec(topo, node))),
        consistent_region=node.consistent_region,
        restartable=op.restartable,
        relocatable=op.relocatable,
        jvm=ids(("jvm", op.jvm_arguments)) if op.jvm_arguments is not None else None,
        channel=ids(("ch", node.channel_key)) if node.channels else None,
    )


def _cpu(values: Mapping[str, str | int] | None) -> str | int | None:
    return values.get("cpu") if values else None


def _millicores(cpu: str | int) -> int:
    text = str(cpu)
    if text.endswith("m"):
        return max(1, int(float(text[:-1])))
    return max(1, int(float(text) * 1000))


def thread_counts(topo: Topology) -> tuple[int, int]:
    """(min, max) threads: sources plus threaded ports; one per operator plus threaded ports."""
    threaded = sum(
        1 for n in topo.nodes.values() for p in n.operator.input_ports if p.threaded_port is not None
    )
    sources = sum(1 for n in topo.nodes.values() if not n.operator.input_ports)
    return sources + threaded, len(topo.nodes) + threaded


def target_pe_count(
    topo: Topology, fusion: Fusion, resources: Resources | None, nodes: int | None
) -> int | None:
    """N for manual and automatic fusion; None for legacy."""
    mode = fusion.mode
    if mode is FusionMode.LEGACY:
        return None
    if mode is FusionMode.MANUAL:
        assert fusion.manual is not None
        return fusion.manual
    low, high = thread_counts(topo)
    request = _cpu(resources.requests) if resources else None
    limit = _cpu(resources.limits) if resources else None
    return automatic_pe_count(
        len(topo.nodes),
        low,
        high,
        _millicores(DEFAULT_PE_REQUESTS["cpu"] if request is None else request),
        None if limit is None else _millicores(limit),
        nodes,
    )


def fuse_topology(
    topo: Topology,
    fusion: Fusion,
    *,
    resources: Resources | None = None,
    nodes: int | None = None,
    inputs: FusionInputs | None = None,
    previous: Mapping[str, int] | None = None,
) -> FusionResult:
    """Partition ``topo`` into PEs as ``fusion`` says. Raises FusionConstraintError.

    ``previous`` (node name → earlier PE id) asks for a re-fusion that moves as little as it can;
    ``inputs`` reuses the interned specs of an earlier fusion of the same application.
    """
    inputs = inputs or FusionInputs()
    order: Sequence[Node] = sorted(topo.nodes.values(), key=lambda n: n.index)
    position = {n.index: i for i, n in enumerate(order)}
    alike: dict[tuple[object, ...], FusionNode] = {}
    specs = [inputs.spec(topo, n, alike) for n in order]
    edges = [(position[e.src], position[e.dst]) for e in topo.edges]
    target = target_pe_count(topo, fusion, resources, nodes)
    policy = fusion.type.value if fusion.type is not None else "noChannelInfluence"
    before = [previous.get(n.name) for n in order] if previous is not None and target is not None else None
    try:
        pes, notices = fuse(specs, edges, manual=target, channel_policy=policy, previous=before)
    except FusionError as err:
        a, b = err.nodes
        raise FusionConstraintError(
            f"operators {order[a].name} and {order[b].name} must be fused together "
            f"but their {err.constraint} constraints forbid it"
        ) from None
    return FusionResult(
        pes=[[order[i].index for i in pe] for pe in pes],
        target=target,
        notices=[_notice_text(n, order) for n in notices],
        inputs=inputs,
    )


def _notice_text(notice: FusionNotice, order: Sequence[Node]) -> str:
    head = f"{notice.got} PEs instead of the {notice.asked} asked for"
    if notice.kind == "more" and notice.nodes is not None:
        a, b = notice.nodes
        why = (
            f"{order[a].name} is partition-isolated"
            if a == b
            else f"{order[a].name} and {order[b].name} cannot share a PE ({notice.constraint})"
        )
        return f"{head}: {why}"
    return f"{head}: only {notice.got} fusable units"
