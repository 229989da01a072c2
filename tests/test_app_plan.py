"""Plans: real bundles and generated applications fuse correctly, AADL validates, tables round-trip."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from repo_paths import real_adl, shared_testdata
from streams_k8s._native import parse_properties
from streams_k8s.api.job import Fusion, ParallelRegionWidth
from streams_k8s.api.spec_values import FusionType
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.fusion import FusionConstraintError, host_spec
from streams_k8s.app.model import Application
from streams_k8s.app.plan import Plan, assign_pe_ids, plan_application, refuse_with_widths
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl


@pytest.fixture(scope="module")
def schema() -> etree.XMLSchema:
    return etree.XMLSchema(
        etree.parse(str(shared_testdata("schema", "SAM", "augmentedApplicationModel.xsd")))
    )


def _real(name: str) -> Application:
    return parse_adl(real_adl(name))


def _check(plan: Plan, schema: etree.XMLSchema | None = None) -> None:
    """Every node in exactly one PE; AADL valid; name table parses back to the same mapping."""
    seen = [n for pe in plan.pes for n in pe.nodes]
    assert sorted(seen) == sorted(plan.topology.nodes)
    if schema is not None:
        for pe in plan.pes:
            assert schema.validate(etree.fromstring(pe.aadl.encode())), schema.error_log.last_error
    text = plan.name_table_text("Sat Nov 21 10:00:00 UTC 2026")
    assert parse_properties(text) == plan.name_table


def _pe(plan: Plan, name: str) -> int:
    return next(pe.id for pe in plan.pes if name in pe.operators)


REAL = [
    "apps.parallel.Parallel.sab",
    "apps.consistent.ConsistentRegion.sab",
    "apps.hostplacement.HostPlacement_nodename.sab",
    "apps.hostpools.HostPools.sab",
    "apps.pubsub.Exporter.sab",
    "apps.pubsub.Importer.sab",
    "spl.runtime.udpNestedPEBoundary.adl",
]


@pytest.mark.parametrize("name", REAL)
@pytest.mark.parametrize("fusion", [Fusion(legacy=True), Fusion(manual=1), Fusion(manual=3), Fusion()])
def test_every_real_bundle_plans(name: str, fusion: Fusion, schema: etree.XMLSchema) -> None:
    _check(plan_application(_real(name), fusion, job_name="j", job_id=3), schema)


def test_legacy_is_one_pe_per_operator_without_colocation() -> None:
    for name in ("apps.parallel.Parallel.sab", "apps.hostpools.HostPools.sab", "apps.pubsub.Exporter.sab"):
        plan = plan_application(_real(name), Fusion(legacy=True), job_name="j")
        assert len(plan.pes) == len(plan.topology.nodes)
    parallel = plan_application(
        _real("apps.parallel.Parallel.sab"),
        Fusion(legacy=True),
        job_name="j",
        widths=[ParallelRegionWidth(alias="*", width=2)],
    )
    assert len(parallel.pes) == 8


def test_manual_gives_n_pes_where_constraints_allow() -> None:
    app = _real("apps.parallel.Parallel.sab")
    plan = plan_application(
        app, Fusion(manual=5), job_name="j", widths=[ParallelRegionWidth(alias="*", width=2)]
    )
    assert len(plan.pes) == 5
    assert plan.notices == []


def test_host_placement_needs_two_pes_and_says_why() -> None:
    plan = plan_application(
        _real("apps.hostplacement.HostPlacement_nodename.sab"), Fusion(manual=1), job_name="j"
    )
    assert len(plan.pes) == 2
    assert plan.notices == [
        "2 PEs instead of the 1 asked for: Source and Sink cannot share a PE (host placement)"
    ]


def test_consistent_region_is_never_fused_with_outsiders() -> None:
    plan = plan_application(_real("apps.consistent.ConsistentRegion.sab"), Fusion(manual=1), job_name="j")
    members = {"Beat", "Marker", "WriteA"}
    for pe in plan.pes:
        assert set(pe.operators) <= members or not set(pe.operators) & members


def test_host_pools_are_respected() -> None:
    app = _real("apps.hostpools.HostPools.sab")
    plan = plan_application(app, Fusion(manual=1), job_name="j")
    for pe in plan.pes:
        specs = {host_spec(plan.topology, plan.topology.nodes[n]) for n in pe.nodes}
        assert len(specs) == 1, pe.operators
    assert _pe(plan, "Src") != _pe(plan, "Mid0") != _pe(plan, "Snk")


def test_refusion_matches_the_original_width_change_outcome() -> None:
    """Legacy, widths 2/5/4, Region1 → 10: the original's ParallelRegionsTest expectations."""
    app = _real("apps.parallel.Parallel.sab")
    values = {"width1": "2", "width2": "5", "width3": "4"}
    before = plan_application(app, Fusion(legacy=True), job_name="j", submission_values=values)
    _, diff = refuse_with_widths(before, [ParallelRegionWidth(alias="Result.Region1", width=10)])
    assert diff.kept == [1, 4, 10, 11, 12]
    assert list(diff.replaced) == [0, 2, 3, 5, 6, 7, 8, 9]
    assert diff.updated == []
    assert diff.added == list(range(13, 21))
    assert diff.removed == []
    _, diff2 = refuse_with_widths(before, [ParallelRegionWidth(alias="Result.Region3", width=2)])
    assert diff2.removed == [11, 12]


