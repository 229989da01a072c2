"""Logical model → topology: parallel regions expanded into channels, connections made physical.

Each primitive operator becomes one node per channel combination of the regions around it
(nested regions multiply). Channel 0 keeps the ADL index; replicas get fresh indices above every
primitive index, or, on re-fusion, the index their name had before (so unchanged operators keep
their index and their PE's AADL does not change). Names follow the runtime: each path component
is the last ``.``-segment of the ADL name, and a parallel operator's component carries
``[<global channel>]``, e.g. ``Result.Region1[3]`` or ``P1[1].H2[5].F2[17]``.

Connections between replicas: channels of the regions both ends share must be equal; regions
only the consumer is in are entered through a splitter on the producer's output port (fan out
to every channel); regions only the producer is in are left through a merger (fan in).
Import and Export operators are not nodes: they become imported/exported streams on ports.

Long: one algorithm (channels, names, hops, replica pools, rebuilds) whose parts share its state.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from streams_k8s.api.spec_values import MAX_WIDTH
from streams_k8s.app.model import (
    AdlExport,
    AdlHostPool,
    AdlImport,
    AdlParallelRegion,
    Annotation,
    Application,
    HostPlacement,
    Operator,
    OperatorKind,
    Partitions,
    SplitterKind,
)

# The most connections a plan may have. Adjacent parallel regions connect every channel of one to
# every channel of the next, so two regions of 1,000 channels would make 1,000,000 of them: seconds
# and half a GB of topology before fusion, for PEs whose AADL no ConfigMap could hold.
MAX_CONNECTIONS = 200_000


class TopologyError(ValueError):
    """The application's connections or regions cannot be turned into a topology."""


# The immutable records made once per node or connection are named tuples: built three times
# faster than frozen dataclasses (which set each field through object.__setattr__).
class Channel(NamedTuple):
    """A node's position in one enclosing parallel region."""

    region: int
    local: int
    local_max: int
    global_: int
    global_max: int


class SplitterStep(NamedTuple):
    """One splitter on the way into a parallel region: the consumer's local ``channel`` of ``region``."""

    region: int
    kind: SplitterKind
    iport: int
    channel: int


class SplitterUse(NamedTuple):
    """The splitters an edge goes through, on the producer's port: one per region it enters,
    outermost first (nested regions nest their splitters inside the outer one's channels)."""

    path: tuple[SplitterStep, ...]

    @property
    def region(self) -> int:
        return self.path[0].region

    @property
    def channel(self) -> int:
        return self.path[0].channel


class Edge(NamedTuple):
    src: int
    src_port: int
    dst: int
    dst_port: int
    splitter: SplitterUse | None = None


@dataclass(slots=True)
class Node:
    index: int
    name: str
    operator: Operator
    channels: tuple[Channel, ...]
    placement: HostPlacement
    partitions: Partitions
    consistent_region: int | None
    threading: str | None = None  # @threading model of the operator or its nearest composite
    imports: dict[int, tuple[tuple[str, int, AdlImport], ...]] = field(default_factory=dict)  # by input port
    exports: dict[int, tuple[tuple[str, AdlExport], ...]] = field(default_factory=dict)  # by output port

    @property
    def channel_key(self) -> tuple[tuple[int, int], ...]:
        return tuple((c.region, c.local) for c in self.channels)


