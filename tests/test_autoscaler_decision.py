"""The width autoscaler's pure parts: the true-rate estimate against the simulation's ground truth,
and the DS2-style decision as a table of metric windows -> widths and reasons."""

from __future__ import annotations

from dataclasses import replace

import pytest

from streams_k8s.controller.autoscaling.decision import AutoscalerState, Decision, decide
from streams_k8s.controller.autoscaling.estimates import OperatorShape, estimate
from streams_k8s.controller.autoscaling.observations import (
    InstanceWindow,
    Scrape,
    Window,
    read_scrape,
    window,
)
from streams_k8s.controller.autoscaling.settings import AutoscalerSettings, Bounds, problems
from streams_k8s.sandbox.flow.exposition import pe_cpu_seconds, pe_ids, pe_metrics
from streams_k8s.sandbox.flow.graph import FlowGraph, build_graph
from streams_k8s.sandbox.flow.model import FlowState, capacity, start, step
from streams_k8s.sandbox.flow.workload import parse_workload

PIPELINE = parse_workload(
    {
        "operators": {
            "Src": {"source": {"rate": 3000}},
            "Parse": {"inputs": ["Src"], "cost": 1 / 2500, "region": "P", "selectivity": 0.5},
            "Score": {"inputs": ["Parse"], "cost": 1 / 300, "region": "S"},
            "Sink": {"inputs": ["Score"], "cost": 1 / 5000},
        }
    }
)
TOPOLOGY = [OperatorShape(op.name, op.inputs, op.region) for op in PIPELINE.operators]
ESTIMATE_ERROR = 0.02  # the stated bound: within 2 % of the true rate


def scrape_of(graph: FlowGraph, state: FlowState, *, cpu: bool = True) -> Scrape:
    ids = pe_ids(graph)
    texts = {ids[pe]: pe_metrics(graph, state, "job", pe, ids=ids) for pe in ids}
    return read_scrape(state.t, texts, pe_cpu_seconds(graph, state, ids) if cpu else None)


def recorded_window(
    widths: dict[str, int], *, cpu: bool = True, warmup: float = 60.0
) -> tuple[FlowGraph, Window]:
    graph = build_graph(PIPELINE, widths)
    state = start(graph)
    for _ in range(int(warmup / 0.1)):
        state = step(graph, state, 0.1)
    first = scrape_of(graph, state, cpu=cpu)
    for _ in range(300):
        state = step(graph, state, 0.1)
    return graph, window(first, scrape_of(graph, state, cpu=cpu))


@pytest.mark.parametrize("widths", [{"P": 1, "S": 1}, {"P": 1, "S": 4}, {"P": 2, "S": 6}, {"P": 3, "S": 9}])
def test_true_rates_are_recovered_within_the_stated_error(widths: dict[str, int]) -> None:
    """From a bottleneck at Score (its upstream back-pressured, its downstream starved) to a job
    with room everywhere: every operator's estimate is its true per-channel rate within 2 %."""
    graph, recorded = recorded_window(widths)
    rates = estimate(TOPOLOGY, recorded)
    for op in ("Parse", "Score", "Sink"):
        truth = capacity(graph, (op, 0))
        assert rates[op].true_rate == pytest.approx(truth, rel=ESTIMATE_ERROR), (op, rates[op])
    assert rates["Src"].target == pytest.approx(3000, rel=ESTIMATE_ERROR)  # backlog growth included
    assert rates["Parse"].selectivity == pytest.approx(0.5, rel=ESTIMATE_ERROR)


def test_without_cpu_metrics_only_a_saturated_operator_is_known() -> None:
    graph, recorded = recorded_window({"P": 1, "S": 1}, cpu=False)
    rates = estimate(TOPOLOGY, recorded)
    assert rates["Score"].how == "saturated"
    assert rates["Score"].true_rate == pytest.approx(capacity(graph, ("Score", 0)), rel=ESTIMATE_ERROR)
    assert rates["Parse"].true_rate is None  # held back by Score: what it did is a lower bound
    assert rates["Sink"].true_rate is None  # starved