def test_unsatisfiable_constraints_name_the_operators() -> None:
    adl = synthetic_adl(SyntheticSpec(chains=1, length=4, colocate_pairs=True, exlocate_chain_ends=True))
    app = parse_adl(adl)
    # C0_0 and C0_1 are colocated; make C0_1 exlocated with C0_0 by giving both ends of a pair
    adl2 = adl.replace(b'<coLocation colocId="co_0_2"/>', b'<coLocation colocId="co_0_0"/>')
    adl2 = adl2.replace(b'<coLocation colocId="co_0_2"/>', b'<coLocation colocId="co_0_0"/>')
    with pytest.raises(FusionConstraintError, match=r"operators C0_0 and C0_3 must be fused together"):
        plan_application(parse_adl(adl2), Fusion(legacy=True), job_name="j")
    assert app.name == "synthetic::App"


def test_fusion_types() -> None:
    app = parse_adl(synthetic_adl(SyntheticSpec(chains=2, length=3, regions=2, width=3)))
    iso = plan_application(app, Fusion(manual=1, type=FusionType.CHANNEL_ISOLATION), job_name="j")
    for pe in iso.pes:
        channels = {plan_node.channel_key for plan_node in (iso.topology.nodes[n] for n in pe.nodes)}
        assert len(channels) == 1
    exl = plan_application(app, Fusion(manual=1, type=FusionType.CHANNEL_EXLOCATION), job_name="j")
    for pe in exl.pes:
        channels = {k for k in (exl.topology.nodes[n].channel_key for n in pe.nodes) if k}
        assert len(channels) <= 1


specs = st.builds(
    SyntheticSpec,
    chains=st.integers(1, 5),
    length=st.integers(1, 6),
    fan_in=st.booleans(),
    regions=st.integers(0, 3),
    width=st.integers(1, 3),
    pools=st.integers(0, 2),
    colocate_pairs=st.booleans(),
    isolate_heads=st.integers(0, 2),
    consistent_chains=st.integers(0, 2),
    replicate_pools=st.booleans(),
)


