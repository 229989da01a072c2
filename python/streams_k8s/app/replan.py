"""A re-plan that starts from the running plan: an edit plans, renders and diffs only what it touches.

`replan(running, app, ...)` returns what `plan_application(app, ...)` returns (the same PEs, ids,
ports, placement, AADL and regions: tests/test_app_replan.py holds the two equal over random edits),
made from ``running`` when the edit keeps the application's *shape*:

- every application attribute but its operators is equal (composites, connections through them,
  host pools, regions, types, definitions, toolkits, directories, version);
- every operator keeps its index, kind and every field the topology, fusion, ports, placement and
  regions read (`_shape`); only what the AADL alone reads may differ (its shared object, wrapper,
  runtime constants, environment, checkpointing, tracing, ...);
- the job's name and id, the resolved widths, the given submission-time values, the threading
  default, the fusion and the PE count it asks for are the running plan's, and that plan was fused
  from scratch (a width change's re-fusion moves as little as it can: a fresh plan may differ);
- the PE ids a fresh plan would give (`assign_pe_ids` with ``ids_from``) are the running ones.

Then the fresh plan's topology is the running one with the changed operators' nodes made again
(same index, name, channels, placement, partitions, imports, exports), its fusion is the running
one (the partitioner reads the same specs and edges and asks for the same count), and so are its
ports, PE ids, placement, name table and regions: only the PEs holding a changed operator get a
new signature and are rendered again. Otherwise the new application is planned from scratch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streams_k8s.app.aadl import pe_aadls
from streams_k8s.app.collector import collector_paused
from streams_k8s.app.fusion import Fusion, Resources, target_pe_count
from streams_k8s.app.model import Application, Operator, OperatorKind
from streams_k8s.app.physical import PlannedPe, PortIndex
from streams_k8s.app.plan import Plan, Threading, assign_pe_ids, content_id, pe_signature, plan_topology
from streams_k8s.app.submission import RegionWidth, match_values, resolve_values, resolve_widths
from streams_k8s.app.topology import Topology, build_topology

# Every attribute of an application but its operators (tests/test_app_replan.py checks that the
# list names them all): an edit that changes one is planned from scratch.
APPLICATION_ATTRIBUTES = (
    "name",
    "scope",
    "version",
    "build_id",
    "bundle",
    "product_version",
    "application_directory",
    "output_directory",
    "data_directory",
    "checkpoint_directory",
    "avoid_runtime_yield",
    "adl_version",
    "main_composite",
    "composites",
    "composite_kinds",
    "hostpools",
    "tuple_types",
    "definitions",
    "toolkits",
    "custom_metrics",
    "parallel_regions",
    "submission_time_values",
    "consistent_regions",
)


@dataclass(frozen=True, slots=True)
class Replan:
    """A plan made from a running one: the plan, the ids of the PEs rendered again (all of them
    when planned from scratch), and whether the running topology, fusion and ports were kept."""

    plan: Plan
    rendered: frozenset[int]
    reused: bool


def _shape(op: Operator) -> tuple[object, ...]:
    """What the topology, fusion, ports, placement and regions read of an operator."""
    return (
        op.index,
        op.name,
        op.kind,
        op.composite,
        op.input_ports,
        op.output_ports,
        op.restartable,
        op.relocatable,
        op.placement,
        op.partitions,
        op.jvm_arguments,
        op.annotations,
        op.import_spec,
        op.export_spec,
    )


def changed_operators(before: Application, after: Application) -> set[int] | None:
    """Indexes of the primitive operators an edit from ``before`` to ``after`` changes, when it
    keeps the application's shape (see the module docs); None when it does not."""
    if before is after:
        return set()
    if any(getattr(before, a) != getattr(after, a) for a in APPLICATION_ATTRIBUTES):
        return None
    old, new = before.operators, after.operators
    if old.keys() != new.keys():
        return None
    changed = {i for i, op in new.items() if op != old[i]}
    for i in changed:
        if new[i].kind is not OperatorKind.PRIMITIVE or _shape(old[i]) != _shape(new[i]):
            return None
    return changed


