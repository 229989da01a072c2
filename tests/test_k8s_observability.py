"""Event-loop lag detection and structured (JSON) logs."""

from __future__ import annotations

import asyncio
import logging
import time

import orjson

from streams_k8s.k8s.logs import JsonFormatter
from streams_k8s.k8s.loop_monitor import LoopMonitor
from streams_k8s.k8s.metrics import RuntimeMetrics


async def test_a_blocked_loop_is_measured_and_reported_stalled() -> None:
    metrics = RuntimeMetrics()
    monitor = LoopMonitor(metrics, interval=0.05, window=1.0)
    task = asyncio.create_task(monitor.run())
    try:
        await asyncio.sleep(0.12)
        assert not monitor.stalled(budget=0.2)
        time.sleep(0.35)  # synchronous work blocking every watch and worker  # noqa: ASYNC251
        await asyncio.sleep(0.2)  # the loop runs again; the stall stays visible for the window
        assert monitor.worst_recent_lag >= 0.25
        assert monitor.stalled(budget=0.2)
        assert metrics.registry.get_sample_value("streams_k8s_event_loop_lag_seconds") == monitor.lag
        await asyncio.sleep(1.1)
        assert not monitor.stalled(budget=0.2)
    finally:
        task.cancel()


def test_a_dead_monitor_reads_as_stalled() -> None:
    monitor = LoopMonitor(RuntimeMetrics(), interval=0.5)
    monitor.last_tick -= 10  # it has not ticked for 10 s
    assert monitor.stalled(budget=5)


def test_json_logs_carry_the_extra_fields() -> None:
    record = logging.LogRecord(
        "streams_k8s.k8s.controller", logging.WARNING, "f.py", 1, "reconcile of %s failed", ("ns/a",), None
    )
    record.controller = "jobs"
    record.key = "ns/a"
    entry = orjson.loads(JsonFormatter().format(record))
    assert entry["msg"] == "reconcile of ns/a failed"
    assert entry["level"] == "warning"
    assert entry["controller"] == "jobs"
    assert entry["key"] == "ns/a"
    assert entry["ts"].endswith("+00:00")
