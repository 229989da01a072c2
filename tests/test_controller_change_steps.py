"""The change engine's transitions, one row each: from the state its write-ahead record names and
what the rollout observed, the step `decide` takes (`controller.jobs.change_steps`)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from streams_k8s.api.job import JobPhase, UpgradeRecord
from streams_k8s.controller.jobs.change_steps import (
    Action,
    ChangeState,
    Observed,
    Step,
    decide,
    phase_after,
    phase_during,
    state_of,
)

DIGEST = "0" * 64


def record(*, rollback: bool = False, prepared: bool = False, widths: bool = False) -> UpgradeRecord:
    return UpgradeRecord(
        target_generation=2,
        spec={},
        bundle_digest=DIGEST,
        generation_id=1,
        started=datetime(2026, 1, 1, tzinfo=UTC),
        rollback=rollback,
        checkpoint="no consistent regions" if prepared else None,
        widths={"R": 2} if widths else None,
        target_widths={"R": 4} if widths else None,
    )


EDIT, PREPARED = record(), record(prepared=True)
ROLLBACK, ROLLBACK_PREPARED = record(rollback=True), record(rollback=True, prepared=True)
# a width change: the job's upgrade settings ask for its regions to be prepared, or not
WIDTH, WIDTH_PREPARED = record(widths=True), record(widths=True, prepared=True)
WIDTH_REFUSED = WIDTH_PREPARED.model_copy(
    update={"widths": {"R": 4}, "target_widths": {"R": 2}, "refused": "the API server refused Service j-9"}
)


@pytest.mark.parametrize(
    ("written", "state"),
    [
        (None, ChangeState.IDLE),
        (EDIT, ChangeState.PREPARING),
        (PREPARED, ChangeState.REPLACING),
        (ROLLBACK, ChangeState.ROLLBACK_PREPARING),
        (ROLLBACK_PREPARED, ChangeState.ROLLBACK_REPLACING),
        (WIDTH, ChangeState.PREPARING),
        (WIDTH_PREPARED, ChangeState.REPLACING),
        (WIDTH_REFUSED, ChangeState.REPLACING),
    ],
)
def test_the_state_is_named_from_the_record_as_written_today(
    written: UpgradeRecord | None, state: str
) -> None:
    # the record as the operator writes it (and as its wire form reads back after an upgrade)
    again = None if written is None else UpgradeRecord.model_validate(written.to_wire())
    assert state_of(written) == state_of(again) == state


TABLE = [
    # no record: whether an edit starts
    ("nothing edited", None, Observed(), Step(Action.NONE)),
    ("an invalid edit is refused elsewhere", None, Observed(edited=True, valid=False), Step(Action.NONE)),
    ("paused", None, Observed(edited=True, paused=True), Step(Action.PAUSE)),
    (
        "paused and settled: says paused",
        None,
        Observed(edited=True, paused=True, settled=True),
        Step(Action.PAUSE),
    ),
    ("a refused or rolled-back generation", None, Observed(edited=True, settled=True), Step(Action.NONE)),
    ("an edit", None, Observed(edited=True), Step(Action.START)),
    # no record: whether a width change starts (a region's spec.width is not its status.width)
    ("a width edited", None, Observed(resized=True), Step(Action.RESIZE)),
    ("an edit goes before a width change", None, Observed(edited=True, resized=True), Step(Action.START)),
    (
        "a width change beside an invalid edit",
        None,
        Observed(edited=True, valid=False, resized=True),
        Step(Action.RESIZE),
    ),
    (
        "a width change beside a settled edit",
        None,
        Observed(edited=True, settled=True, resized=True),
        Step(Action.RESIZE),
    ),
    (
        "a width change waits behind a paused edit",
        None,
        Observed(edited=True, paused=True, resized=True),
        Step(Action.PAUSE),
    ),
    ("a width change alone is not paused", None, Observed(paused=True, resized=True), Step(Action.RESIZE)),
    # an edit: regions first, then batches, then the commit
    ("regions to prepare", EDIT, Observed(disruptive=3, batch_size=2), Step(Action.PREPARE_REGIONS)),
    ("only quiet changes need no regions", EDIT, Observed(quiet=2), Step(Action.WAIT)),
    ("nothing left, never prepared", EDIT, Observed(), Step(Action.COMMIT)),
    ("a first batch", PREPARED, Observed(disruptive=3, batch_size=2), Step(Action.REPLACE, 2)),
    (
        "the batch less those coming up",
        PREPARED,
        Observed(disruptive=3, in_flight=1, batch_size=2),
        Step(Action.REPLACE, 1),
    ),
    (
        "a full batch coming up",
        PREPARED,
        Observed(disruptive=3, in_flight=2, batch_size=2),
        Step(Action.WAIT),
    ),
    ("the last PEs", PREPARED, Observed(disruptive=1, batch_size=4), Step(Action.REPLACE, 1)),
    ("quiet patches are waited for", PREPARED, Observed(quiet=1), Step(Action.WAIT)),
    ("pods coming up", PREPARED, Observed(in_flight=3, batch_size=4), Step(Action.WAIT)),
    ("every PE runs the target", PREPARED, Observed(batch_size=4), Step(Action.COMMIT)),
    # past submissionTimeOutInSeconds
    (
        "late, rollback allowed",
        PREPARED,
        Observed(in_flight=1, overdue=True, may_roll_back=True),
        Step(Action.ROLL_BACK),
    ),
    (
        "late before the regions",
        EDIT,
        Observed(disruptive=1, overdue=True, may_roll_back=True),
        Step(Action.ROLL_BACK),
    ),
    (
        "late, no rollback: goes on",
        PREPARED,
        Observed(disruptive=2, overdue=True, batch_size=1),
        Step(Action.REPLACE, 1, late=True),
    ),
    (
        "late, no rollback, regions",
        EDIT,
        Observed(disruptive=2, overdue=True),
        Step(Action.PREPARE_REGIONS, late=True),
    ),
    (
        "late, no rollback, waiting",
        PREPARED,
        Observed(in_flight=1, overdue=True),
        Step(Action.WAIT, late=True),
    ),
    (
        "late but nothing left: commits",
        PREPARED,
        Observed(quiet=0, overdue=True, may_roll_back=True),
        Step(Action.COMMIT),
    ),
    (
        "late with quiet patches only: waits",
        PREPARED,
        Observed(quiet=1, overdue=True, may_roll_back=True),
        Step(Action.WAIT),
    ),
    # a width change goes the same way: regions where the job asks, batches, the commit
    ("a width change prepares regions", WIDTH, Observed(disruptive=2), Step(Action.PREPARE_REGIONS)),
    (
        "a width change's batch less the PEs it adds",
        WIDTH_PREPARED,
        Observed(disruptive=3, in_flight=1, batch_size=2),
        Step(Action.REPLACE, 1),
    ),
    (
        "a width change's next batch waits for its pods",
        WIDTH_PREPARED,
        Observed(disruptive=1, in_flight=2, batch_size=2),
        Step(Action.WAIT),
    ),
    (
        "a width change commits once every PE is at it",
        WIDTH_PREPARED,
        Observed(in_flight=2, batch_size=4),
        Step(Action.COMMIT),
    ),
    (
        "a late width change goes on (it never rolls back)",
        WIDTH_PREPARED,
        Observed(disruptive=2, overdue=True, batch_size=1),
        Step(Action.REPLACE, 1, late=True),
    ),
    (
        "a refused width change goes back",
        WIDTH_REFUSED,
        Observed(disruptive=1, batch_size=1),
        Step(Action.REPLACE, 1),
    ),
    ("a refused width change is back", WIDTH_REFUSED, Observed(), Step(Action.COMMIT)),
    # a rollback goes the same way, and fails rather than loops
    ("a rollback prepares regions", ROLLBACK, Observed(disruptive=1), Step(Action.PREPARE_REGIONS)),
    ("a rollback replaces", ROLLBACK_PREPARED, Observed(disruptive=1, batch_size=1), Step(Action.REPLACE, 1)),
    ("a rollback commits", ROLLBACK_PREPARED, Observed(), Step(Action.COMMIT)),
    (
        "a late rollback fails",
        ROLLBACK_PREPARED,
        Observed(in_flight=1, overdue=True, may_roll_back=True),
        Step(Action.FAIL),
    ),
    (
        "a late rollback fails, regions unprepared",
        ROLLBACK,
        Observed(disruptive=1, overdue=True),
        Step(Action.FAIL),
    ),
]


@pytest.mark.parametrize(("why", "written", "observed", "step"), TABLE, ids=[row[0] for row in TABLE])
def test_decide(why: str, written: UpgradeRecord | None, observed: Observed, step: Step) -> None:
    assert decide(written, observed) == step


SUSPEND = UpgradeRecord.model_validate({**EDIT.to_wire(), "spec": {"state": "Suspended"}})
RESUME = UpgradeRecord.model_validate({**EDIT.to_wire(), "spec": {"state": "Running"}})
WIDTH_OF_SUSPENDED = UpgradeRecord.model_validate({**WIDTH.to_wire(), "spec": {"state": "Suspended"}})


@pytest.mark.parametrize(
    ("written", "during", "after"),
    [
        (EDIT, JobPhase.UPGRADING, JobPhase.RUNNING),
        (RESUME, JobPhase.UPGRADING, JobPhase.RUNNING),
        (SUSPEND, JobPhase.SUSPENDING, JobPhase.SUSPENDED),
        (ROLLBACK, JobPhase.ROLLING_BACK, JobPhase.ROLLED_BACK),
        (WIDTH, JobPhase.UPGRADING, JobPhase.RUNNING),
        (WIDTH_REFUSED, JobPhase.UPGRADING, JobPhase.RUNNING),
        (WIDTH_OF_SUSPENDED, JobPhase.SUSPENDING, JobPhase.SUSPENDED),
    ],
)
def test_the_jobs_phase_follows_the_record(written: UpgradeRecord, during: JobPhase, after: JobPhase) -> None:
    assert (phase_during(written), phase_after(written)) == (during, after)