def row(
    name: str,
    *,
    processed: float = 0,
    submitted: float = 0,
    fill: float = 0,
    useful: float | None = None,
    pending: float = 0,
) -> InstanceWindow:
    """One instance's line of a window, as `observations.window` reads it from the metrics."""
    operator = name.split("[")[0]
    source = operator == "Src"
    return InstanceWindow(
        name, operator, 0 if source else processed, submitted, fill, fill, source, useful, pending
    )


def recorded(*rows: InstanceWindow, start: float = 100.0, end: float = 130.0) -> Window:
    return Window(start, end, rows)


# Src at 3,000/s submitting 1,000/s, its backlog growing 2,000/s; Parse (2,500/s a channel, width 1)
# back-pressured at 1,000/s; Score (300/s, width 2) saturated; Sink starved.
UNDER = recorded(
    row("Src", submitted=1000, pending=2000, useful=0.0),
    row("Parse", processed=1000, submitted=500, fill=1.0, useful=0.4),
    row("Score[0]", processed=300, submitted=300, fill=1.0, useful=1.0),
    row("Score[1]", processed=300, submitted=300, fill=1.0, useful=1.0),
    row("Sink", processed=600, fill=0.0, useful=0.12),
)
# The same job at 1,500/s through Parse 1 and Score 4: Score at 62 %, Parse at 60 %.
SETTLED = recorded(
    row("Src", submitted=1500, useful=0.0),
    row("Parse", processed=1500, submitted=750, useful=0.6),
    *(row(f"Score[{c}]", processed=187.5, submitted=187.5, useful=0.625) for c in range(4)),
    row("Sink", processed=750, useful=0.15),
)
# 300/s: everything far under the band.
QUIET = recorded(
    row("Src", submitted=300, useful=0.0),
    row("Parse", processed=300, submitted=150, useful=0.12),
    *(row(f"Score[{c}]", processed=37.5, submitted=37.5, useful=0.125) for c in range(4)),
    row("Sink", processed=150, useful=0.03),
)
ACTIVE = AutoscalerSettings(mode="Active", stabilisation=60, scale_down_delay=300)


def decided(
    widths: dict[str, int],
    win: Window,
    settings: AutoscalerSettings = ACTIVE,
    state: AutoscalerState | None = None,
) -> Decision:
    return decide(TOPOLOGY, widths, win, settings, state or AutoscalerState())


@pytest.mark.parametrize(
    ("case", "widths", "win", "settings", "expected", "reason"),
    [
        # every region sized at once: 3,000/s into Parse needs 2 at 80 %; 1,500/s into Score needs 7
        (
            "under-provisioned",
            {"P": 1, "S": 2},
            UNDER,
            ACTIVE,
            {"P": 2, "S": 7},
            "S 2 -> 7: utilisation 250% over 90%",
        ),
        ("within the band", {"P": 1, "S": 4}, SETTLED, ACTIVE, {"P": 1, "S": 4}, None),
        (
            "bounded above",
            {"P": 1, "S": 2},
            UNDER,
            replace(ACTIVE, regions={"S": Bounds(1, 5)}),
            {"P": 2, "S": 5},
            "S 2 -> 5",
        ),
        (
            "bounded below",
            {"P": 1, "S": 4},
            SETTLED,
            replace(ACTIVE, regions={"P": Bounds(2, 4)}),
            {"P": 2, "S": 4},
            "P 1 -> 2",
        ),
        (
            "scale-down waits",
            {"P": 1, "S": 4},
            QUIET,
            ACTIVE,
            {"P": 1, "S": 4},
            "S 4 -> 1 at 400s if it stays under 60%",
        ),
    ],
)
def test_decisions(
    case: str,
    widths: dict[str, int],
    win: Window,
    settings: AutoscalerSettings,
    expected: dict[str, int],
    reason: str | None,
) -> None:
    decision = decided(widths, win, settings)
    assert dict(decision.widths) == expected, decision.reasons
    assert decision.changed == (expected != widths)
    if reason is not None:
        assert any(reason in r for r in decision.reasons), decision.reasons


