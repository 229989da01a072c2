"""The physical plan: PEs with ids, ports and AADL, the name table, and re-fusion (its diff:
`app.plan_diff`).

PE ids: at first submission, the container index (PEs ordered by their smallest node index). On
re-fusion, a PE whose sorted operator names equal those of a previous PE keeps that PE's id; the
others get fresh ids above the previous maximum, in container order. A plan numbered against the
PEs a job runs (``ids_from``, maybe at other widths) keeps them (``known_ids``) for its re-fusions.

PE ports: one input port per operator input port fed from another PE (shared by all its senders)
or by an import; one output port per operator output port feeding another PE, per splitter
channel for parallel-region fan-out, or per exported stream. Port ids are 0-based per PE, input
ports ordered by their smallest sending PE id and output ports by their smallest receiving PE
id (import/export-only ports last, ties by operator index and port).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from streams_k8s.api.spec_values import ThreadingMode
from streams_k8s.app.aadl import AadlError, pe_aadls
from streams_k8s.app.collector import collector_paused
from streams_k8s.app.fusion import Fusion, FusionConstraintError, FusionInputs, Resources, fuse_topology
from streams_k8s.app.model import Application
from streams_k8s.app.physical import PlannedPe, PortIndex, assign_ports
from streams_k8s.app.plan_regions import (
    consistent_region_pes,
    consistent_regions,
    host_pools,
    parallel_regions,
)
from streams_k8s.app.plan_streams import check_subscriptions, export_spec, import_spec
from streams_k8s.app.specs import (
    ConsistentRegionSpec,
    HostPoolSpec,
    ParallelRegionSpec,
    Placement,
    PoolLocation,
)
from streams_k8s.app.submission import (
    RegionWidth,
    SubmissionError,
    WidthOverride,
    apply_overrides,
    match_values,
    resolve_values,
    resolve_widths,
)
from streams_k8s.app.topology import Edge, Node, Topology, TopologyError, build_topology
from streams_k8s.naming.table import render_name_table

if TYPE_CHECKING:
    from streams_k8s.app.plan_diff import PlanDiff

# What planning raises for the application itself (a submission-time value or width, its topology,
# its fusion constraints, a value its AADL cannot hold): a new spec or bundle is needed.
PLANNING_ERRORS = (SubmissionError, TopologyError, FusionConstraintError, AadlError)


class Threading(Protocol):
    """The threading model a Job's spec sets (`api.job.ThreadingModel`)."""

    @property
    def mode(self) -> ThreadingMode | None: ...


def pe_signature(
    topo: Topology, pe: PlannedPe, ports: PortIndex, *, job_name: str, job_id: int
) -> tuple[object, ...]:
    """Everything a PE's AADL depends on beyond the (immutable, shared) nodes and connections.

    Nodes are compared by identity: a rebuilt topology reuses the node objects it did not touch.
    The host pools are listed in every PE's AADL, and a width change can add per-channel replicas.
    """

    def channel(e: Edge) -> tuple[int, int] | None:
        return (e.splitter.region, e.splitter.channel) if e.splitter else None

    return (
        job_name,
        job_id,
        pe.id,
        pe.index,
        topo.hostpools,
        tuple(id(topo.nodes[n]) for n in pe.nodes),
        tuple(
            (
                p.id,
                p.node,
                p.port,
                tuple((s, id(e), ports.outputs[(e.src, e.src_port, channel(e))]) for s, e in p.senders),
            )
            for p in pe.inputs
        ),
        tuple(
            (
                p.id,
                p.node,
                p.port,
                p.channel,
                p.exports,
                tuple((r, id(e), ports.inputs[(e.dst, e.dst_port)]) for r, e in p.receivers),
            )
            for p in pe.outputs
        ),
    )