def _retargeted(topo: Topology, app: Application, changed: set[int]) -> Topology:
    """``topo`` as a fresh topology of ``app`` would be, the nodes of ``changed`` made again."""
    replicas, nodes = dict(topo.replicas), dict(topo.nodes)
    for op in changed:
        operator = app.operators[op]
        replicas[op] = [
            dataclasses.replace(n, operator=operator, imports=dict(n.imports), exports=dict(n.exports))
            for n in topo.replicas[op]
        ]
        nodes.update((n.index, n) for n in replicas[op])
    fields = {f.name: getattr(topo, f.name) for f in dataclasses.fields(topo) if not f.name.startswith("_")}
    retargeted = Topology(**{**fields, "app": app, "nodes": nodes, "replicas": replicas})
    retargeted.patch_edge_index(topo, [], [])
    return retargeted


def _reusable(
    running: Plan,
    fusion: Fusion,
    pe_count: int | None,
    names: tuple[str, int],
    ids_from: Mapping[int, Sequence[str]] | None,
) -> bool:
    """Whether a fresh plan of the running topology made again fuses, numbers and names its PEs
    as ``running`` does (``pe_count``: what ``fusion`` asks for now; ``names``: the job's)."""
    old = running.fusion
    if not running.fused_afresh or (running.job_name, running.job_id) != names:
        return False
    if (old.mode, old.manual, old.type) != (fusion.mode, fusion.manual, fusion.type):
        return False
    if running.fusion_target != pe_count:
        return False
    containers = sorted(running.pes, key=lambda p: p.index)
    return assign_pe_ids([pe.operators for pe in containers], ids_from, ids_from) == [
        pe.id for pe in containers
    ]


@collector_paused()
def replan(
    running: Plan,
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
) -> Replan:
    """The plan `plan_application` makes of ``app`` with these arguments, made from ``running``
    (the plan of the job as it runs) where the edit keeps its shape (see the module docs)."""
    given = match_values(app, submission_values or {})
    region_widths = resolve_widths(app, resolve_values(app, submission_values or {}), widths)
    mode = threading.mode.value if threading and threading.mode else None
    topo = running.topology
    changed = changed_operators(topo.app, app)
    if (
        changed is not None
        and (topo.widths, topo.given_values, topo.default_threading) == (region_widths, given, mode)
        and _reusable(
            running, fusion, target_pe_count(topo, fusion, resources, nodes), (job_name, job_id), ids_from
        )
    ):
        return _kept_shape(running, app, fusion, changed, ids_from)
    fresh = build_topology(app, region_widths, given_values=given, default_threading=mode)
    plan = plan_topology(
        fresh, fusion, job_name=job_name, job_id=job_id, resources=resources, nodes=nodes, ids_from=ids_from
    )
    return Replan(plan, frozenset(pe.id for pe in plan.pes), reused=False)


def _kept_shape(
    running: Plan,
    app: Application,
    fusion: Fusion,
    changed: set[int],
    ids_from: Mapping[int, Sequence[str]] | None,
) -> Replan:
    """``running`` with the PEs of the ``changed`` operators' nodes rendered again for ``app``."""
    topo = _retargeted(running.topology, app, changed)
    remade = {n.index for op in changed for n in topo.replicas[op]}
    pes: list[PlannedPe] = []
    touched: list[PlannedPe] = []
    for pe in running.pes:
        if remade.isdisjoint(pe.nodes):
            pes.append(pe)
        else:
            touched.append(dataclasses.replace(pe))
            pes.append(touched[-1])
    ports = PortIndex.of(pes)
    for pe in touched:
        pe.signature = pe_signature(topo, pe, ports, job_name=running.job_name, job_id=running.job_id)
    aadls = pe_aadls(topo, touched, ports, job_name=running.job_name, job_id=running.job_id)
    for pe, aadl in zip(touched, aadls, strict=True):
        pe.aadl, pe.content_id = aadl, content_id(aadl)
    plan = dataclasses.replace(
        running,
        topology=topo,
        pes=pes,
        notices=list(running.notices),
        name_table=dict(running.name_table),
        fusion=fusion,
        host_pools=list(running.host_pools),
        parallel_regions=list(running.parallel_regions),
        consistent_regions=list(running.consistent_regions),
        known_ids=dict(ids_from or {}),
    )
    return Replan(plan, frozenset(pe.id for pe in touched), reused=True)