def test_scale_down_after_the_delay_then_stabilisation_then_the_delivery_check() -> None:
    first = decided({"P": 1, "S": 4}, QUIET)
    later = replace(QUIET, start=400.0, end=430.0)
    down = decided({"P": 1, "S": 4}, later, state=first.state)
    assert dict(down.widths) == {"P": 1, "S": 1}
    assert down.state.history[-1].action == "scaled"
    assert down.state.changed_at == 430.0
    soon = decided({"P": 1, "S": 1}, replace(QUIET, start=450.0, end=480.0), state=down.state)
    assert not soon.changed
    assert soon.reasons[0].startswith("stabilising after the change at 430s until 490s")
    # after stabilisation: the sources ran at 300/s of the 300/s promised
    checked = decided(
        {"P": 1, "S": 1},
        recorded(
            row("Src", submitted=300, useful=0.0),
            row("Parse", processed=300, submitted=150, useful=0.12),
            row("Score[0]", processed=150, submitted=150, useful=0.5),
            row("Sink", processed=150, useful=0.03),
            start=490.0,
            end=520.0,
        ),
        state=soon.state,
    )
    assert [(h.action, h.at) for h in checked.state.history][-1] == ("delivered", 520.0)
    assert not checked.changed


def test_a_change_that_did_not_deliver_is_recorded() -> None:
    up = decided({"P": 1, "S": 2}, UNDER)
    short = decided(
        {"P": 2, "S": 7},
        recorded(
            row("Src", submitted=2000, pending=1000, useful=0.0),
            row("Parse[0]", processed=1000, submitted=500, useful=0.4),
            row("Parse[1]", processed=1000, submitted=500, useful=0.4),
            *(row(f"Score[{c}]", processed=1000 / 7, submitted=1000 / 7, useful=0.476) for c in range(7)),
            row("Sink", processed=1000, useful=0.2),
            start=200.0,
            end=230.0,
        ),
        state=up.state,
    )
    assert short.state.history[-1].action == "not delivered"
    assert "sources at 2000/s of the 3000/s" in short.state.history[-1].reason


def test_recommend_mode_changes_nothing_and_records_a_recommendation_once() -> None:
    recommend = replace(ACTIVE, mode="Recommend")
    first = decided({"P": 1, "S": 2}, UNDER, recommend)
    assert dict(first.widths) == {"P": 2, "S": 7}
    assert first.state.changed_at is None  # nothing changed: no stabilisation
    again = decided({"P": 1, "S": 2}, replace(UNDER, start=130.0, end=160.0), recommend, first.state)
    assert [h.action for h in again.state.history] == ["recommended"]


def test_an_unknown_rate_keeps_its_region_as_wide_as_it_is() -> None:
    blind = recorded(
        row("Src", submitted=1000, pending=2000),
        row("Parse", processed=1000, submitted=500, fill=1.0),
        row("Score[0]", processed=300, submitted=300, fill=0.2),
        row("Sink", processed=300),
    )
    decision = decided({"P": 1, "S": 1}, blind)
    assert any("Score: true rate unknown" in r for r in decision.reasons)
    assert decision.widths["S"] == 1


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (AutoscalerSettings(regions={"S": Bounds(5, 2)}), "region 'S': min 5 is over max 2"),
        (
            AutoscalerSettings(regions={"Nope": Bounds()}),
            "region 'Nope' is not a parallel region of the job (it has: P, S)",
        ),
        (AutoscalerSettings(regions={"S": Bounds(1, 5000)}), "region 'S': bounds must be within 1..1000"),
        (AutoscalerSettings(low=0.9, target_utilisation=0.8), "the band must hold the target"),
    ],
)
def test_bad_settings_are_named(settings: AutoscalerSettings, message: str) -> None:
    assert message in " / ".join(problems(settings, {"P", "S"}))
    assert problems(AutoscalerSettings(regions={"S": Bounds(2, 8)}), {"P", "S"}) == []
