"""A re-plan from the running plan (`app.replan`) equals a fresh plan of the new application, over
random edits of generated applications and of the real bundles, and reuses the running plan when
the edit keeps the application's shape (only the PEs of the changed operators rendered again)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repo_paths import real_adl
from streams_k8s.api.job import Fusion, ParallelRegionWidth
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.fusion import FusionConstraintError
from streams_k8s.app.model import Application
from streams_k8s.app.plan import Plan, plan_application, refuse_with_widths
from streams_k8s.app.replan import APPLICATION_ATTRIBUTES, Replan, replan
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl

FUSIONS = [Fusion(legacy=True), Fusion(manual=1), Fusion(manual=3), Fusion(manual=50), Fusion()]


def _topology(plan: Plan) -> tuple[object, ...]:
    nodes = [
        (
            n.index,
            n.name,
            n.operator,
            n.channels,
            n.placement,
            n.partitions,
            n.consistent_region,
            *(n.threading, n.imports, n.exports),
        )
        for _, n in sorted(plan.topology.nodes.items())
    ]
    return (plan.topology.app, plan.topology.widths, nodes, plan.topology.edges, plan.topology.hostpools)


def _ports(plan: Plan) -> list[object]:
    return [
        (
            [(p.id, p.node, p.port, p.senders) for p in pe.inputs],
            [(p.id, p.node, p.port, p.channel, p.exports, p.receivers) for p in pe.outputs],
        )
        for pe in plan.pes
    ]


def _contents(plan: Plan) -> tuple[object, ...]:
    """Everything a plan says, compared by value (node identities in signatures left out)."""
    pes = [
        (
            pe.id,
            pe.index,
            pe.nodes,
            pe.operators,
            pe.aadl,
            pe.content_id,
            pe.placement,
            pe.restartable,
            *(pe.regions, pe.exports, pe.imports),
        )
        for pe in plan.pes
    ]
    regions = (plan.host_pools, plan.parallel_regions, plan.consistent_regions)
    ids = (dict(plan.known_ids), plan.fusion_target, plan.fused_afresh)
    return (
        plan.job_name,
        plan.job_id,
        pes,
        _ports(plan),
        plan.notices,
        plan.name_table,
        _topology(plan),
        *regions,
        *ids,
    )


def _edit(running: Plan, app: Application, fusion: Fusion, **kwargs: Any) -> tuple[Replan, Plan]:
    """The re-plan of ``app`` from ``running`` and the fresh plan it must equal (ids kept from
    the running PEs, as an edit keeps them)."""
    ids = {pe.id: pe.operators for pe in running.pes}
    args: dict[str, Any] = {"job_name": running.job_name, "job_id": running.job_id, "ids_from": ids, **kwargs}
    return replan(running, app, fusion, **args), plan_application(app, fusion, **args)


def _rendered_only_changed(result: Replan, running: Plan) -> None:
    """The PEs not rendered again are the running ones, content and all."""
    before = {pe.id: pe.content_id for pe in running.pes}
    for pe in result.plan.pes:
        if pe.id not in result.rendered:
            assert pe.content_id == before[pe.id]


SHAPES = st.builds(
    SyntheticSpec,
    chains=st.integers(1, 4),
    length=st.integers(1, 5),
    fan_in=st.booleans(),
    regions=st.integers(0, 2),
    width=st.integers(1, 3),
    pools=st.integers(0, 2),
    colocate_pairs=st.booleans(),
    exlocate_chain_ends=st.booleans(),
    consistent_chains=st.integers(0, 2),
    replicate_pools=st.booleans(),
)
# Edits of the shape itself: each makes a fresh plan (the fast path must not take them).
RESHAPES = st.sampled_from([{}, {"length": 1}, {"colocate_pairs": True}, {"regions": 1}, {"pools": 1}])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=SHAPES,
    fusion=st.sampled_from(FUSIONS),
    rebuilt=st.sets(st.integers(0, 25)),
    reshape=RESHAPES,
    data=st.data(),
)
def test_replan_of_a_generated_application_equals_its_fresh_plan(
    spec: SyntheticSpec, fusion: Fusion, rebuilt: set[int], reshape: dict[str, Any], data: st.DataObject
) -> None:
    before = parse_adl(synthetic_adl(spec))
    edited = dataclasses.replace(spec, rebuilt=frozenset(rebuilt), **reshape)
    after = parse_adl(synthetic_adl(edited))
    job_id = data.draw(st.sampled_from([0, 7]))
    try:
        running = plan_application(before, fusion, job_name="job", job_id=job_id)
        result, fresh = _edit(running, after, fusion)
    except FusionConstraintError:
        return  # both plans refuse it alike (`plan_application` raises for the same shapes)
    assert _contents(result.plan) == _contents(fresh)
    same_shape = dataclasses.replace(edited, rebuilt=spec.rebuilt) == spec
    assert result.reused or not same_shape  # (a reshape may leave the ADL as it was)
    if result.reused:
        _rendered_only_changed(result, running)
        changed = {i for i in rebuilt if i in before.operators and before.operators[i] != after.operators[i]}
        holding = {
            pe.id
            for pe in running.pes
            for n in pe.nodes
            if running.topology.nodes[n].operator.index in changed
        }
        assert result.rendered == holding


SETTINGS = st.fixed_dictionaries(
    {"nodes": st.sampled_from([None, 1, 3]), "width": st.sampled_from([None, 1, 3])}
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rebuilt=st.sets(st.integers(0, 12)),
    fusion=st.sampled_from([Fusion(), Fusion(manual=4)]),
    before=SETTINGS,
    after=SETTINGS,
)
def test_replan_with_other_settings_equals_its_fresh_plan(
    rebuilt: set[int], fusion: Fusion, before: dict[str, Any], after: dict[str, Any]
) -> None:
    """The node count (automatic fusion's PE count) and a region's width set by the edit: reused
    only when the fresh plan would fuse alike."""
    spec = SyntheticSpec(chains=3, length=4, regions=1, width=2)
    app = parse_adl(synthetic_adl(spec))
    edited = parse_adl(synthetic_adl(dataclasses.replace(spec, rebuilt=frozenset(rebuilt))))
    alias = plan_application(app, fusion, job_name="job").parallel_regions[0].alias

    def settings_of(given: dict[str, Any]) -> dict[str, Any]:
        widths = [] if given["width"] is None else [ParallelRegionWidth(alias=alias, width=given["width"])]
        return {"nodes": given["nodes"], "widths": widths}

    running = plan_application(app, fusion, job_name="job", **settings_of(before))
    result, fresh = _edit(running, edited, fusion, **settings_of(after))
    assert _contents(result.plan) == _contents(fresh)
    if before == after:
        assert result.reused


@settings(max_examples=25, deadline=None)
@given(rebuilt=st.sets(st.integers(0, 12), min_size=1), widths=st.sampled_from([(1, 3), (3, 2)]))
def test_replan_after_a_width_change_equals_its_fresh_plan(
    rebuilt: set[int], widths: tuple[int, int]
) -> None:
    """A running plan re-fused to other widths is fused otherwise than a fresh plan: not reused."""
    spec = SyntheticSpec(chains=3, length=4, regions=2, width=2)
    before, fusion = parse_adl(synthetic_adl(spec)), Fusion(manual=6)
    after = parse_adl(synthetic_adl(dataclasses.replace(spec, rebuilt=frozenset(rebuilt))))
    applied = plan_application(before, fusion, job_name="job")
    overrides = [
        ParallelRegionWidth(alias=r.alias, width=w)
        for r, w in zip(applied.parallel_regions, widths, strict=True)
    ]
    running, _ = refuse_with_widths(applied, overrides)
    result, fresh = _edit(running, after, fusion, widths=overrides)
    assert not result.reused
    assert _contents(result.plan) == _contents(fresh)


def test_replan_of_an_unchanged_application_renders_nothing() -> None:
    app = parse_adl(synthetic_adl(SyntheticSpec(chains=3, length=4, regions=1)))
    running = plan_application(app, Fusion(manual=5), job_name="job", job_id=3)
    result, fresh = _edit(
        running, parse_adl(synthetic_adl(SyntheticSpec(chains=3, length=4, regions=1))), Fusion(manual=5)
    )
    assert result.reused
    assert result.rendered == frozenset()
    assert _contents(result.plan) == _contents(fresh)


def test_replan_with_another_fusion_or_job_id_plans_afresh() -> None:
    app = parse_adl(synthetic_adl(SyntheticSpec(chains=3, length=4)))
    running = plan_application(app, Fusion(manual=5), job_name="job", job_id=3)
    for fusion, job_id in ((Fusion(manual=4), 3), (Fusion(manual=5), 4)):
        result = replan(running, app, fusion, job_name="job", job_id=job_id)
        assert not result.reused
        assert _contents(result.plan) == _contents(
            plan_application(app, fusion, job_name="job", job_id=job_id)
        )


def test_every_application_attribute_but_its_operators_is_compared() -> None:
    """A new attribute of the native model must join `APPLICATION_ATTRIBUTES` (else an edit of it
    would be taken as one that keeps the shape)."""
    descriptors = ("member_descriptor", "getset_descriptor")  # the native class's attributes
    properties = {name for name, value in vars(Application).items() if type(value).__name__ in descriptors}
    assert properties - {"operators"} == set(APPLICATION_ATTRIBUTES)


REAL = [
    "apps.parallel.Parallel.sab",
    "apps.consistent.ConsistentRegion.sab",
    "apps.hostplacement.HostPlacement_nodename.sab",
    "apps.hostpools.HostPools.sab",
    "apps.pubsub.Exporter.sab",
    "apps.pubsub.Importer.sab",
    "spl.runtime.udpNestedPEBoundary.adl",
]
# Edits of a real ADL's operators by text: (pattern, replacement), what only the AADL reads
# (a new build, a runtime constant, the trace level) and what fusion reads (a colocation id).
CODE_EDITS = [
    (r"<uri>([^<]*)</uri>", r"<uri>\1.rebuilt</uri>"),
    (r'(<runtimeConstant name="[^"]*" value=")([^"]*)"', r'\g<1>\g<2>1"'),
    (r'<tracing level="[^"]*"/>', '<tracing level="debug"/>'),
]
SHAPE_EDITS = [(r'colocId="([^"]*)"', r'colocId="\1x"')]


def _edited(adl: str, pattern: str, replacement: str, which: set[int]) -> str:
    count = iter(range(10**6))
    return re.sub(pattern, lambda m: m.expand(replacement) if next(count) in which else m.group(0), adl)


@pytest.mark.parametrize("name", REAL)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(CODE_EDITS + SHAPE_EDITS), st.sets(st.integers(0, 12))), max_size=3
    ),
    fusion=st.sampled_from(FUSIONS),
)
def test_replan_of_a_real_bundle_equals_its_fresh_plan(
    name: str, edits: list[tuple[tuple[str, str], set[int]]], fusion: Fusion
) -> None:
    adl = real_adl(name).decode()
    before = parse_adl(adl.encode())
    for (pattern, replacement), which in edits:
        adl = _edited(adl, pattern, replacement, which)
    after = parse_adl(adl.encode())
    try:
        running = plan_application(before, fusion, job_name="job", job_id=2)
        result, fresh = _edit(running, after, fusion)
    except FusionConstraintError:
        return
    assert _contents(result.plan) == _contents(fresh)
    if result.reused:
        _rendered_only_changed(result, running)
    shape_kept = all(edit in CODE_EDITS or not which for edit, which in edits)
    assert result.reused or not shape_kept
