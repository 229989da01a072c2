"""The job graph as SVG: one element per PE, operator, region, channel and stream, each tagged
with the data- attributes the live console updates in place."""

from __future__ import annotations

from console_graphs import drawn, real_plan, synthetic_graph
from streams_k8s.api.job import Fusion
from streams_k8s.app.synthetic import Exported, SyntheticSpec
from streams_k8s.console.graph import Health, graph_from_plan, operator_key, pe_key
from streams_k8s.console.layout import Collapsed, layout
from streams_k8s.console.render import render_svg


def test_the_parallel_sample_draws_every_pe_operator_channel_and_stream() -> None:
    graph = graph_from_plan(real_plan("apps.parallel.Parallel.sab", widths=[("Result.Region2", 3)]))
    svg = drawn(render_svg(graph, layout(graph, Collapsed())))
    assert set(svg.pes) == {str(pe.id) for pe in graph.pes}
    assert set(svg.operators) == {op.name for op in graph.operators}
    assert {op.name: a["data-pe"] for op in graph.operators for a in [svg.operators[op.name]]} == {
        op.name: str(op.pe) for op in graph.operators
    }
    assert svg.regions["Result.Region2"]["data-width"] == "3"
    assert {c for c in svg.channels if c.startswith("Result.Region2/")} == {
        f"Result.Region2/{n}" for n in range(3)
    }
    assert "Source->Result.Region1[0]" in svg.edges
    assert {f"Result.Region1[0]->Result.Region2[{n}]" for n in range(3)} <= set(svg.edges)
    assert len(svg.edges) == len(graph.streams)


def test_a_collapsed_region_is_one_box_with_its_width() -> None:
    graph = graph_from_plan(real_plan("apps.parallel.Parallel.sab", widths=[("Result.Region2", 3)]))
    svg = drawn(render_svg(graph, layout(graph)))
    assert svg.regions["Result.Region2"]["data-collapsed"] == "true"
    assert svg.regions["Result.Region2"]["data-width"] == "3"
    assert "Result.Region2[1]" not in svg.operators
    assert "Result.Region2[0]" in svg.operators


def test_health_colours_pes_and_their_operators() -> None:
    graph = synthetic_graph(SyntheticSpec(chains=2, length=2), Fusion(legacy=True))
    failed = graph.operators[1]
    health = {pe_key(pe.id): Health.OK for pe in graph.pes} | {pe_key(failed.pe): Health.FAILED}
    health[operator_key(graph.operators[0].id)] = Health.STARTING
    svg = drawn(render_svg(graph, layout(graph), health))
    assert svg.pes[str(failed.pe)]["data-health"] == "failed"
    assert svg.operators[failed.name]["data-health"] == "failed"  # from its PE
    assert svg.operators[graph.operators[0].name]["data-health"] == "starting"
    assert {a["data-health"] for pe, a in svg.pes.items() if pe != str(failed.pe)} == {"ok"}
    offline = drawn(render_svg(graph, layout(graph)))
    assert {a["data-health"] for a in offline.pes.values()} == {"unknown"}


def test_names_are_escaped_and_exports_drawn() -> None:
    graph = graph_from_plan(real_plan("apps.pubsub.Exporter.sab"))
    text = render_svg(graph, layout(graph))
    svg = drawn(text)  # parses: the export properties' quotes are escaped
    assert sorted(svg.exports) == ["ExportOp0", "ExportOp1", "ExportOp2"]
    assert "Bump->export:ExportOp1" in svg.edges
    exported = synthetic_graph(SyntheticSpec(chains=1, length=2, exports=(Exported(stream="a<b"),)))
    assert "a&lt;b" in render_svg(exported, layout(exported))
