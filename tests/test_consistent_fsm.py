"""The typed FSM wrapper: events in, actions out, status to and from the pydantic models."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from streams_k8s._native import CrBatch, CrEvent, CrInvalidRegion, CrRegion, CrRejected
from streams_k8s.api.base import Condition, ConditionStatus
from streams_k8s.api.consistent_region import (
    ConsistentRegionSpec,
    ConsistentRegionStatus,
    PeCompletion,
    RegionState,
)
from streams_k8s.api.spec_values import Trigger
from streams_k8s.consistent.fsm import (
    GAUGE_NAMES,
    STATUS_FIELDS,
    ArmTimer,
    BlockingCheckpointDone,
    CancelTimers,
    CheckpointDone,
    ClearBoard,
    Drain,
    EventRejected,
    Health,
    InvalidRegion,
    NotificationType,
    Notify,
    RegionMachine,
    Reset,
    ResetDone,
    Restarted,
    StepResult,
    TimerFired,
    TimerKind,
)
from streams_k8s.consistent.records import RECORD_FIELDS

NOW = 1_763_700_000_000


def periodic_spec(**overrides: object) -> ConsistentRegionSpec:
    fields: dict[str, object] = {
        "regionIndex": 3,
        "trigger": "periodic",
        "period": 2.0,
        "drainTimeout": 30.0,
        "resetTimeout": 45.0,
        "maxConsecutiveResetAttempts": 2,
        "pesInRegion": [4, 2],
        "operatorsToStartRegionMap": {"Beacon": True, "Sink": False},
        "operatorsToTriggerMap": {"Beacon": False, "Sink": False},
    }
    fields.update(overrides)
    return ConsistentRegionSpec.model_validate(fields)


def ok(m: RegionMachine, event: object, now: int = NOW) -> StepResult:
    result = m.step(event, now)  # type: ignore[arg-type]
    assert isinstance(result, StepResult)
    return result


def fire(m: RegionMachine, timer: TimerKind, now: int = NOW) -> StepResult:
    return ok(m, TimerFired(timer, m.timer_seq_id), now)


def test_the_spec_sequence_example_through_typed_objects() -> None:
    m = RegionMachine(periodic_spec())
    assert m.state is RegionState.STARTED
    r = ok(m, Health(healthy=True, clean_start=True))
    assert r.actions == (ArmTimer(TimerKind.DRAIN_PERIOD, 2000, 0),)
    assert r.persist
    r = fire(m, TimerKind.DRAIN_PERIOD)
    assert r.actions == (
        ArmTimer(TimerKind.DRAIN_TIMEOUT, 30_000, 0),
        Notify(NotificationType.TRIGGER_DRAIN, "seqId=1"),
    )
    ok(m, CheckpointDone(pe=2, seq_id=1), NOW + 100)
    r = ok(m, CheckpointDone(pe=4, seq_id=1), NOW + 300)
    assert r.actions == (
        CancelTimers(),
        ArmTimer(TimerKind.DRAIN_PERIOD, 2000, 1),
        Notify(NotificationType.RESUME_SUBMISSION, "seqId=2;retId=0;pendCkpt=0"),
    )
    assert r.gauges is not None
    assert r.gauges["average_drain_time_milliseconds"] == 300.0
    assert r.gauges["last_completed_drain_seq_id"] == 1.0
    fire(m, TimerKind.DRAIN_PERIOD)
    r = fire(m, TimerKind.DRAIN_TIMEOUT)
    assert r.notification == Notify(NotificationType.TRIGGER_RESET, "seqId=1;resetAttempt=0")
    assert m.state is RegionState.RESETTING
    ok(m, ResetDone(pe=2, seq_id=1, reset_attempt=0))
    r = ok(m, ResetDone(pe=4, seq_id=1, reset_attempt=0))
    assert r.notification == Notify(NotificationType.RESUME_SUBMISSION, "seqId=3;retId=0;pendCkpt=0")
    status = m.status()
    assert (status.current_seq_id, status.last_completed_seq_id, status.pending_seq_id) == (3, 1, 2)
    assert status.state is RegionState.PROCESSING


def test_status_is_a_valid_model_and_round_trips() -> None:
    spec = periodic_spec()
    m = RegionMachine(spec)
    ok(m, Health(True, True))
    fire(m, TimerKind.DRAIN_PERIOD, NOW)
    ok(m, BlockingCheckpointDone(pe=4, seq_id=1))
    status = m.status()
    assert status.pe_to_completion == {"2": PeCompletion.NONE, "4": PeCompletion.BLOCKING_CHECKPOINT_DONE}
    assert status.drain_start_time == NOW
    wire = status.to_wire()
    assert wire["currentSeqID"] == 1
    assert wire["peToCompletion"]["4"] == "BlockingCheckpointDone"

    restored = RegionMachine(spec, ConsistentRegionStatus.model_validate(wire))
    assert restored.status() == status
    # The restored region continues exactly where the first one was.
    a = ok(m, BlockingCheckpointDone(pe=2, seq_id=1))
    b = ok(restored, BlockingCheckpointDone(pe=2, seq_id=1))
    assert a == b
    assert a.notification == Notify(NotificationType.RESUME_SUBMISSION, "seqId=2;retId=0;pendCkpt=1")


def test_status_keeps_conditions_and_observed_generation() -> None:
    cond = Condition(
        type="Ready",
        status=ConditionStatus.TRUE,
        reason="Processing",
        last_transition_time=datetime(2026, 1, 1, tzinfo=UTC),
    )
    m = RegionMachine(periodic_spec(), ConsistentRegionStatus(observed_generation=4, conditions=[cond]))
    ok(m, Health(True, True))
    status = m.status()
    assert status.observed_generation == 4
    assert status.conditions == [cond]
    assert status.state is RegionState.PROCESSING


def test_metric_bookkeeping_survives_a_restore() -> None:
    spec = periodic_spec()
    m = RegionMachine(spec)
    ok(m, Health(True, True))
    for i in range(12):
        fire(m, TimerKind.DRAIN_PERIOD, NOW + i * 1000)
        ok(m, CheckpointDone(2, i + 1), NOW + i * 1000 + 10)
        ok(m, CheckpointDone(4, i + 1), NOW + i * 1000 + 10 * (i + 1))
    status = m.status()
    assert len(status.recent_drain_times) == 10
    assert status.avg_drain_time == sum(10.0 * k for k in range(3, 13)) / 10
    assert RegionMachine(spec, status).gauges() == m.gauges()


def test_refused_event_raises_and_changes_nothing() -> None:
    m = RegionMachine(periodic_spec())
    ok(m, Health(True, clean_start=False))
    ok(m, ResetDone(2, 0, 0))
    ok(m, ResetDone(4, 0, 0))
    assert (m.state, m.timer_seq_id) == (RegionState.PROCESSING, 2)
    before = m.status()
    with pytest.raises(EventRejected) as err:
        m.step(CheckpointDone(pe=2, seq_id=1), NOW)
    assert err.value.kind == "notExpected"
    assert str(err.value) == "checkpoint is not expected in state PROCESSING"
    with pytest.raises(EventRejected, match="PE 9 is not in this region") as err:
        m.step(ResetDone(pe=9, seq_id=0, reset_attempt=0), NOW)
    assert err.value.kind == "unknownPe"
    with pytest.raises(EventRejected, match="stale DrainPeriod timer") as err:
        m.step(TimerFired(TimerKind.DRAIN_PERIOD, m.timer_seq_id - 1), NOW)
    with pytest.raises(EventRejected, match="only accepted by operator-driven regions"):
        m.step(Drain("Beacon", 1), NOW)
    assert m.status() == before


def test_unchanged_health_needs_no_write() -> None:
    m = RegionMachine(periodic_spec())
    ok(m, Health(True, True))
    r = ok(m, Health(True, False))
    assert r == StepResult(actions=(), persist=False, gauges=None)


def test_unhealthy_clears_the_board_and_cancels_timers() -> None:
    m = RegionMachine(periodic_spec())
    ok(m, Health(True, True))
    r = ok(m, Health(False, False))
    assert r.actions == (ClearBoard(), CancelTimers())
    assert m.state is RegionState.UNHEALTHY


def test_operator_driven_drain_and_forced_reset_after_max_attempts() -> None:
    spec = periodic_spec(
        trigger="operatorDriven",
        period=None,
        maxConsecutiveResetAttempts=1,
        operatorsToTriggerMap={"Beacon": True},
    )
    assert spec.trigger is Trigger.OPERATOR_DRIVEN
    m = RegionMachine(spec)
    r = ok(m, Health(True, True))
    assert r.actions == ()
    r = ok(m, Drain("Beacon", 1))
    assert r.actions == (ArmTimer(TimerKind.DRAIN_TIMEOUT, 30_000, 0),)
    ok(m, Reset())
    r = ok(m, Reset())
    assert r.notification == Notify(NotificationType.RESET_FAILED, "seqId=0")
    with pytest.raises(EventRejected) as err:
        m.step(Reset(force=False), NOW)
    assert err.value.kind == "forceRequired"
    r = ok(m, Reset(force=True))
    assert r.notification == Notify(NotificationType.TRIGGER_RESET, "seqId=0;resetAttempt=1")


def test_coordinator_restart_forces_a_reset_once_healthy() -> None:
    spec = periodic_spec()
    m = RegionMachine(spec)
    ok(m, Health(True, True))
    fire(m, TimerKind.DRAIN_PERIOD)
    # A new coordinator process loads the persisted status and marks the restart.
    m2 = RegionMachine(spec, m.status())
    r = ok(m2, Restarted())
    assert r.actions == (CancelTimers(),)
    assert m2.state is RegionState.STARTED
    r = ok(m2, Health(True, True))
    assert r.notification == Notify(NotificationType.TRIGGER_RESET, "seqId=0;resetAttempt=0")


def test_step_many_returns_results_and_refusals_in_order() -> None:
    m = RegionMachine(periodic_spec())
    out = m.step_many(
        [
            Health(True, True),
            CheckpointDone(2, 1),
            TimerFired(TimerKind.DRAIN_PERIOD, 0),
            CheckpointDone(2, 1),
        ],
        NOW,
    )
    assert [type(o) for o in out] == [StepResult, EventRejected, StepResult, StepResult]
    assert isinstance(out[1], EventRejected)
    assert out[1].kind == "notExpected"
    assert m.status().pe_to_completion["2"] is PeCompletion.CHECKPOINT_DONE


def test_gauge_names_are_the_specs() -> None:
    assert GAUGE_NAMES == (
        "average_drain_time_milliseconds",
        "average_reset_time_milliseconds",
        "last_consistent_state_time_milliseconds",
        "last_reset_time_milliseconds",
        "last_completed_drain_seq_id",
        "last_completed_reset_seq_id",
        "state",
        "n_current_reset_attempts",
    )
    m = RegionMachine(periodic_spec())
    assert m.gauges()["last_completed_drain_seq_id"] == -1.0
    ok(m, Health(True, False))
    assert m.gauges()["state"] == 4.0
    assert m.gauges()["n_current_reset_attempts"] == 1.0


def test_invalid_descriptions_are_refused() -> None:
    with pytest.raises(InvalidRegion, match="period must be a positive number"):
        RegionMachine(periodic_spec(period=None))
    with pytest.raises(InvalidRegion, match="pesInRegion must not be empty") as err:
        RegionMachine(periodic_spec(pesInRegion=[]))
    assert err.value.field == "pesInRegion"
    bad = ConsistentRegionStatus(pe_to_completion={"7": PeCompletion.RESET_DONE})
    with pytest.raises(InvalidRegion, match="peToCompletion names PE 7, not one of the region's PEs"):
        RegionMachine(periodic_spec(), bad)
    bad = ConsistentRegionStatus(pe_to_completion={"x": PeCompletion.RESET_DONE})
    with pytest.raises(InvalidRegion, match="'x', which is not a PE id"):
        RegionMachine(periodic_spec(), bad)
    with pytest.raises(InvalidRegion, match="RESETTING region has made at least one") as err:
        RegionMachine(periodic_spec(), ConsistentRegionStatus(state=RegionState.RESETTING))
    assert err.value.field == "currentResetAttempt"
    with pytest.raises(InvalidRegion, match="currentSeqID must be below") as err:
        RegionMachine(periodic_spec(), ConsistentRegionStatus(current_seq_id=2**63))
    assert err.value.field == "currentSeqID"


def test_every_native_status_field_maps_to_a_crd_status_field() -> None:
    native = native_region().status()
    assert set(native) == set(STATUS_FIELDS)
    not_native = {"conditions", "observed_generation", *RECORD_FIELDS}
    persisted = set(ConsistentRegionStatus.model_fields) - not_native
    assert set(STATUS_FIELDS.values()) == persisted
    m = RegionMachine(periodic_spec())
    assert m.snapshot() == m.status().model_dump(mode="json", by_alias=True, exclude=not_native)


# ---- the native batch API directly ----


def native_region() -> CrRegion:
    return CrRegion(
        region_index=0,
        trigger="periodic",
        period=1.0,
        drain_timeout=5.0,
        reset_timeout=5.0,
        max_consecutive_reset_attempts=3,
        pes_in_region=[0, 1],
        operators_to_start_region_map={},
        operators_to_trigger_map={},
    )


def test_native_batch_is_a_sequence_of_steps() -> None:
    region = native_region()
    batch = region.step_many(
        [CrEvent.health(True, True), CrEvent.timer("DrainPeriod", 0), CrEvent.checkpoint(5, 1)], NOW
    )
    assert isinstance(batch, CrBatch)
    assert len(batch) == 3
    assert batch.rejected == 1
    assert batch.persist
    assert batch[1].notification == ("triggerDrain", "seqId=1")
    assert batch[-1].rejected == "unknownPe"
    assert batch[-1].error == "PE 5 is not in this region"
    assert batch[-1].notification is None
    assert not batch[-1].persist
    with pytest.raises(IndexError):
        batch[3]
    assert region.state == "DRAINING"


def test_native_step_raises_typed_rejection() -> None:
    region = native_region()
    with pytest.raises(CrRejected) as err:
        region.step(CrEvent.reset_done(0, 0, 0), NOW)
    assert err.value.kind == "notExpected"
    assert str(err.value) == "resetDone is not expected in state STARTED"


def test_native_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown timer 'Soon'"):
        CrEvent.timer("Soon", 0)
    with pytest.raises(TypeError):
        native_region().step_many([CrEvent.reset(False), "drain"], NOW)  # type: ignore[list-item]
    with pytest.raises(CrInvalidRegion, match="trigger must be") as invalid:
        CrRegion(
            region_index=0,
            trigger="operator driven",
            period=0.0,
            drain_timeout=1.0,
            reset_timeout=1.0,
            max_consecutive_reset_attempts=1,
            pes_in_region=[0],
            operators_to_start_region_map={},
            operators_to_trigger_map={},
        )
    assert (invalid.value.field, invalid.value.problem) == (
        "trigger",
        "must be 'periodic' or 'operatorDriven', got 'operator driven'",
    )
    with pytest.raises(CrInvalidRegion, match="current_seq_id cannot be read") as invalid:
        CrRegion(
            region_index=0,
            trigger="periodic",
            period=1.0,
            drain_timeout=1.0,
            reset_timeout=1.0,
            max_consecutive_reset_attempts=1,
            pes_in_region=[0],
            operators_to_start_region_map={},
            operators_to_trigger_map={},
            status={"current_seq_id": "many"},
        )
    assert invalid.value.field == "current_seq_id"
    assert CrEvent.drain("op", 1) == CrEvent.drain("op", 1)
    assert CrEvent.drain("op", 1).name == "drain"


def test_copy_is_independent() -> None:
    m = RegionMachine(periodic_spec())
    snapshot = m.copy()
    ok(m, Health(True, True))
    assert snapshot.state is RegionState.STARTED
    assert m.state is RegionState.PROCESSING
