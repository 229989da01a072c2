"""Topology: widths from constants, submission-time values and overrides; replicas and connections."""

from __future__ import annotations

import pytest

from repo_paths import real_adl
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.model import Application
from streams_k8s.app.submission import SubmissionError, WidthOverride, resolve_values, resolve_widths
from streams_k8s.app.topology import Edge, build_topology


def _app(name: str) -> Application:
    return parse_adl(real_adl(name))


def test_parallel_widths_from_values_and_full_mesh() -> None:
    app = _app("apps.parallel.Parallel.sab")
    widths = resolve_widths(app, resolve_values(app, {"width1": "2", "apps.parallel::Work.width2": "3"}))
    assert widths == {0: 2, 1: 3, 2: 1}
    topo = build_topology(app, widths)
    assert len(topo.nodes) == 2 + 2 + 3 + 1
    names = set(topo.by_name())
    assert {"Source", "Sink", "Result.Region1[1]", "Result.Region2[2]", "Result.Region3[0]"} <= names
    # w1 + w1*w2 + w2*w3 + w3 connections: adjacent regions are full meshes
    assert len(topo.edges) == 2 + 6 + 3 + 1
    into_region2 = [e for e in topo.edges if e.splitter and e.splitter.region == 1]
    assert sorted(e.splitter.channel for e in into_region2 if e.splitter) == [0, 0, 1, 1, 2, 2]


def test_overrides_with_patterns_last_match_wins() -> None:
    app = _app("apps.parallel.Parallel.sab")
    overrides = [WidthOverride("Result.*", 4), WidthOverride("*Region3", 2)]
    assert resolve_widths(app, resolve_values(app, {}), overrides) == {0: 4, 1: 4, 2: 2}
    with pytest.raises(SubmissionError, match="no parallel region matches alias 'Nope'"):
        resolve_widths(app, resolve_values(app, {}), [WidthOverride("Nope", 2)])


def test_submission_value_errors() -> None:
    app = _app("apps.parallel.Parallel.sab")
    with pytest.raises(SubmissionError, match="unknown submission-time value 'widthX'"):
        resolve_values(app, {"widthX": "1"})
    with pytest.raises(SubmissionError, match="is not an integer"):
        resolve_widths(app, resolve_values(app, {"width1": "two"}))
    with pytest.raises(SubmissionError, match="below 1"):
        resolve_widths(app, resolve_values(app, {"width1": "0"}))


def test_nested_regions_multiply_and_are_named_by_global_channel() -> None:
    app = _app("spl.runtime.udpNestedPEBoundary.adl")
    topo = build_topology(app, resolve_widths(app, {}))
    assert len(topo.nodes) == 3 + 2 + 2 * 4 + 2 * 4 * 3
    names = topo.by_name()
    last = names["P1[1].H2[7].F2[23]"]
    assert [(c.local, c.global_) for c in last.channels] == [(1, 1), (3, 7), (2, 23)]
    # inside a channel, replicas connect only to the same channel
    f2 = {n.index for n in topo.nodes.values() if n.operator.name == "P1.H2.F2"}
    for edge in topo.edges:
        if edge.src in f2:
            src, dst = topo.nodes[edge.src], topo.nodes[edge.dst]
            assert src.channels[:2] == dst.channels[:2]


def test_previous_indices_are_kept_on_rebuild() -> None:
    app = _app("apps.parallel.Parallel.sab")
    first = build_topology(app, {0: 2, 1: 2, 2: 2})
    before = {n.name: n.index for n in first.nodes.values()}
    second = build_topology(app, {0: 5, 1: 2, 2: 2}, first)
    after = {n.name: n.index for n in second.nodes.values()}
    assert all(after[name] == index for name, index in before.items())
    assert len(set(after.values())) == len(after)
    assert min(after[f"Result.Region1[{c}]"] for c in (2, 3, 4)) > max(before.values())
    # the incremental rebuild equals a fresh expansion with the same indices
    fresh = build_topology(app, {0: 5, 1: 2, 2: 2})
    assert {n.name for n in fresh.nodes.values()} == set(after)
    rename = {n.index: n.name for n in second.nodes.values()}
    fresh_names = {n.index: n.name for n in fresh.nodes.values()}

    def named(topo_edges: list[Edge], names: dict[int, str]) -> set[tuple[str, str]]:
        return {(names[e.src], names[e.dst]) for e in topo_edges}

    assert named(second.edges, rename) == named(fresh.edges, fresh_names)


def test_replicated_host_pools_per_channel() -> None:
    from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl

    app = parse_adl(
        synthetic_adl(SyntheticSpec(chains=1, length=3, regions=1, width=3, pools=1, replicate_pools=True))
    )
    topo = build_topology(app, {0: 3})
    names = topo.by_name()
    pools = [topo.hostpool(names[f"C0_1[{c}]"].placement.pool_index or 0) for c in range(3)]
    assert [(p.name, p.tags) for p in pools if p] == [
        ("pool0_0_0", ("pool0_0",)),
        ("pool0_0_1", ("pool0_1",)),
        ("pool0_0_2", ("pool0_2",)),
    ]
    assert names["C0_0"].placement.pool_index == 1  # outside the region: the original pool
    wider = build_topology(app, {0: 4}, topo)
    assert [p.index for p in wider.hostpools][: len(topo.hostpools)] == [p.index for p in topo.hostpools]
    assert wider.by_name()["C0_1[3]"].placement.pool_index == max(p.index for p in wider.hostpools)


def test_entering_nested_regions_goes_through_one_splitter_per_region() -> None:
    app = _app("spl.runtime.udpNestedPEBoundary.adl")
    topo = build_topology(app, resolve_widths(app, {}))
    names = {n.index: n.name for n in topo.nodes.values()}
    from_beat = [e for e in topo.edges if names[e.src] == "Beat"]
    assert len(from_beat) == 2 * 4 * 3  # every F2 replica, through P1, H2 and F2 splitters
    for edge in from_beat:
        assert edge.splitter is not None
        dst = topo.nodes[edge.dst]
        assert [(s.region, s.channel) for s in edge.splitter.path] == [
            (c.region, c.local) for c in dst.channels
        ]