@dataclass(slots=True)
class Plan:
    """What a job becomes: its PEs (with everything their children need), host pools, parallel
    and consistent regions (defaults applied), and its name table. The one place that knows the
    ADL: the job's objects are rendered from this alone."""

    job_name: str
    job_id: int
    topology: Topology
    pes: list[PlannedPe]
    notices: list[str]
    name_table: dict[str, str]
    fusion: Fusion
    fusion_inputs: FusionInputs
    host_pools: list[HostPoolSpec]
    parallel_regions: list[ParallelRegionSpec]
    consistent_regions: list[ConsistentRegionSpec]
    known_ids: Mapping[int, Sequence[str]] = field(default_factory=dict)
    fusion_target: int | None = None  # the PE count fusion was asked for (None: legacy)
    # PEs from a fusion of this topology from scratch, not a re-fusion that moved as little as it
    # could: a fresh plan of an application of the same shape fuses alike (`app.replan`)
    fused_afresh: bool = True

    @property
    def application_name(self) -> str:
        return self.topology.app.name

    @property
    def application_scope(self) -> str:
        return self.topology.app.scope

    def pe_of_node(self) -> dict[int, int]:
        return {n: pe.id for pe in self.pes for n in pe.nodes}

    def check_subscriptions(self) -> None:
        """`InvalidSubscription` for an Import operator's subscription that does not parse."""
        check_subscriptions(self.topology, self.pes)

    def name_table_text(self, stamp: str) -> str:
        """The name table file, in the order of its labels' text, dated ``stamp``."""
        return render_name_table(sorted(self.name_table.items()), stamp)


def assign_pe_ids(
    operator_sets: Sequence[Sequence[str]],
    previous: Mapping[int, Sequence[str]] | None,
    known: Mapping[int, Sequence[str]] | None = None,
) -> list[int]:
    """PE id per container (see module docs); ``known``: ids to give back after ``previous``'s
    (but for one a previous PE holds: never two PEs of one id)."""
    previous, known = previous or {}, known or {}
    if not previous and not known:
        return list(range(len(operator_sets)))
    by_key = {"".join(sorted(ops)): pe_id for pe_id, ops in known.items() if pe_id not in previous}
    by_key.update({"".join(sorted(ops)): pe_id for pe_id, ops in previous.items()})
    next_id = max([*previous, *known], default=-1) + 1
    ids = []
    for ops in operator_sets:
        pe_id = by_key.pop("".join(sorted(ops)), None)
        if pe_id is None:
            pe_id, next_id = next_id, next_id + 1
        ids.append(pe_id)
    return ids


def _placement(topo: Topology, members: list[Node], isolated_elsewhere: list[str]) -> Placement:
    placements = [n.placement for n in members]
    host = next((p.host for p in placements if p.host), None)
    pool = next(
        (
            p
            for p in placements
            if p.pool_index is not None
            and (pl := topo.hostpool(p.pool_index)) is not None
            and pl.name != "$default"
        ),
        None,
    )
    isolated = next((n.name for n in members if n.placement.isolation), None)
    return Placement(
        host=host,
        co_locations=sorted({c for p in placements for c in p.colocations}),
        ex_locations=sorted({c for p in placements for c in p.exlocations}),
        isolation=isolated,
        isolation_labels=[name for name in isolated_elsewhere if name != isolated],
        host_pool_location=(
            PoolLocation(pool_index=pool.pool_index or 0, inpool_index=pool.inpool_index) if pool else None
        ),
    )


def name_table(job_id: int, pes: Sequence[PlannedPe]) -> dict[str, str]:
    """Operator port label ``J.O.P`` → PE port label ``E.I@J`` for every PE input port."""
    return {f"{job_id}.{p.node}.{p.port}": f"{pe.id}.{p.id}@{job_id}" for pe in pes for p in pe.inputs}


def content_id(aadl: str) -> str:
    return hashlib.sha256(aadl.encode("utf-8")).hexdigest()


