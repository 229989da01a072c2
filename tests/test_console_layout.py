"""The job graph's layout: deterministic, PE boxes around their operators, stable across widths."""

from __future__ import annotations

import itertools

from console_graphs import synthetic_graph
from streams_k8s.api.job import Fusion
from streams_k8s.app.synthetic import Imported, SyntheticSpec
from streams_k8s.console.graph import JobGraph
from streams_k8s.console.layout import EXPAND_LIMIT, Box, Collapsed, default_collapsed, layout
from streams_k8s.console.layout_layers import ranks

SPEC = SyntheticSpec(chains=4, length=5, regions=2, width=3, colocate_pairs=True)


def _inside(inner: Box, outer: Box) -> bool:
    return (
        outer.x <= inner.x
        and outer.y <= inner.y
        and inner.x + inner.w <= outer.x + outer.w
        and inner.y + inner.h <= outer.y + outer.h
    )


def _overlap(a: Box, b: Box) -> bool:
    return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h


def test_the_same_job_gives_the_same_picture() -> None:
    first = layout(synthetic_graph(SPEC))
    again = layout(synthetic_graph(SPEC))
    assert first == again


def test_pe_boxes_hold_their_operators_and_never_overlap() -> None:
    graph = synthetic_graph(SPEC, Fusion(manual=5))
    drawn = layout(graph, Collapsed())
    assert len(drawn.operators) == len(graph.operators)
    for op in graph.operators:
        assert _inside(drawn.operators[op.id], drawn.pes[op.pe]), op.name
    for (a, box_a), (b, box_b) in itertools.combinations(drawn.pes.items(), 2):
        assert not _overlap(box_a, box_b), (a, b)
    for a, b in itertools.combinations(drawn.operators.values(), 2):
        assert not _overlap(a, b)


def test_streams_flow_left_to_right() -> None:
    graph = synthetic_graph(SyntheticSpec(chains=3, length=4), Fusion(legacy=True))
    drawn = layout(graph, Collapsed())
    for s in graph.streams:
        assert drawn.operators[s.src].x < drawn.operators[s.dst].x


def test_collapsed_regions_show_channel_zero_and_their_width() -> None:
    graph = synthetic_graph(SPEC)
    collapsed = default_collapsed(graph)
    assert collapsed.regions == {r.alias for r in graph.regions}
    drawn = layout(graph, collapsed)
    replicas = [op for op in graph.operators if op.channel and op.channel.local > 0]
    assert replicas
    assert not {op.id for op in replicas} & set(drawn.operators)
    assert set(drawn.regions) == collapsed.regions
    assert not drawn.channels  # channel boxes only when expanded
    assert sum(drawn.hidden.values()) == len(replicas)
    expanded = layout(graph, Collapsed())
    assert set(expanded.channels) == {f"{r.alias}/{n}" for r in graph.regions for n in r.channels}


def test_a_width_change_moves_nothing_while_collapsed_and_little_when_expanded() -> None:
    narrow, wide = synthetic_graph(SPEC), synthetic_graph(SPEC, widths=[("C0_2", 6)])
    assert layout(narrow).operators == layout(wide).operators
    assert layout(narrow).pes == layout(wide).pes
    before, after = layout(narrow, Collapsed()), layout(wide, Collapsed())
    outside = [op.id for op in narrow.operators if not op.channels]
    moved_rank = [o for o in outside if before.operators[o].x != after.operators[o].x]
    assert not moved_rank  # every operator outside the region keeps its column


def test_a_big_job_starts_with_its_pes_collapsed() -> None:
    chains = EXPAND_LIMIT // 10 + 1
    graph = synthetic_graph(SyntheticSpec(chains=chains, length=10), Fusion(manual=40))
    collapsed = default_collapsed(graph)
    assert collapsed.pes == {pe.id for pe in graph.pes}
    drawn = layout(graph, collapsed)
    assert not drawn.operators
    assert sum(drawn.hidden.values()) == len(graph.operators)
    assert all(r.streams >= 1 for r in drawn.routes)
    assert all(r.key.startswith("pe:") for r in drawn.routes)


def test_imports_are_ends_left_of_what_they_feed() -> None:
    graph: JobGraph = synthetic_graph(
        SyntheticSpec(chains=2, length=3, imports=(Imported(application="other::App", stream="s"),))
    )
    drawn = layout(graph, Collapsed())
    imported = next(x for x in graph.external if x.direction == "import")
    assert drawn.externals[imported.key].x < drawn.operators[imported.operator].x
    assert any(r.key.startswith(f"{imported.key}->") for r in drawn.routes)


def test_cycles_are_ranked_without_looping() -> None:
    assert ranks(3, [(0, 1), (1, 2), (2, 0)]) == [0, 1, 2]
    assert ranks(4, [(0, 1), (2, 3), (3, 1)]) == [1, 2, 0, 1]  # a source sits next to what it feeds
