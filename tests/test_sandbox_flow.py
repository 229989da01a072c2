"""The simulated runtime's load: a declared workload stepped over simulated time, and the PE
metrics it serves (names, types and labels of the runtime's contract) following it."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streams_k8s.sandbox.flow.exposition import pe_ids, pe_metrics
from streams_k8s.sandbox.flow.graph import FlowGraph, build_graph
from streams_k8s.sandbox.flow.model import FlowState, resize, start, step
from streams_k8s.sandbox.flow.workload import WorkloadError, parse_workload, workload_of

DT = 0.1
PIPELINE: dict[str, Any] = {
    "operators": {
        "Src": {"source": {"rate": 1200}},
        "Parse": {"inputs": ["Src"], "cost": 1 / 4000},
        "Score": {"inputs": ["Parse"], "cost": 1 / 500, "region": "Scoring"},
        "Sink": {"inputs": ["Score"], "cost": 1 / 8000},
    }
}


def run(graph: FlowGraph, state: FlowState, seconds: float) -> FlowState:
    for _ in range(round(seconds / DT)):
        state = step(graph, state, DT)
    return state


def rate(graph: FlowGraph, before: FlowState, after: FlowState, operator: str) -> float:
    """Tuples/s an operator (all channels) processed between two states (a source: submitted)."""
    source = graph.workload.operator(operator).source is not None
    total = sum(
        (after.of(i).submitted - before.of(i).submitted)
        if source
        else (after.of(i).processed - before.of(i).processed)
        for i in graph.instances
        if i[0] == operator
    )
    return total / (after.t - before.t)


def scrape(graph: FlowGraph, state: FlowState) -> dict[str, list[tuple[Mapping[str, str], float, str]]]:
    """Every PE's exposition parsed by prometheus_client's own parser: family -> samples."""
    found: dict[str, list[tuple[Mapping[str, str], float, str]]] = {}
    for pe in pe_ids(graph):
        for family in text_string_to_metric_families(pe_metrics(graph, state, "job1", pe)):
            for sample in family.samples:
                found.setdefault(family.name, []).append((sample.labels, sample.value, family.type))
    return found


def test_a_bottleneck_shows_as_congestion_upstream_of_it() -> None:
    graph = build_graph(parse_workload(PIPELINE), {"Scoring": 1})
    state = run(graph, start(graph), 30)
    metrics = scrape(graph, state)
    congestion = {labels["pe"]: value for labels, value, _ in metrics["pe_output_congestion_factor"]}
    ids = pe_ids(graph)
    # Score (500/s) cannot keep up with 1,200/s: the connection into it is full, and so is the
    # one into Parse, which Score's back-pressure slows; nothing downstream of Score is congested.
    assert congestion[str(ids["Parse"])] == 100
    assert congestion[str(ids["Src"])] == 100
    assert congestion[str(ids["Score[0]"])] == 0
    later = run(graph, state, 10)
    assert rate(graph, state, later, "Src") == pytest.approx(500, rel=0.01)  # the source slowed down
    assert rate(graph, state, later, "Sink") == pytest.approx(500, rel=0.01)
    waits = {labels["name"]: value for labels, value, _ in metrics["op_input_n_enqueue_waits"]}
    assert waits["Score[0]"] > 0
    assert waits["Sink"] == 0


def test_metrics_carry_the_contract_names_types_and_labels() -> None:
    graph = build_graph(parse_workload(PIPELINE), {"Scoring": 2})
    metrics = scrape(graph, run(graph, start(graph), 5))
    op_labels = {"job", "pe", "op", "name", "logical_name", "op_port"}
    for family, kind in [
        ("op_input_n_tuples_processed", "counter"),
        ("op_input_n_tuples_dropped", "counter"),
        ("op_input_n_tuples_queued", "gauge"),
        ("op_input_queue_size", "gauge"),
        ("op_input_recent_max_items_queued", "gauge"),
        ("op_input_n_enqueue_waits", "counter"),
        ("op_output_n_tuples_submitted", "counter"),
    ]:
        assert metrics[family], family
        assert all(set(labels) == op_labels and t == kind for labels, _, t in metrics[family]), family
    names = {
        labels["name"]: labels["logical_name"] for labels, _, _ in metrics["op_input_n_tuples_processed"]
    }
    assert names == {"Parse": "Parse", "Score[0]": "Score", "Score[1]": "Score", "Sink": "Sink"}
    assert all(
        set(labels) == {"job", "pe", "pe_port", "connection"}
        for labels, _, _ in metrics["pe_output_congestion_factor"]
    )
    assert all(
        set(labels) == {"job", "pe", "name"} for labels, _, _ in metrics["op_system_relative_operator_cost"]
    )


def test_rates_follow_the_source_steps() -> None:
    doc = {
        "operators": {
            "Src": {"source": {"rate": 300, "steps": [{"at": 20, "rate": 900}, {"at": 40, "rate": 100}]}},
            "Work": {"inputs": ["Src"], "cost": 1 / 2000},
        }
    }
    graph = build_graph(parse_workload(doc), {})
    marks = [start(graph)]
    for _ in range(6):
        marks.append(run(graph, marks[-1], 10))
    rates = [rate(graph, a, b, "Work") for a, b in itertools.pairwise(marks)]
    assert rates == pytest.approx([300, 300, 900, 900, 100, 100], rel=0.02)


def test_a_periodic_source_swings_around_its_rate() -> None:
    doc = {
        "operators": {
            "Src": {"source": {"rate": 1000, "amplitude": 500, "period": 40}},
            "W": {"inputs": ["Src"]},
        }
    }
    graph = build_graph(parse_workload(doc), {})
    quarter = run(graph, start(graph), 10)
    peak = run(graph, quarter, 0.5)
    assert rate(graph, quarter, peak, "W") == pytest.approx(1500, rel=0.01)
    trough = run(graph, peak, 19.5)
    assert rate(graph, trough, run(graph, trough, 0.5), "W") == pytest.approx(500, rel=0.01)


def test_a_width_change_spreads_the_load_over_the_channels() -> None:
    workload = parse_workload(PIPELINE)
    narrow = build_graph(workload, {"Scoring": 1})
    state = run(narrow, start(narrow), 20)
    assert state.of(("Score", 0)).queued == pytest.approx(1000)
    wide = build_graph(workload, {"Scoring": 4})
    moved = resize(narrow, state, wide)
    # the queued tuples are spread too: 1,000 over four channels
    assert [moved.of(("Score", c)).queued for c in range(4)] == pytest.approx([250] * 4)
    settled = run(wide, moved, 30)
    later = run(wide, settled, 10)
    per_channel = [
        (later.of(("Score", c)).processed - settled.of(("Score", c)).processed) / 10 for c in range(4)
    ]
    assert per_channel == pytest.approx([300] * 4, rel=0.01)  # 1,200/s over four channels
    assert rate(wide, settled, later, "Sink") == pytest.approx(1200, rel=0.01)
    assert max(later.of(("Score", c)).queued for c in range(4)) < 1


def test_fused_instances_share_their_pe() -> None:
    doc = {
        "operators": {
            "Src": {"source": {"rate": 1000}},
            "A": {"inputs": ["Src"], "cost": 1 / 1000},
            "B": {"inputs": ["A"], "cost": 1 / 1000},
        }
    }
    graph = build_graph(parse_workload(doc), {}, pe_of={("A", 0): "pe", ("B", 0): "pe"})
    state = run(graph, start(graph), 30)
    later = run(graph, state, 10)
    assert rate(graph, state, later, "B") == pytest.approx(500, rel=0.02)  # one CPU for two 1 ms operators


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"operators": {"A": {"inputs": ["Nope"]}}}, "operators.A.inputs names 'Nope'"),
        ({"operators": {"A": {"inputs": ["B"]}, "B": {"inputs": ["A"]}}}, "cycle"),
        ({"operators": {"A": {}}}, "either inputs or a source"),
        ({"operators": {"A": {"source": {"rate": -1}}}}, "operators.A.source.rate must be >= 0"),
        ({"operators": {"A": {"source": {"rate": 1, "amplitude": 2}}}}, "amplitude needs a period"),
        ({"operators": {"A": {"source": {"rate": 1}, "cots": 1}}}, "unknown keys ['cots']"),
        ({"operators": {"A": {"source": {"rate": 1}}}, "queueSize": 0}, "queueSize must be a positive"),
        ({"operators": {"A": {"source": {"rate": 1}}}, "peCapacity": 0}, "peCapacity must be > 0"),
        ([], "must be a mapping"),
    ],
)
def test_bad_workloads_are_refused_with_what_is_wrong(doc: Any, message: str) -> None:
    with pytest.raises(
        WorkloadError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")
    ):
        parse_workload(doc)


def test_the_workload_is_read_from_the_job_annotation() -> None:
    yaml_text = "operators:\n  Src: {source: {rate: 10}}\n  Sink: {inputs: [Src]}\n"
    workload = workload_of({"streams.ibm.com/simulated-workload": yaml_text})
    assert workload is not None
    assert [op.name for op in workload.operators] == ["Src", "Sink"]
    assert workload_of({}) is None
    with pytest.raises(WorkloadError, match="neither JSON nor YAML"):
        workload_of({"streams.ibm.com/simulated-workload": "{not json"})
    with pytest.raises(WorkloadError, match="region Scoring needs a width"):
        build_graph(parse_workload(PIPELINE), {})
