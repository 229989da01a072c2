"""The flow core: PE metric texts parsed, windows of readings, a job's flow derived (pure)."""

from __future__ import annotations

import pytest

from flow_expositions import OperatorCounts, pe_text, recorded
from streams_k8s.app.flow import FlowShape, PeFlow, PeState, job_flow, logical_name
from streams_k8s.app.flow_samples import Connection, ExpositionError, PortKey, parse_exposition
from streams_k8s.app.flow_window import PeWindow

PARSE = PortKey("main.parse[0]", "main.parse", 0)
ROUTE = PortKey("main.route", "main.route", 0)


def _window(*texts: tuple[float, str]) -> PeWindow:
    window = PeWindow()
    for at, text in texts:
        window.add(at, parse_exposition(text))
    return window


def test_a_recorded_pe_text_gives_its_operator_ports_and_connections() -> None:
    sample = parse_exposition(recorded("pe-1-at-0s.prom"))
    assert set(sample.inputs) == {PARSE, ROUTE}
    route = sample.inputs[ROUTE]
    assert (route.processed, route.dropped, route.queued, route.queue_size, route.enqueue_waits) == (
        11000,
        40,
        900,
        1000,
        300,
    )
    assert sample.outputs[PortKey("main.route", "main.route", 1)] == 1000
    assert sample.congestion == {Connection(0, "(2:0)"): 0, Connection(0, "(3:0)"): 85}
    assert [c.dst_pe for c in sorted(sample.congestion)] == [2, 3]
    assert Connection(0, "(Sink:0)").dst_pe is None  # no PE named: no link, its congestion still counts
    assert sample.operators() == {("main.parse[0]", "main.parse"), ("main.route", "main.route")}


@pytest.mark.parametrize(
    "line",
    [
        'op_input_n_tuples_processed{name="a",op_port="0" 5',  # unclosed
        'op_input_n_tuples_processed{name="a",op_port="0"}',  # no value
        'op_input_n_tuples_processed{name="a",op_port="0"} five',
        'op_input_n_tuples_processed{name=a,op_port="0"} 5',  # unquoted
        'op_input_n_tuples_processed{name="a",op_port="} 5',  # unterminated
        'op_input_n_tuples_processed{op_port="0"} 5',  # no operator
        'pe_output_congestion_factor{connection="(2:0)"} 5',  # no pe_port
    ],
)
def test_a_malformed_line_of_a_family_read_is_refused_with_the_line(line: str) -> None:
    with pytest.raises(ExpositionError, match="op_port|connection|labels|value"):
        parse_exposition(line + "\n")


def test_a_counter_named_as_openmetrics_names_it_is_read() -> None:
    text = 'op_output_n_tuples_submitted_total{name="a",op_port="0"} 7\n'
    assert parse_exposition(text).outputs == {PortKey("a", "a", 0): 7}


def test_other_families_and_a_nan_reading_are_left_out() -> None:
    text = 'weird{{{ 1\nop_input_queue_size{name="a",op_port="0"} NaN\n'
    assert parse_exposition(text).inputs == {}


def test_rates_over_a_window_of_recorded_readings() -> None:
    window = _window((100.0, recorded("pe-1-at-0s.prom")), (110.0, recorded("pe-1-at-10s.prom")))
    route = window.input_rates(ROUTE)
    assert route is not None
    assert (route.processed, route.dropped, route.enqueue_waits, route.queued) == (400, 5, 50, 900)
    assert window.output_rate(PortKey("main.parse[0]", "main.parse", 0)) == 450
    assert window.output_rate(PortKey("main.route", "main.route", 1)) == 0


def test_one_reading_gives_no_rate_and_a_restarted_pe_counts_from_zero() -> None:
    def text(processed: float) -> str:
        return pe_text(1, 1, [OperatorCounts("a", processed, processed)], {})

    key = PortKey("a", "a", 0)
    one = _window((0.0, text(500)))
    assert one.output_rate(key) is None
    restarted = _window((0.0, text(1000)), (5.0, text(2000)), (10.0, text(300)))
    assert restarted.output_rate(key) == pytest.approx((1000 + 300) / 10)


def test_the_window_keeps_its_last_readings_only() -> None:
    window = PeWindow(readings=3)
    for second in range(10):
        window.add(float(second), parse_exposition(pe_text(1, 1, [OperatorCounts("a", second * 10, 0)], {})))
    assert (len(window), window.span) == (3, 2.0)
    with pytest.raises(ValueError, match="at least 2"):
        PeWindow(readings=1)


def test_a_job_flow_from_recorded_readings() -> None:
    window = _window((0.0, recorded("pe-1-at-0s.prom")), (10.0, recorded("pe-1-at-10s.prom")))
    flow = job_flow({1: window}, {})
    route = flow.operator("main.route")
    assert route is not None
    assert (route.tuples_in, route.tuples_out, route.drops, route.queue_fill, route.congestion) == (
        400,
        400,
        5,
        0.9,
        85,
    )
    parse = flow.operator("main.parse[0]")
    assert parse is not None
    assert parse.queue_fill is None
    assert (flow.link(1, 3), flow.link(1, 2), flow.pes) == (85, 0, {1: PeState.READ})
    assert flow.pe_flows[1] == PeFlow(tuples_in=500, tuples_out=400, congestion=85)


def test_pes_not_read_twice_or_failing_are_unknown_never_zero() -> None:
    once = _window((0.0, recorded("pe-1-at-0s.prom")))
    flow = job_flow({1: once, 2: PeWindow()}, {3: "http://10.0.0.3:9696/metrics: HTTP 503"})
    assert flow.pes == {1: PeState.PENDING, 2: PeState.PENDING, 3: PeState.FAILING}
    assert flow.operators == ()
    assert flow.operator("main.route") is None
    assert flow.problems[3].endswith("HTTP 503")


def test_a_region_takes_in_what_enters_it_and_gives_out_what_leaves_it() -> None:
    def pe(pe: int, ops: list[tuple[str, float, float]], at: float) -> str:
        return pe_text(7, pe, [OperatorCounts(n, i * at, o * at) for n, i, o in ops], {9: 60.0 * pe})

    chains: dict[int, list[tuple[str, float, float]]] = {
        1: [("src", 0, 300)],
        2: [("par[0].a", 150, 150), ("par[0].b", 150, 100)],
        3: [("par[1].a", 150, 150), ("par[1].b", 150, 100)],
        9: [("sink", 200, 0)],
    }
    windows = {n: _window((0.0, pe(n, ops, 0.0)), (10.0, pe(n, ops, 10.0))) for n, ops in chains.items()}
    shape = FlowShape(
        regions={"par.a": "par", "par.b": "par"},
        streams=frozenset({("src", 0, "par.a", 0), ("par.a", 0, "par.b", 0), ("par.b", 0, "sink", 0)}),
    )
    flow = job_flow(windows, {}, shape)
    (region,) = flow.regions
    assert (region.region, region.channels, region.tuples_in, region.tuples_out) == ("par", 4, 300, 200)
    assert region.congestion == 180  # PE 3's connection
    assert logical_name("par[1].b[3]") == "par.b"
