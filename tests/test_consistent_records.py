"""What a region's status keeps beyond the FSM: asked-for checkpoints and the sequence id that
answered them, start requests, and the bounded history of checkpoints and resets."""

from __future__ import annotations

from streams_k8s.api.consistent_region import (
    HISTORY_LENGTH,
    ConsistentRegionSpec,
    HistoryKind,
    RegionState,
    StartMode,
)
from streams_k8s.consistent.fsm import (
    CheckpointDone,
    CheckpointNow,
    Health,
    HoldDrains,
    NotificationType,
    RegionMachine,
    ResetDone,
    Start,
    StepResult,
    TimerFired,
    TimerKind,
)

NOW = 1_763_700_000_000
PES = (2, 4)


def spec() -> ConsistentRegionSpec:
    return ConsistentRegionSpec.model_validate(
        {
            "regionIndex": 0,
            "trigger": "periodic",
            "period": 2.0,
            "drainTimeout": 30.0,
            "resetTimeout": 45.0,
            "pesInRegion": list(PES),
            "operatorsToStartRegionMap": {"src": True},
        }
    )


def processing() -> RegionMachine:
    m = RegionMachine(spec())
    m.step(Health(healthy=True, clean_start=True), NOW)
    assert m.state is RegionState.PROCESSING
    return m


def checkpoint(m: RegionMachine, now: int) -> int:
    """One periodic drain, answered by every PE at ``now``; its sequence id."""
    m.step(TimerFired(TimerKind.DRAIN_PERIOD, m.timer_seq_id), now - 40)
    seq_id = int(m.snapshot()["currentSeqID"])
    for pe in PES:
        m.step(CheckpointDone(pe, seq_id), now)
    return seq_id


def test_an_asked_for_checkpoint_is_answered_by_the_next_completed_one_and_written_at_once() -> None:
    m = processing()
    first = checkpoint(m, NOW + 1000)
    asked = m.step(CheckpointNow("n1"), NOW + 2000)
    assert asked.persist
    assert asked.notification is not None
    assert asked.notification.type is NotificationType.TRIGGER_DRAIN
    status = m.status()
    assert status.checkpoint_request is not None
    assert (status.checkpoint_request.nonce, status.checkpoint_request.seq_id) == ("n1", None)
    assert status.checkpoint_requested
    for pe in PES:
        m.step(CheckpointDone(pe, first + 1), NOW + 2500)
    status = m.status()
    assert status.checkpoint_request is not None
    assert status.checkpoint_request.seq_id == first + 1
    assert status.checkpoint_request.completed == NOW + 2500
    assert not status.checkpoint_requested
    entry = status.history[-1]
    assert (entry.kind, entry.seq_id, entry.completion, entry.duration) == (
        HistoryKind.CHECKPOINT,
        first + 1,
        NOW + 2500,
        500,
    )
    # A later checkpoint does not re-answer it.
    checkpoint(m, NOW + 5000)
    assert m.status().checkpoint_request == status.checkpoint_request


def test_the_history_keeps_the_last_entries_of_both_kinds_and_survives_a_restart() -> None:
    m = processing()
    for i in range(HISTORY_LENGTH + 5):
        checkpoint(m, NOW + 1000 * (i + 1))
    status = m.status()
    assert len(status.history) == HISTORY_LENGTH
    assert [e.seq_id for e in status.history] == list(range(6, HISTORY_LENGTH + 6))
    # A reset completes: it is recorded as such, with its own duration.
    m.step(Start("s", StartMode.RESET), NOW + 100_000)
    m.step(Health(healthy=False), NOW + 100_001)
    m.step(Health(healthy=True, clean_start=False), NOW + 100_002)
    assert m.state is RegionState.RESETTING
    last = int(m.snapshot()["lastCompletedSeqID"])
    for pe in PES:
        m.step(ResetDone(pe, last, 0), NOW + 100_302)
    restored = RegionMachine(spec(), m.status())
    history = restored.status().history
    assert len(history) == HISTORY_LENGTH
    assert (history[-1].kind, history[-1].seq_id, history[-1].duration) == (HistoryKind.RESET, last, 300)
    assert restored.status().start_request is not None
    assert restored.status().start_request.nonce == "s"  # type: ignore[union-attr]


def test_a_hold_and_a_start_request_are_persisted_with_the_fsm_state() -> None:
    m = processing()
    held = m.step(HoldDrains(held=True), NOW + 1)
    assert held.persist
    assert m.drains_held
    again = RegionMachine(spec(), m.status())
    assert again.drains_held
    period = again.step(TimerFired(TimerKind.DRAIN_PERIOD, again.timer_seq_id), NOW + 2)
    assert period.notification is None
    assert again.state is RegionState.PROCESSING
    # A start request the FSM already agrees with is still written, so it is not taken twice.
    start = again.step(Start("u1", StartMode.RESET), NOW + 3)
    assert isinstance(start, StepResult)
    assert start.persist
    assert again.status().start_request is not None


def test_step_many_records_like_step() -> None:
    m = processing()
    results = m.step_many([CheckpointNow("batch"), CheckpointDone(2, 1), CheckpointDone(4, 1)], NOW + 10)
    assert all(isinstance(r, StepResult) for r in results)
    request = m.status().checkpoint_request
    assert request is not None
    assert (request.nonce, request.seq_id) == ("batch", 1)
