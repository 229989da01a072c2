"""The job page's flow: the snapshot's figures and levels (no flow distinct from unknown); the page
itself is checked in Chromium (test_console_flow_browser)."""

from __future__ import annotations

from flow_expositions import recorded
from streams_k8s.app.flow import job_flow
from streams_k8s.app.flow_samples import parse_exposition
from streams_k8s.app.flow_window import PeWindow
from streams_k8s.console.live_flow import CONGESTED, flow_row, level


def test_levels_say_no_flow_and_unknown_apart() -> None:
    assert [level(r, 300.0) for r in (None, 0.0, 50.0, 150.0, 300.0)] == [
        "unknown",
        "none",
        "low",
        "mid",
        "high",
    ]
    assert level(0.0, 0.0) == "none"


def test_the_snapshot_carries_each_operator_s_figures_and_the_congested_connections() -> None:
    window = PeWindow()
    window.add(0.0, parse_exposition(recorded("pe-1-at-0s.prom")))
    window.add(10.0, parse_exposition(recorded("pe-1-at-10s.prom")))
    row = flow_row(job_flow({1: window, 2: PeWindow()}, {3: "http://10.0.0.3:9696/metrics: timeout"}))
    assert row is not None
    route = row["operators"]["main.route"]
    assert route == {
        "in": 400.0,
        "out": 400.0,
        "drops": 5.0,
        "fill": 0.9,
        "congestion": 85.0,
        "level": "high",
    }
    assert row["operators"]["main.parse[0]"]["level"] == "high"  # 450 of 500/s: in the top third
    assert row["links"] == {"1->2": 0.0, "1->3": 85.0}
    assert row["congested"] == CONGESTED
    assert row["pes"] == {
        "1": {"state": "read", "in": 500.0, "out": 400.0, "level": "high"},  # its own ports' tuples
        "2": {"state": "pending", "in": None, "out": None, "level": "unknown"},
        "3": {"state": "failing", "in": None, "out": None, "level": "unknown"},
    }
    assert row["problems"] == {"3": "http://10.0.0.3:9696/metrics: timeout"}
    assert flow_row(None) is None  # nothing reads the PEs: every operator is drawn unknown