@dataclass(slots=True)
class Topology:
    app: Application
    widths: dict[int, int]
    nodes: dict[int, Node]
    edges: list[Edge]
    # how it was built, kept so a width change rebuilds only what it touches
    replicas: dict[int, list[Node]] = field(default_factory=dict)  # by ADL operator index
    chains: dict[int, list[AdlParallelRegion]] = field(
        default_factory=dict
    )  # enclosing regions, outermost first
    hops: list[_Hop] = field(default_factory=list)
    hop_edges: list[list[Edge]] = field(default_factory=list)
    region_ops: dict[int, list[int]] = field(default_factory=dict)  # operators inside each region
    op_hops: dict[int, list[int]] = field(default_factory=dict)  # hops touching each operator
    max_index: int = 0  # highest node index ever given: removed indices are not reused
    hostpools: tuple[AdlHostPool, ...] = ()  # the application's pools plus per-channel replicas
    replica_pools: dict[tuple[int, int, int], AdlHostPool] = field(default_factory=dict)
    given_values: dict[int, str] = field(default_factory=dict)  # submission-time values the user gave
    default_threading: str | None = None  # the Job's threadingModel, for apps without @threading

    _into: dict[int, list[Edge]] | None = None
    _from: dict[int, list[Edge]] | None = None
    _pools: dict[int, AdlHostPool] | None = None

    def hostpool(self, index: int) -> AdlHostPool | None:
        if self._pools is None:  # a plan asks once per node
            self._pools = {p.index: p for p in self.hostpools}
        return self._pools.get(index)

    def by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes.values()}

    def _index(self) -> tuple[dict[int, list[Edge]], dict[int, list[Edge]]]:
        if self._into is None or self._from is None:
            self._into, self._from = {}, {}
            for e in self.edges:
                self._into.setdefault(e.dst, []).append(e)
                self._from.setdefault(e.src, []).append(e)
        return self._into, self._from

    def patch_edge_index(
        self, previous: Topology, removed: list[list[Edge]], added: list[list[Edge]]
    ) -> None:
        """Derive this topology's edge index from ``previous``'s, changing only the given edges."""
        into, from_ = (dict(d) for d in previous._index())
        copied: set[tuple[str, int]] = set()

        def own(table: dict[int, list[Edge]], side: str, node: int) -> list[Edge]:
            if (side, node) not in copied:
                copied.add((side, node))
                table[node] = list(table.get(node, ()))
            return table[node]

        gone = {id(e) for group in removed for e in group}
        for group in removed:
            for e in group:
                for table, side, node in ((into, "in", e.dst), (from_, "out", e.src)):
                    own(table, side, node)
        for side, node in copied:
            table = into if side == "in" else from_
            table[node] = [e for e in table[node] if id(e) not in gone]
        for group in added:
            for e in group:
                own(into, "in", e.dst).append(e)
                own(from_, "out", e.src).append(e)
        self._into, self._from = into, from_

    def edges_into(self, node: int) -> list[Edge]:
        return self._index()[0].get(node, [])

    def edges_from(self, node: int) -> list[Edge]:
        return self._index()[1].get(node, [])


_BY_CHANNEL = re.compile(r"byChannel\(\s*([^,()]+?)\s*,\s*(\d+)\s*\)")


def _substitute(token: str, channels: tuple[Channel, ...]) -> str:
    """Replace the channel intrinsics in a placement or partition id (innermost region last)."""
    if not _has_intrinsic(token):
        return token
    inner = channels[-1] if channels else None

    def by_channel(m: re.Match[str]) -> str:
        level = int(m.group(2))
        if level >= len(channels):
            raise TopologyError(
                f"'{token}': byChannel level {level} but only {len(channels)} enclosing regions"
            )
        return f"{m.group(1)}_{channels[len(channels) - 1 - level].global_}"

    out = _BY_CHANNEL.sub(by_channel, token)
    replacements = {
        "getChannel()": str(inner.global_ if inner else -1),
        "getLocalChannel()": str(inner.local if inner else -1),
        "getMaxChannels()": str(inner.global_max if inner else 0),
        "getLocalMaxChannels()": str(inner.local_max if inner else 0),
        "getAllChannels()": "[" + ",".join(str(c.global_) for c in reversed(channels)) + "]",
        "getAllMaxChannels()": "[" + ",".join(str(c.global_max) for c in reversed(channels)) + "]",
    }
    for intrinsic, value in replacements.items():
        out = out.replace(intrinsic, value)
    return out


def _sub_all(tokens: tuple[str, ...], channels: tuple[Channel, ...]) -> tuple[str, ...]:
    return tuple(_substitute(t, channels) for t in tokens)


def _has_intrinsic(*tokens: str) -> bool:
    """Whether `_substitute` could change any of ``tokens`` (intrinsics are calls)."""
    return any("(" in t for t in tokens)


@functools.lru_cache(maxsize=4096)  # most operators share their (often empty) constraints
def _fixed_placement(p: HostPlacement) -> bool:
    """Whether every replica takes ``p`` as it is (no channel intrinsic, no empty host)."""
    return p.host != "" and not _has_intrinsic(p.host or "", *p.colocations, *p.exlocations)


@functools.lru_cache(maxsize=4096)
def _fixed_partitions(q: Partitions) -> bool:
    return not _has_intrinsic(*q.colocations, *q.exlocations)


class _Hop(NamedTuple):
    """A primitive-to-primitive logical connection, with the composite input ports it crosses."""

    src: int
    src_port: int
    dst: int
    dst_port: int
    entered: tuple[tuple[int, int], ...]  # (composite index, input port index), outermost first


