"""The eight consistent-region gauges: names, label, values from the FSM, exposition."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from streams_k8s.api.consistent_region import ConsistentRegionSpec
from streams_k8s.consistent.fsm import CheckpointDone, Health, RegionMachine, TimerFired, TimerKind
from streams_k8s.consistent.metrics import RegionGauges, Sample, region_label, region_samples


def machine(index: int) -> RegionMachine:
    spec = ConsistentRegionSpec.model_validate(
        {"regionIndex": index, "trigger": "periodic", "period": 1.0, "pesInRegion": [0]}
    )
    return RegionMachine(spec)


def test_samples_have_the_spec_names_label_and_order() -> None:
    m = machine(2)
    samples = region_samples(2, m.gauges())
    label = {"ConsistentRegion": "ConsistentRegion_2"}
    assert samples == [
        Sample("average_drain_time_milliseconds", label, 0.0),
        Sample("average_reset_time_milliseconds", label, 0.0),
        Sample("last_consistent_state_time_milliseconds", label, 0.0),
        Sample("last_reset_time_milliseconds", label, 0.0),
        Sample("last_completed_drain_seq_id", label, -1.0),
        Sample("last_completed_reset_seq_id", label, -1.0),
        Sample("state", label, 0.0),
        Sample("n_current_reset_attempts", label, 0.0),
    ]
    assert region_label(17) == "ConsistentRegion_17"


def test_incomplete_values_are_refused() -> None:
    with pytest.raises(ValueError, match="missing gauge values: state"):
        region_samples(0, {k: 0.0 for k in machine(0).gauges() if k != "state"})


def test_registry_exposes_each_regions_values() -> None:
    registry = CollectorRegistry()
    gauges = RegionGauges(registry)
    a, b = machine(0), machine(1)
    a.step(Health(True, True), 1_000)
    a.step(TimerFired(TimerKind.DRAIN_PERIOD, 0), 1_000)
    result = a.step(CheckpointDone(0, 1), 1_250)
    assert result.gauges is not None
    gauges.update(0, result.gauges)
    gauges.update(1, b.gauges())
    text = generate_latest(registry).decode()
    assert 'state{ConsistentRegion="ConsistentRegion_0"} 1.0' in text
    assert 'state{ConsistentRegion="ConsistentRegion_1"} 0.0' in text
    assert 'average_drain_time_milliseconds{ConsistentRegion="ConsistentRegion_0"} 250.0' in text
    assert 'last_consistent_state_time_milliseconds{ConsistentRegion="ConsistentRegion_0"} 1250.0' in text
    assert 'last_completed_drain_seq_id{ConsistentRegion="ConsistentRegion_0"} 1.0' in text
    assert "# TYPE n_current_reset_attempts gauge" in text
    gauges.remove(1)
    gauges.remove(1)
    text = generate_latest(registry).decode()
    assert "ConsistentRegion_1" not in text
    assert "ConsistentRegion_0" in text