def plan_topology(
    topo: Topology,
    fusion: Fusion,
    *,
    job_name: str,
    job_id: int = 0,
    resources: Resources | None = None,
    nodes: int | None = None,
    previous: Plan | None = None,
    ids_from: Mapping[int, Sequence[str]] | None = None,
) -> Plan:
    """Fuse ``topo`` and build every PE with its ports and AADL. ``previous``: an earlier plan of
    the same topology to re-fuse from; ``ids_from``: operator names by PE id (of any application:
    an edited job's running plan, or the PEs a job runs) whose ids are kept for PEs of the same
    operators."""
    result = fuse_topology(
        topo,
        fusion,
        resources=resources,
        nodes=nodes,
        inputs=previous.fusion_inputs if previous else None,
        previous={topo_name: pe.id for pe in previous.pes for topo_name in pe.operators}
        if previous
        else None,
    )
    operator_sets = [[topo.nodes[n].name for n in pe] for pe in result.pes]
    prev = {pe.id: pe.operators for pe in previous.pes} if previous else ids_from
    known = previous.known_ids if previous else dict(ids_from or {})
    ids = assign_pe_ids(operator_sets, prev, known)
    pes = [
        PlannedPe(id=pe_id, index=i, nodes=nodes_, operators=ops)
        for i, (pe_id, nodes_, ops) in enumerate(zip(ids, result.pes, operator_sets, strict=True))
    ]
    assign_ports(topo, pes)
    ports = PortIndex.of(pes)
    rendered = {pe.signature: (pe.aadl, pe.content_id) for pe in previous.pes} if previous else {}
    isolated = sorted(n.name for n in topo.nodes.values() if n.placement.isolation)
    region_pes = consistent_region_pes(topo, pes)
    for pe in pes:
        members = [topo.nodes[n] for n in pe.nodes]
        pe.placement = _placement(topo, members, isolated)
        pe.restartable = all(n.operator.restartable for n in members)
        pe.regions = sorted({n.consistent_region for n in members if n.consistent_region is not None})
        pe.exports = [export_spec(job_id, pe, port) for port in pe.outputs if port.exports]
        pe.imports = [s for port in pe.inputs if (s := import_spec(topo, job_id, pe, port)) is not None]
        pe.signature = pe_signature(topo, pe, ports, job_name=job_name, job_id=job_id)
        if pe.signature in rendered:
            pe.aadl, pe.content_id = rendered[pe.signature]
    unrendered = [pe for pe in pes if pe.signature not in rendered]
    aadls = pe_aadls(topo, unrendered, ports, job_name=job_name, job_id=job_id)
    for pe, aadl in zip(unrendered, aadls, strict=True):
        pe.aadl, pe.content_id = aadl, content_id(aadl)
    pes.sort(key=lambda p: p.id)
    return Plan(
        job_name=job_name,
        job_id=job_id,
        topology=topo,
        pes=pes,
        notices=result.notices,
        name_table=name_table(job_id, pes),
        fusion=fusion,
        fusion_inputs=result.inputs,
        host_pools=host_pools(topo),
        parallel_regions=parallel_regions(topo),
        consistent_regions=consistent_regions(topo, region_pes),
        known_ids=known,
        fusion_target=result.target,
        fused_afresh=previous is None,
    )


@collector_paused()
def plan_application(
    app: Application,
    fusion: Fusion,
    *,
    job_name: str,
    job_id: int = 0,
    submission_values: Mapping[str, str] | None = None,
    widths: Sequence[RegionWidth] = (),
    resources: Resources | None = None,
    nodes: int | None = None,
    threading: Threading | None = None,
    ids_from: Mapping[int, Sequence[str]] | None = None,
) -> Plan:
    """The whole pipeline from a parsed ADL: values, widths, topology, fusion, PEs (``ids_from``:
    see `plan_topology`)."""
    given = match_values(app, submission_values or {})
    values = resolve_values(app, submission_values or {})
    region_widths = resolve_widths(app, values, widths)
    mode = threading.mode if threading else None
    topo = build_topology(
        app, region_widths, given_values=given, default_threading=mode.value if mode else None
    )
    return plan_topology(
        topo, fusion, job_name=job_name, job_id=job_id, resources=resources, nodes=nodes, ids_from=ids_from
    )


def refuse_with_widths(
    previous: Plan,
    widths: Sequence[RegionWidth],
    *,
    resources: Resources | None = None,
    nodes: int | None = None,
) -> tuple[Plan, PlanDiff]:
    """Re-fuse after width changes; node indices and PE ids are kept where operators survive.

    This is the time-sensitive path (a resize): only what the change touches is rebuilt and
    re-rendered (with the collector paused, see `collector`).
    """
    from streams_k8s.app.plan_diff import diff_plans  # a plain plan diffs nothing: it loads no diff

    topo = previous.topology
    new_widths = apply_overrides(topo.app, topo.widths, widths)
    with collector_paused():
        new_topo = build_topology(topo.app, new_widths, topo)
        plan = plan_topology(
            new_topo,
            previous.fusion,
            job_name=previous.job_name,
            job_id=previous.job_id,
            resources=resources,
            nodes=nodes,
            previous=previous,
        )
    return plan, diff_plans(previous, plan)


def plan_at_widths(base: Plan, widths: Mapping[str, int]) -> Plan:
    """The plan of the job at these widths by alias, re-fused from ``base`` (``base`` itself
    when they are its own), so the same widths always give the same PEs whatever the history."""
    if all(base.topology.widths.get(i) == w for i, w in _by_index(base, widths).items()):
        return base
    plan, _ = refuse_with_widths(base, [WidthOverride(a, w) for a, w in widths.items()])
    return plan


def _by_index(base: Plan, widths: Mapping[str, int]) -> dict[int, int]:
    index = {r.alias: r.index for r in base.parallel_regions}
    return {index[alias]: width for alias, width in widths.items() if alias in index}
