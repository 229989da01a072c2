"""Property tests of the native FSM over random event sequences, with the pure-Python table
implementation (tests/cr_fsm_reference.py) as a differential oracle. Along the way the region is
now and then rebuilt from its persisted status alone, as a restarted coordinator would."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cr_fsm_reference import ReferenceRegion
from streams_k8s._native import CrEvent, CrRegion, CrRejected, CrStep

OPERATORS = ("src", "mid", "ghost")


def native_event(event: tuple[Any, ...]) -> CrEvent:
    kind, *args = event
    build = {
        "health": CrEvent.health,
        "checkpoint": CrEvent.checkpoint,
        "blockingCheckpoint": CrEvent.blocking_checkpoint,
        "resetDone": CrEvent.reset_done,
        "drain": CrEvent.drain,
        "reset": CrEvent.reset,
        "timer": CrEvent.timer,
        "restarted": CrEvent.restarted,
    }[kind]
    return build(*args)  # type: ignore[operator, no-any-return]


@st.composite
def regions(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "trigger": draw(st.sampled_from(["periodic", "operatorDriven"])),
        "period": 1.5,
        "drain_timeout": 10.0,
        "reset_timeout": 20.0,
        "max_consecutive_reset_attempts": draw(st.integers(1, 3)),
        "pes_in_region": draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)),
        "operators_to_start_region_map": {"src": True, "mid": False},
        "operators_to_trigger_map": {"src": True, "mid": False},
    }


def expected_event(status: dict[str, Any], pes: list[int], pick: int) -> tuple[Any, ...] | None:
    """The event that moves the region on in its current state (a cooperative runtime)."""
    state, slots = status["state"], status["completion"]
    waiting = [pe for pe in pes if slots[str(pe)] == "None"]
    if state in ("STARTED", "UNHEALTHY"):
        return ("health", True, pick % 2 == 0)
    if state == "PROCESSING":
        if pick % 2:
            return ("drain", "src", status["current_seq_id"])
        return ("timer", "DrainPeriod", status["current_timer_seq_id"])
    if state == "DRAINING" and waiting:
        kind = "checkpoint" if pick % 2 else "blockingCheckpoint"
        return (kind, waiting[pick % len(waiting)], status["current_seq_id"])
    if state == "CHECKPOINT_PENDING":
        blocked = [pe for pe in pes if slots[str(pe)] == "BlockingCheckpointDone"]
        if blocked:
            return ("checkpoint", blocked[pick % len(blocked)], status["pending_seq_id"])
    if state == "RESETTING" and waiting:
        pe = waiting[pick % len(waiting)]
        return ("resetDone", pe, status["last_completed_seq_id"], status["current_reset_attempt"] - 1)
    if state == "MAXIMUM_RESET_ATTEMPTS_REACHED":
        return ("reset", True)
    return None


def plausible_event(draw: st.DrawFn, status: dict[str, Any], pes: list[int]) -> tuple[Any, ...]:
    """Mostly what the region expects, so that sequences go deep, else near-misses and junk."""
    if draw(st.integers(0, 9)) < 7:
        expected = expected_event(status, pes, draw(st.integers(0, 5)))
        if expected is not None:
            return expected
    current, pending = status["current_seq_id"], status["pending_seq_id"]
    last, attempt = status["last_completed_seq_id"], status["current_reset_attempt"]
    timer_seq = status["current_timer_seq_id"]
    pe = draw(st.sampled_from([*pes, *pes, *pes, 42]))
    kind = draw(
        st.sampled_from(
            [
                *("health", "checkpoint", "checkpoint", "blockingCheckpoint", "resetDone", "resetDone"),
                *("drain", "reset", "timer", "timer", "restarted"),
            ]
        )
    )
    if kind == "health":
        return ("health", draw(st.booleans()), draw(st.booleans()))
    if kind in ("checkpoint", "blockingCheckpoint"):
        return (kind, pe, draw(st.sampled_from([current, pending, current + 1, max(current - 1, 0)])))
    if kind == "resetDone":
        return (
            kind,
            pe,
            draw(st.sampled_from([last, last, last + 1])),
            max(attempt - draw(st.sampled_from([1, 1, 0])), 0),
        )
    if kind == "drain":
        return (kind, draw(st.sampled_from(OPERATORS)), draw(st.sampled_from([current, current + 1])))
    if kind == "reset":
        return (kind, draw(st.booleans()))
    if kind == "timer":
        name = draw(st.sampled_from(["DrainPeriod", "DrainTimeout", "ResetTimeout"]))
        return (kind, name, max(timer_seq + draw(st.sampled_from([0, 0, 0, -1, 1])), 0))
    return ("restarted",)


def actions_of(step: CrStep) -> tuple[Any, ...]:
    return (step.clear_board, step.cancel_timers, step.arm, step.notification)


def reference_outcome(reference: ReferenceRegion, event: tuple[Any, ...]) -> tuple[Any, ...]:
    a = reference.try_step(event)
    if isinstance(a, str):
        return ("refused", a)
    return ("accepted", (a.clear_board, a.cancel_timers, a.arm, a.notification))


SEQ_FIELDS = ("current_seq_id", "last_completed_seq_id", "pending_seq_id", "to_retire_seq_id")
FSM_FIELDS = (
    "state",
    "region_healthy",
    "clean_start",
    "must_reset",
    "healthy_first_time",
    "current_reset_attempt",
    "current_max_reset_attempts",
    *SEQ_FIELDS,
    "current_timer_seq_id",
    "completion",
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=regions(), data=st.data())
def test_random_sequences_keep_the_invariants_and_match_the_reference(
    config: dict[str, Any], data: st.DataObject
) -> None:
    native = CrRegion(region_index=0, **config)
    reference = ReferenceRegion.from_config(config)
    pes = native.pes
    max_attempts = config["max_consecutive_reset_attempts"]
    resets_since_success = 0
    for now in range(80):
        before = native.status()
        if data.draw(st.integers(0, 9)) == 0:
            # A new coordinator process continues from the persisted status alone.
            native = CrRegion(region_index=0, status=before, **config)
            assert native.status() == before
        event = plausible_event(data.draw, before, pes)
        try:
            step: CrStep | None = native.step(native_event(event), now)
            got: tuple[Any, ...] = ("accepted", actions_of(step))
        except CrRejected as err:
            step = None
            got = ("refused", err.kind)
            # A refused event changes nothing.
            assert native.status() == before, event
        assert got == reference_outcome(reference, event), event
        after = native.status()
        assert {k: after[k] for k in FSM_FIELDS} == reference.snapshot(), event
        if step is None:
            continue

        # The write is skipped exactly when nothing persisted changed.
        assert step.persist == (after != before), event
        # Sequence ids never go back.
        for f in SEQ_FIELDS:
            assert after[f] >= before[f], (f, event)
        assert after["current_timer_seq_id"] >= before["current_timer_seq_id"]
        note = step.notification
        if note is not None and note[0] in ("resumeSubmission", "drained"):
            # Resume only once every PE of the region has checkpointed or reset.
            assert event[0] in ("checkpoint", "blockingCheckpoint", "resetDone"), event
            reported = {int(pe) for pe, slot in before["completion"].items() if slot != "None"}
            assert reported | {event[1]} == set(pes), event
        # Reset attempts are bounded by the limit until a forced reset raises it.
        if event[0] == "reset" and event[1]:
            resets_since_success = 0
        if note is not None and note[0] == "triggerReset":
            resets_since_success += 1
            assert resets_since_success <= max_attempts, event
        if (
            note is not None
            and note[0] in ("resumeSubmission", "drained")
            and after["current_reset_attempt"] == 0
        ):
            resets_since_success = 0
        assert after["current_reset_attempt"] <= after["current_max_reset_attempts"]


@settings(max_examples=100, deadline=None)
@given(config=regions(), data=st.data())
def test_batch_equals_one_by_one(config: dict[str, Any], data: st.DataObject) -> None:
    one = CrRegion(region_index=0, **config)
    events = []
    for _ in range(40):
        event = plausible_event(data.draw, one.status(), one.pes)
        events.append(native_event(event))
        with contextlib.suppress(CrRejected):
            one.step(events[-1], 7)
    batched = CrRegion(region_index=0, **config)
    batch = batched.step_many(events, 7)
    assert len(batch) == len(events)
    assert batched.status() == one.status()
