"""The job graph model: what a plan becomes in the console's picture."""

from __future__ import annotations

import orjson

from console_graphs import real_plan, synthetic_graph, synthetic_plan
from streams_k8s.api.job import Fusion
from streams_k8s.app.synthetic import Exported, Imported, SyntheticSpec
from streams_k8s.console.graph import graph_from_plan


def test_the_parallel_sample_has_its_operators_pes_regions_and_streams() -> None:
    graph = graph_from_plan(real_plan("apps.parallel.Parallel.sab", widths=[("Result.Region2", 3)]))
    names = {op.name for op in graph.operators}
    assert {"Source", "Sink", "Result.Region1[0]", "Result.Region3[0]"} <= names
    assert {f"Result.Region2[{n}]" for n in range(3)} <= names
    assert len(graph.operators) == 7
    assert sorted(pe.id for pe in graph.pes) == list(range(7))
    region2 = next(r for r in graph.regions if r.alias == "Result.Region2")
    assert region2.width == 3
    assert sorted(region2.channels) == [0, 1, 2]
    by_id = {op.id: op for op in graph.operators}
    pairs = {(by_id[s.src].name, by_id[s.dst].name) for s in graph.streams}
    assert ("Source", "Result.Region1[0]") in pairs
    assert {("Result.Region1[0]", f"Result.Region2[{n}]") for n in range(3)} <= pairs
    source = next(s for s in graph.streams if by_id[s.src].name == "Source")
    assert (source.src_label, source.dst_label, source.stream) == ("Source", "In", "Source")
    replica = next(op for op in graph.operators if op.name == "Result.Region2[2]")
    assert replica.channel is not None
    assert replica.channel.key == "Result.Region2/2"
    assert replica.kind == "spl.relational::Functor"


def test_imports_and_exports_of_the_pubsub_samples_are_streams_to_other_jobs() -> None:
    importer = graph_from_plan(real_plan("apps.pubsub.Importer.sab"))
    assert {x.direction for x in importer.external} == {"import"}
    assert {x.via for x in importer.external} == {
        "EntertainmentBargains",
        "HealthCareBargains",
        "TechBargains",
    }
    assert "apps.pubsub::Exporter/entSectorBargains" in {x.label for x in importer.external}
    exporter = graph_from_plan(real_plan("apps.pubsub.Exporter.sab"))
    labels = {x.via: x.label for x in exporter.external if x.direction == "export"}
    assert labels["ExportOp0"] == "entSectorBargains"
    assert 'kind="bargains"' in labels["ExportOp1"]


def test_the_constraint_that_decided_each_pe_is_named() -> None:
    spec = SyntheticSpec(chains=2, length=4, colocate_pairs=True, isolate_heads=1)
    graph = synthetic_graph(spec, Fusion(legacy=True))
    decided = {op.name: op.decided_by for op in graph.operators}
    assert decided["C0_0"] == "partitionIsolation"
    colocated = [op for op in graph.operators if op.decided_by.startswith("partitionColocation(")]
    assert colocated, decided
    for op in colocated:
        assert op.decided_by in op.constraints
        assert sum(1 for o in graph.operators if o.pe == op.pe) > 1
    plain = synthetic_graph(SyntheticSpec(chains=2, length=2), Fusion(manual=2))
    assert {op.decided_by for op in plain.operators} == {"manual fusion into 2 PEs"}


def test_the_graph_is_plain_json() -> None:
    spec = SyntheticSpec(
        chains=2,
        length=3,
        regions=1,
        width=2,
        exports=(Exported(stream="out"),),
        imports=(Imported(application="other::App", stream="in"),),
    )
    graph = synthetic_graph(spec)
    data = orjson.loads(graph.to_json())
    assert len(data["operators"]) == len(graph.operators)
    assert data["regions"][0]["channels"] == {
        str(n): list(ids) for n, ids in graph.regions[0].channels.items()
    }
    assert {x["direction"] for x in data["external"]} == {"import", "export"}
    assert graph_from_plan(synthetic_plan(spec)) == graph  # the same application, the same graph