class _Flattener:
    """Follows connections through composite ports down to primitive input ports."""

    def __init__(self, app: Application) -> None:
        self.app = app

    def targets(
        self, oper: int, port: int, kind: str, entered: tuple[tuple[int, int], ...], depth: int = 0
    ) -> Iterator[tuple[int, int, tuple[tuple[int, int], ...]]]:
        if depth > 10_000:
            raise TopologyError("connections through composites form a cycle")
        op = self.app.operators.get(oper)
        if op is not None:
            if kind != "input" or (op.kind is not OperatorKind.EXPORT and op.input_port(port) is None):
                raise TopologyError(
                    f"a connection goes to input port {port} of {op.name}, which has no such port"
                )
            yield oper, port, entered
            return
        comp = self.app.composites.get(oper)
        if comp is None:
            raise TopologyError(f"connection to unknown operator index {oper}")
        ports = comp.input_ports if kind == "input" else comp.output_ports
        cport = next((p for p in ports if p.index == port), None)
        if cport is None:
            raise TopologyError(f"composite {comp.name} has no {kind} port {port}")
        now = (*entered, (oper, port)) if kind == "input" else entered
        for ref in cport.outgoing:
            yield from self.targets(ref.oper_index, ref.port_index, ref.kind, now, depth + 1)

    def hops(self) -> list[_Hop]:
        hops = []
        for op in sorted(self.app.operators.values(), key=lambda o: o.index):
            for port in op.output_ports:
                for ref in port.connections:
                    dst = self.app.operators.get(ref.oper_index)
                    if dst is not None and ref.kind == "input" and dst.input_port(ref.port_index) is not None:
                        hops.append(_Hop(op.index, port.index, dst.index, ref.port_index, ()))  # most of them
                        continue
                    for target, target_port, entered in self.targets(
                        ref.oper_index, ref.port_index, ref.kind, ()
                    ):
                        hops.append(_Hop(op.index, port.index, target, target_port, entered))
        return hops


def _region_chain(
    app: Application, op: Operator, by_oper: Mapping[int, AdlParallelRegion]
) -> list[AdlParallelRegion]:
    """Regions enclosing ``op``, outermost first (``by_oper``: the regions by operator index)."""
    chain = [by_oper[op.index]] if op.index in by_oper else []
    comp: int | None = op.composite
    while comp is not None:
        if comp in by_oper:
            chain.append(by_oper[comp])
        comp = app.composites[comp].parent
    return list(reversed(chain))


def _check_size(
    chains: Mapping[int, list[AdlParallelRegion]], hops: list[_Hop], widths: Mapping[int, int]
) -> None:
    """Refuse, before anything is expanded, a plan too big to hold: a nested region of more than
    MAX_WIDTH channels (the widths of the regions enclosing it multiply its own), or more than
    MAX_CONNECTIONS connections (counted as `_hop_edges` makes them)."""
    channels: dict[int, int] = {}
    for op, chain in chains.items():
        channels[op] = 1
        for depth, region in enumerate(chain):
            channels[op] *= widths[region.index]
            if channels[op] > MAX_WIDTH and depth:
                outer = " * ".join(f"{r.name} ({widths[r.index]})" for r in chain[: depth + 1])
                raise TopologyError(
                    f"parallel region {region.name} would have {channels[op]} channels ({outer}): at "
                    f"most {MAX_WIDTH}; lower the widths of the nested regions"
                )
    connections = 0
    for hop in hops:
        src, dst = chains.get(hop.src), chains.get(hop.dst)
        if src == [] and dst == []:  # one node each end (most connections)
            connections += 1
        elif src is not None and dst is not None:
            # every producer feeds the consumers of its own channels in the regions both are in
            shared = {r.index for r in src} & {r.index for r in dst} if src and dst else set()
            connections += channels[hop.src] * channels[hop.dst] // math.prod(widths[r] for r in shared)
    if connections > MAX_CONNECTIONS:
        raise TopologyError(
            f"the application would have {connections:,} connections at these widths, more than the "
            f"{MAX_CONNECTIONS:,} a plan may have (adjacent parallel regions connect every channel of one "
            f"to every channel of the other): lower the parallel widths"
        )


def _path(app: Application, op: Operator) -> list[tuple[int, str]]:
    """The components of ``op``'s physical name, outermost first: (operator or composite index,
    last ``.``-segment of its ADL name)."""
    parts: list[tuple[int, str]] = [(op.index, op.name)]
    comp: int | None = op.composite
    while comp is not None and comp != app.main_composite and app.composites[comp].parent is not None:
        parts.append((comp, app.composites[comp].name))
        comp = app.composites[comp].parent
    return [(index, full[full.rfind(".") + 1 :]) for index, full in reversed(parts)]


