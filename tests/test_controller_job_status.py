"""The job controller's typed view of a Job status: reads of the wire dict, and the patches it writes."""

from __future__ import annotations

from datetime import UTC, datetime

from streams_k8s.api.job import JobPhase
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.k8s.conditions import set_condition

WIRE = {
    "phase": "Failed",
    "id": 7,
    "observedGeneration": 2,
    "submissionAttempts": 3,
    "nextAttempt": "2026-11-24T10:00:05Z",
    "conditions": [{"type": "Planned", "status": "False", "reason": "PlacementFailed"}],
    "message": "PlacementFailed: no node",
}


def test_fields_read_typed_from_the_wire_names() -> None:
    status = JobStatusView.of({"status": WIRE})
    assert status.phase is JobPhase.FAILED
    assert (status.id, status.observed_generation, status.submission_attempts) == (7, 2, 3)
    assert status.next_attempt == datetime(2026, 11, 24, 10, 0, 5, tzinfo=UTC)
    assert status.condition("Planned") == WIRE["conditions"][0]
    assert status.message == "PlacementFailed: no node"


def test_missing_or_unknown_fields_read_as_none() -> None:
    status = JobStatusView.of({})
    assert (status.phase, status.id, status.next_attempt, status.generation_id) == (None, None, None, None)
    assert status.conditions == []
    assert JobStatusView({"phase": "Dreaming"}).phase is None


def test_a_changed_copy_keeps_the_fields_it_had_in_place_and_writes_them_as_the_api_server_does() -> None:
    status = JobStatusView(WIRE)
    changed = status.with_(phase=JobPhase.SUBMITTING, next_attempt=None, generation_id=0)
    assert changed.raw == {**WIRE, "phase": "Submitting", "nextAttempt": None, "generationId": 0}
    assert list(changed.raw) == [*WIRE, "generationId"]
    started = datetime(2026, 11, 24, 10, 0, 5, 123456, tzinfo=UTC)
    assert changed.with_(submission_started=started).raw["submissionStarted"] == "2026-11-24T10:00:05Z"
    assert status.raw == WIRE  # copies: the view read is unchanged


def test_conditions_are_a_copy_to_change_and_write_back() -> None:
    status = JobStatusView(WIRE)
    conditions = status.conditions
    conditions.append({"type": "Valid", "status": "True", "reason": "Validated"})
    assert len(status.conditions) == 1
    assert len(status.with_(conditions=conditions).conditions) == 2


def test_cleared_removes_every_field_in_a_merge_patch() -> None:
    assert JobStatusView(WIRE).cleared().raw == dict.fromkeys(WIRE)


def test_conditions_changed_in_place_leave_the_view_read_unchanged() -> None:
    """`set_condition` changes a condition in place: the object read (an informer's cache) must
    not change with it, or a status compared with it would never be written."""
    wire = {"conditions": [{"type": "Planned", "status": "False", "reason": "PlacementFailed"}]}
    status = JobStatusView(wire)
    conditions = status.conditions
    set_condition(conditions, "Planned", "True", "Planned")
    assert wire["conditions"][0]["status"] == "False"
    assert status.condition("Planned") == {"type": "Planned", "status": "False", "reason": "PlacementFailed"}