@settings(max_examples=40, deadline=None)
@given(spec=specs, n=st.integers(1, 8))
def test_generated_applications_fuse_within_constraints(spec: SyntheticSpec, n: int) -> None:
    app = parse_adl(synthetic_adl(spec))
    plan = plan_application(app, Fusion(manual=n), job_name="j")
    _check(plan)
    topo = plan.topology
    for pe in plan.pes:
        nodes = [topo.nodes[i] for i in pe.nodes]
        assert len({host_spec(topo, x) for x in nodes}) == 1
        assert len({x.consistent_region for x in nodes}) == 1
        if any(x.partitions.isolation for x in nodes):
            assert len(nodes) == 1
        colocs = [c for x in nodes for c in x.partitions.colocations]
        for x in topo.nodes.values():
            if set(x.partitions.colocations) & set(colocs):
                assert x.index in pe.nodes
    again = plan_application(app, Fusion(manual=n), job_name="j")
    assert [(p.id, p.nodes, p.content_id) for p in again.pes] == [
        (p.id, p.nodes, p.content_id) for p in plan.pes
    ]
    if app.parallel_regions:
        after, _ = refuse_with_widths(
            plan, [ParallelRegionWidth(alias=app.parallel_regions[0].name, width=spec.width + 1)]
        )
        before_sets = {frozenset(p.operators): p.id for p in plan.pes}
        for pe in after.pes:
            if frozenset(pe.operators) in before_sets:
                assert before_sets[frozenset(pe.operators)] == pe.id
        _check(after)


def test_generated_aadl_validates(schema: etree.XMLSchema) -> None:
    spec = SyntheticSpec(
        chains=3, length=4, regions=2, width=3, pools=2, colocate_pairs=True, consistent_chains=1
    )
    _check(plan_application(parse_adl(synthetic_adl(spec)), Fusion(manual=4), job_name="j"), schema)


def test_incremental_refusion_renders_what_a_full_render_would() -> None:
    from streams_k8s.app.aadl import pe_aadls
    from streams_k8s.app.physical import PortIndex

    spec = SyntheticSpec(chains=6, length=8, regions=3, width=2, pools=2, colocate_pairs=True)
    app = parse_adl(synthetic_adl(spec))
    before = plan_application(app, Fusion(manual=5), job_name="j", job_id=1)
    for width in (4, 1, 3):
        after, diff = refuse_with_widths(
            before, [ParallelRegionWidth(alias=app.parallel_regions[1].name, width=width)]
        )
        _check(after)
        ports = PortIndex.of(after.pes)
        rendered = pe_aadls(after.topology, after.pes, ports, job_name="j", job_id=1)
        assert rendered == [pe.aadl for pe in after.pes]
        # PEs away from the resized region keep their id and content
        assert diff.kept


def test_automatic_pe_count_follows_threads_cpu_and_nodes() -> None:
    from streams_k8s.api.base import ResourceRequirements
    from streams_k8s.app.fusion import target_pe_count, thread_counts

    # 3 chains fanning out from 1 source: the one source is the only thread the app must have
    app = parse_adl(synthetic_adl(SyntheticSpec(chains=3, length=10)))
    plan = plan_application(app, Fusion(legacy=True), job_name="j")
    assert thread_counts(plan.topology) == (1, 32)
    small = ResourceRequirements(requests={"cpu": "100m"})  # one busy thread needs 10 such PEs
    assert target_pe_count(plan.topology, Fusion(), small, None) == 10
    assert target_pe_count(plan.topology, Fusion(), small, 4) == 4  # bounded by the node count
    big = ResourceRequirements(requests={"cpu": "2"}, limits={"cpu": "4"})
    assert target_pe_count(plan.topology, Fusion(), big, None) == 1
    assert len(plan_application(app, Fusion(), job_name="j", resources=small, nodes=4).pes) == 4


def test_pe_ids_come_from_the_previous_plan_then_from_the_pes_known_to_run() -> None:
    """A re-fusion keeps a previous PE's id, gives a PE the job is known to run (at other widths)
    its id back, never gives one id twice, and numbers the rest above every id it knows."""
    previous = {0: ["A"], 1: ["B", "C"], 5: ["E"]}
    known = {1: ["B", "C"], 4: ["D", "C[2]"], 5: ["F"]}  # 5 is a previous PE's: not given to F
    sets = [["C", "B"], ["C[2]", "D"], ["F"], ["A"], ["G"], ["E"]]
    assert assign_pe_ids(sets, previous, known) == [1, 4, 6, 0, 7, 5]
    assert assign_pe_ids(sets, None, None) == [0, 1, 2, 3, 4, 5]