def _name(path: list[tuple[int, str]], chain_channels: dict[int, int]) -> str:
    """Physical name: path components with ``[global channel]`` after parallel operators."""
    return ".".join(
        f"{last}[{chain_channels[index]}]" if index in chain_channels else last for index, last in path
    )


def _channels(
    chain: list[AdlParallelRegion], locals_: tuple[int, ...], widths: Mapping[int, int]
) -> tuple[Channel, ...]:
    out = []
    for depth, region in enumerate(chain):
        # global channel of this region: its local channel, then outer ones scaled (innermost first)
        g, scale, gmax = 0, 1, 1
        for d in range(depth, -1, -1):
            w = widths[chain[d].index]
            g += locals_[d] * scale
            scale *= w
            gmax *= w
        out.append(Channel(region.index, locals_[depth], widths[region.index], g, gmax))
    return tuple(out)


class _Threading:
    """The ``@threading`` model in force for an operator: its own, else its nearest composite's
    (each composite's looked up once, not once per operator inside it)."""

    def __init__(self, app: Application) -> None:
        self.app = app
        self.of_composite: dict[int, Annotation | None] = {}

    def model(self, op: Operator) -> str | None:
        found = op.annotation("threading")
        if found is None:
            found = self._composite(op.composite)
        return found.get("model") if found else None

    def _composite(self, index: int | None) -> Annotation | None:
        if index is None:
            return None
        if index not in self.of_composite:
            comp = self.app.composites[index]
            own = next((a for a in comp.annotations if a.tag == "threading"), None)
            self.of_composite[index] = own if own is not None else self._composite(comp.parent)
        return self.of_composite[index]


def _consistent_region(op: Operator) -> int | None:
    entry = op.annotation("consistentRegionEntry")
    index = entry.get("index") if entry else None
    return int(index) if index is not None else None


class _ReplicaPools:
    """Host pools replicated per channel (``replicateHostTag``): ``<pool>_<region>_<channel>``.

    A replica keeps its index once created, so rebuilding after a width change does not renumber
    the pools of channels that survive.
    """

    def __init__(
        self, app: Application, previous: dict[tuple[int, int, int], AdlHostPool] | None = None
    ) -> None:
        self.app = app
        self.replicas: dict[tuple[int, int, int], AdlHostPool] = dict(previous or {})
        self.by_index = {p.index: p for p in app.hostpools} | {p.index: p for p in self.replicas.values()}

    def place(
        self, pool_index: int | None, chain: list[AdlParallelRegion], channels: tuple[Channel, ...]
    ) -> int | None:
        for region, channel in zip(chain, channels, strict=True):
            pool = self.by_index.get(pool_index) if pool_index is not None else None
            if pool is None or not set(region.replicate_host_tags) & set(pool.tags):
                continue
            key = (pool.index, region.index, channel.global_)
            if key not in self.replicas:
                index = max(self.by_index) + 1
                replicated = set(region.replicate_host_tags)
                self.replicas[key] = AdlHostPool(
                    index=index,
                    name=f"{pool.name}_{region.index}_{channel.global_}",
                    exclusive=pool.exclusive,
                    size=pool.size,
                    hosts=pool.hosts,
                    tags=tuple(f"{t}_{channel.global_}" if t in replicated else t for t in pool.tags),
                )
                self.by_index[index] = self.replicas[key]
            pool_index = self.replicas[key].index
        return pool_index

    def all(self) -> tuple[AdlHostPool, ...]:
        return tuple(sorted(self.by_index.values(), key=lambda p: p.index))


class _Indexer:
    """Node indices: channel 0 keeps the ADL index; replicas and new nodes go above every index seen.

    On a rebuild, a name that existed keeps its index, and indices of removed nodes are never reused.
    """

    def __init__(self, ceiling: int, previous_names: Mapping[str, int]) -> None:
        self.previous = previous_names
        self.taken: set[int] = set(previous_names.values())
        self.next = ceiling + 1

    def index(self, op: Operator, name: str, channel_zero: bool) -> int:
        if name in self.previous:
            return self.previous[name]
        if channel_zero and op.index not in self.taken:
            index = op.index
        else:
            while self.next in self.taken:
                self.next += 1
            index = self.next
        self.taken.add(index)
        return index


