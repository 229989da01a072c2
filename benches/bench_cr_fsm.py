"""Consistent-region FSM stepping: the native batch API against the pure-Python table
implementation (tests/cr_fsm_reference.py), on the same event stream in one run.

Target (issue 8): ≥ 1,000,000 events/s through the batch API from Python; report the ratio.
Run: pytest benches/bench_cr_fsm.py --benchmark-enable --benchmark-group-by=group
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from streams_k8s._native import CrEvent, CrRegion

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cr_fsm_reference import ReferenceRegion

PES = 16
EVENTS = 100_000
CONFIG: dict[str, Any] = {
    "trigger": "periodic",
    "period": 1.0,
    "drain_timeout": 30.0,
    "reset_timeout": 30.0,
    "max_consecutive_reset_attempts": 3,
    "pes_in_region": list(range(PES)),
    "operators_to_start_region_map": {"src": True},
    "operators_to_trigger_map": {"src": True},
}


def reference_region() -> ReferenceRegion:
    return ReferenceRegion.from_config(CONFIG)


def workload() -> list[tuple[Any, ...]]:
    """A region of 16 PEs living its normal life: periodic drains answered by every PE (every
    third drain non-blocking), every tenth drain timing out and being reset, plus the odd late
    report that is refused."""
    ref = reference_region()
    events: list[tuple[Any, ...]] = [("health", True, True)]
    ref.step(events[0])
    drains = 0
    while len(events) < EVENTS:
        cycle: list[tuple[Any, ...]] = [("timer", "DrainPeriod", ref.timer_seq)]
        ref.step(cycle[0])
        drains += 1
        seq = ref.current
        if drains % 10 == 0:
            cycle.append(("timer", "DrainTimeout", ref.timer_seq))
            ref.step(cycle[-1])
            seq_reset, attempt = ref.last_completed, ref.attempt - 1
            cycle += [("resetDone", pe, seq_reset, attempt) for pe in range(PES)]
        elif drains % 3 == 0:
            cycle += [("blockingCheckpoint", pe, seq) for pe in range(PES)]
            cycle += [("checkpoint", pe, seq) for pe in range(PES)]
        else:
            cycle += [("checkpoint", pe, seq) for pe in range(PES)]
        cycle.append(("checkpoint", 0, seq))  # late duplicate: refused
        for e in cycle[1 + (drains % 10 == 0) :]:
            ref.try_step(e)
        events += cycle
    return events[:EVENTS]


WORKLOAD = workload()
NATIVE_BUILDERS = {
    "health": CrEvent.health,
    "checkpoint": CrEvent.checkpoint,
    "blockingCheckpoint": CrEvent.blocking_checkpoint,
    "resetDone": CrEvent.reset_done,
    "timer": CrEvent.timer,
}
NATIVE_EVENTS = [NATIVE_BUILDERS[e[0]](*e[1:]) for e in WORKLOAD]  # type: ignore[operator]


def native_region() -> CrRegion:
    return CrRegion(region_index=0, **CONFIG)


def run_reference(region: ReferenceRegion) -> ReferenceRegion:
    for e in WORKLOAD:
        region.try_step(e)
    return region


def test_same_outcome() -> None:
    """Both implementations end in the same state on the benchmark stream."""
    native = native_region()
    batch = native.step_many(NATIVE_EVENTS, 0)
    ref = run_reference(reference_region())
    status = native.status()
    assert {k: status[k] for k in ref.snapshot()} == ref.snapshot()
    assert batch.rejected > 0
    assert status["last_completed_seq_id"] > 1000


@pytest.mark.benchmark(group="cr_fsm")
def test_native_batch(benchmark: Any) -> None:
    batch = benchmark.pedantic(
        lambda region: region.step_many(NATIVE_EVENTS, 0),
        setup=lambda: ((native_region(),), {}),
        rounds=30,
    )
    assert len(batch) == EVENTS
    benchmark.extra_info["events"] = EVENTS


@pytest.mark.benchmark(group="cr_fsm")
def test_native_batch_reading_every_result(benchmark: Any) -> None:
    """The same, plus reading every step's notification, timer and persist flag in Python."""

    def run(region: CrRegion) -> int:
        batch = region.step_many(NATIVE_EVENTS, 0)
        notes = 0
        for i in range(len(batch)):
            step = batch[i]
            if step.persist and step.notification is not None and step.arm is not None:
                notes += 1
        return notes

    notes = benchmark.pedantic(run, setup=lambda: ((native_region(),), {}), rounds=10)
    assert notes > 0
    benchmark.extra_info["events"] = EVENTS


@pytest.mark.benchmark(group="cr_fsm")
def test_python_reference(benchmark: Any) -> None:
    region = benchmark.pedantic(run_reference, setup=lambda: ((reference_region(),), {}), rounds=5)
    assert region.last_completed > 1000
    benchmark.extra_info["events"] = EVENTS