def _replicate(
    app: Application,
    op: Operator,
    chain: list[AdlParallelRegion],
    widths: Mapping[int, int],
    indexer: _Indexer,
    pools: _ReplicaPools,
    threads: _Threading,
) -> list[Node]:
    # What is the same for every replica is worked out once; a constraint without a channel
    # intrinsic is shared as it is (they are immutable), not copied per replica.
    path = _path(app, op)
    region, threading = _consistent_region(op), threads.model(op)
    p, q = op.placement, op.partitions
    p_fixed, q_fixed = _fixed_placement(p), _fixed_partitions(q)
    if not chain and p_fixed and q_fixed:  # most operators: one node, nothing to name or substitute
        name = ".".join(last for _, last in path)
        index = indexer.index(op, name, True)
        return [Node(index, name, op, (), p, q, region, threading)]
    out = []
    for locals_ in itertools.product(*(range(widths[r.index]) for r in chain)):
        channels = _channels(chain, locals_, widths)
        name = _name(path, {r.oper_index: c.global_ for r, c in zip(chain, channels, strict=True)})
        pool = pools.place(p.pool_index, chain, channels)
        out.append(
            Node(
                index=indexer.index(op, name, not any(locals_)),
                name=name,
                operator=op,
                channels=channels,
                placement=p
                if p_fixed and pool == p.pool_index
                else HostPlacement(
                    pool_index=pool,
                    host=_substitute(p.host, channels) if p.host else None,
                    inpool_index=p.inpool_index,
                    colocations=_sub_all(p.colocations, channels),
                    exlocations=_sub_all(p.exlocations, channels),
                    isolation=p.isolation,
                ),
                partitions=q
                if q_fixed
                else Partitions(
                    colocations=_sub_all(q.colocations, channels),
                    exlocations=_sub_all(q.exlocations, channels),
                    isolation=q.isolation,
                ),
                consistent_region=region,
                threading=threading,
            )
        )
    return out


def build_topology(
    app: Application,
    widths: Mapping[int, int],
    previous: Topology | None = None,
    given_values: Mapping[int, str] | None = None,
    default_threading: str | None = None,
) -> Topology:
    """Expand ``app`` with the given region widths.

    With ``previous`` (an earlier topology of the same application), only the operators inside
    regions whose width changed are rebuilt, with the connections that touch them; every other
    node and connection is reused, and surviving node names keep their index (stable re-fusion).
    """
    if previous is None:
        return _fresh(app, widths, dict(given_values or {}), default_threading)
    if previous.app is not app:
        raise TopologyError("a topology can only be rebuilt from one of the same application")
    _check_size(previous.chains, previous.hops, widths)
    changed = [r for r, w in widths.items() if previous.widths.get(r) != w]
    affected = sorted({op for r in changed for op in previous.region_ops.get(r, ())})
    names = {n.name: n.index for op in affected for n in previous.replicas[op]}
    indexer = _Indexer(previous.max_index, names)
    pools = _ReplicaPools(app, previous.replica_pools)
    threads = _Threading(app)
    replicas = dict(previous.replicas)
    nodes = dict(previous.nodes)
    for op in affected:
        for old in replicas[op]:
            del nodes[old.index]
        replicas[op] = _replicate(
            app, app.operators[op], previous.chains[op], widths, indexer, pools, threads
        )
        nodes.update((n.index, n) for n in replicas[op])
    hop_edges = list(previous.hop_edges)
    redone = sorted({i for op in affected for i in previous.op_hops.get(op, ())})
    for i in redone:
        hop_edges[i] = _hop_edges(app, previous.hops[i], replicas, previous.chains)
    topo = Topology(
        app=app,
        widths=dict(widths),
        nodes=nodes,
        edges=[e for group in hop_edges for e in group],
        replicas=replicas,
        chains=previous.chains,
        hops=previous.hops,
        hop_edges=hop_edges,
        region_ops=previous.region_ops,
        op_hops=previous.op_hops,
        max_index=max([previous.max_index] + [n.index for op in affected for n in replicas[op]]),
        hostpools=pools.all(),
        replica_pools=pools.replicas,
        given_values=previous.given_values,
        default_threading=previous.default_threading,
    )
    topo.patch_edge_index(previous, [previous.hop_edges[i] for i in redone], [hop_edges[i] for i in redone])
    return topo


def _fresh(
    app: Application, widths: Mapping[int, int], given_values: dict[int, str], default_threading: str | None
) -> Topology:
    primitives = sorted(
        (op for op in app.operators.values() if op.kind is OperatorKind.PRIMITIVE), key=lambda o: o.index
    )
    by_oper = {r.oper_index: r for r in app.parallel_regions}
    chains = {op.index: _region_chain(app, op, by_oper) for op in primitives}
    hops = _Flattener(app).hops()
    _check_size(chains, hops, widths)
    indexer = _Indexer(max(op.index for op in primitives), {})
    pools, threads = _ReplicaPools(app), _Threading(app)
    replicas = {
        op.index: _replicate(app, op, chains[op.index], widths, indexer, pools, threads) for op in primitives
    }
    hop_edges = [_hop_edges(app, hop, replicas, chains) for hop in hops]
    region_ops: dict[int, list[int]] = {}
    for op, chain in chains.items():
        for region in chain:
            region_ops.setdefault(region.index, []).append(op)
    op_hops: dict[int, list[int]] = {}
    for i, hop in enumerate(hops):
        op_hops.setdefault(hop.src, []).append(i)
        op_hops.setdefault(hop.dst, []).append(i)
    nodes = {n.index: n for group in replicas.values() for n in group}
    return Topology(
        app=app,
        widths=dict(widths),
        nodes=nodes,
        edges=[e for group in hop_edges for e in group],
        replicas=replicas,
        chains=chains,
        hops=hops,
        hop_edges=hop_edges,
        region_ops=region_ops,
        op_hops=op_hops,
        max_index=max(nodes),
        hostpools=pools.all(),
        replica_pools=pools.replicas,
        given_values=given_values,
        default_threading=default_threading,
    )


def _hop_edges(
    app: Application, hop: _Hop, replicas: dict[int, list[Node]], chains: dict[int, list[AdlParallelRegion]]
) -> list[Edge]:
    """The physical connections of one logical connection (imports/exports are recorded on nodes)."""
    if not chains.get(hop.src, True) and not chains.get(hop.dst, True):  # two primitives, one node each
        (src,), (dst,) = replicas[hop.src], replicas[hop.dst]
        return [Edge(src.index, hop.src_port, dst.index, hop.dst_port)]
    src_op, dst_op = app.operators[hop.src], app.operators[hop.dst]
    if src_op.kind is OperatorKind.IMPORT and dst_op.kind is OperatorKind.PRIMITIVE:
        assert src_op.import_spec is not None
        for node in replicas[hop.dst]:
            imported = (src_op.name, src_op.index, src_op.import_spec)
            node.imports[hop.dst_port] = (*node.imports.get(hop.dst_port, ()), imported)
        return []
    if dst_op.kind is OperatorKind.EXPORT and src_op.kind is OperatorKind.PRIMITIVE:
        assert dst_op.export_spec is not None
        for node in replicas[hop.src]:
            entry = (dst_op.name, dst_op.export_spec)
            node.exports[hop.src_port] = (*node.exports.get(hop.src_port, ()), entry)
        return []
    if src_op.kind is not OperatorKind.PRIMITIVE or dst_op.kind is not OperatorKind.PRIMITIVE:
        return []  # import → export passthrough carries no tuples between our PEs
    src_regions = {r.index for r in chains[hop.src]}
    shared = [r.index for r in chains[hop.dst] if r.index in src_regions]
    entered = [r for r in chains[hop.dst] if r.index not in src_regions]
    # consumers grouped by their channels in the shared regions: a producer feeds its own group
    groups: dict[tuple[int, ...], list[Node]] = {}
    for dst in replicas[hop.dst]:
        key = tuple(c.local for c in dst.channels if c.region in shared)
        groups.setdefault(key, []).append(dst)
    edges = []
    for src in replicas[hop.src]:
        key = tuple(c.local for c in src.channels if c.region in shared)
        for dst in groups.get(key, ()):
            use = None
            if entered:
                local = {c.region: c.local for c in dst.channels}
                use = SplitterUse(
                    tuple(
                        SplitterStep(r.index, _splitter_kind(r, hop), _entry_port(r, hop), local[r.index])
                        for r in entered
                    )
                )
            edges.append(Edge(src.index, hop.src_port, dst.index, hop.dst_port, use))
    return edges


def _entry_port(region: AdlParallelRegion, hop: _Hop) -> int:
    if region.oper_index == hop.dst:
        return hop.dst_port
    return next((port for comp, port in hop.entered if comp == region.oper_index), 0)


def _splitter_kind(region: AdlParallelRegion, hop: _Hop) -> SplitterKind:
    port = _entry_port(region, hop)
    return next((s.kind for s in region.splitters if s.iport_index == port), SplitterKind.ROUND_ROBIN)
