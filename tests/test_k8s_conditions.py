"""Conditions helper: lastTransitionTime moves only on status changes; works with the API models."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from streams_k8s.api.base import Condition, ConditionStatus
from streams_k8s.k8s.conditions import (
    find_condition,
    is_condition_true,
    remove_condition,
    set_condition,
    set_observed_generation,
)

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_new_condition_gets_a_transition_time() -> None:
    conditions: list[dict[str, object]] = []
    assert set_condition(conditions, "Ready", "False", "Pending", "waiting for pods", 1, now=T0)
    assert conditions == [
        {
            "type": "Ready",
            "status": "False",
            "reason": "Pending",
            "message": "waiting for pods",
            "observedGeneration": 1,
            "lastTransitionTime": "2026-01-01T12:00:00Z",
        }
    ]


def test_same_status_keeps_the_transition_time_and_updates_the_rest() -> None:
    conditions: list[dict[str, object]] = []
    set_condition(conditions, "Ready", "False", "Pending", "0/3 pods", 1, now=T0)
    later = T0 + timedelta(minutes=5)
    assert set_condition(conditions, "Ready", "False", "Pending", "2/3 pods", 2, now=later)
    ready = find_condition(conditions, "Ready")
    assert ready is not None
    assert ready["lastTransitionTime"] == "2026-01-01T12:00:00Z"
    assert ready["message"] == "2/3 pods"
    assert ready["observedGeneration"] == 2


def test_unchanged_condition_reports_no_change() -> None:
    conditions: list[dict[str, object]] = []
    set_condition(conditions, "Ready", "True", "Running", "", 3, now=T0)
    assert not set_condition(conditions, "Ready", "True", "Running", "", 3, now=T0 + timedelta(hours=1))


def test_status_change_moves_the_transition_time() -> None:
    conditions: list[dict[str, object]] = []
    set_condition(conditions, "Ready", "False", "Pending", now=T0)
    set_condition(conditions, "Ready", "True", "Running", now=T0 + timedelta(seconds=30))
    assert conditions[0]["lastTransitionTime"] == "2026-01-01T12:00:30Z"
    assert is_condition_true(conditions, "Ready")
    assert not is_condition_true(conditions, "Degraded")


def test_conditions_are_independent_and_removable() -> None:
    conditions: list[dict[str, object]] = []
    set_condition(conditions, "Ready", "True", "Running", now=T0)
    set_condition(conditions, "Degraded", "False", "Healthy", now=T0)
    assert [c["type"] for c in conditions] == ["Ready", "Degraded"]
    assert remove_condition(conditions, "Ready")
    assert not remove_condition(conditions, "Ready")
    assert [c["type"] for c in conditions] == ["Degraded"]


def test_bad_input_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="True, False or Unknown"):
        set_condition([], "Ready", "yes", "Running")
    with pytest.raises(ValueError, match="reason"):
        set_condition([], "Ready", "True", "")


def test_round_trip_through_the_api_condition_model() -> None:
    """Controllers keep models; the helper works on their wire form and back."""
    models = [
        Condition(
            type="Ready",
            status=ConditionStatus.FALSE,
            reason="Pending",
            message="",
            last_transition_time=T0,
            observed_generation=1,
        )
    ]
    wire = [c.to_wire() for c in models]
    set_condition(wire, "Ready", "True", "Running", "all PEs connected", 2, now=T0 + timedelta(minutes=1))
    back = [Condition.model_validate(c) for c in wire]
    assert back[0].status is ConditionStatus.TRUE
    assert back[0].last_transition_time == T0 + timedelta(minutes=1)
    assert back[0].observed_generation == 2


def test_observed_generation_follows_the_object() -> None:
    status: dict[str, object] = {}
    assert set_observed_generation(status, {"metadata": {"generation": 4}})
    assert status == {"observedGeneration": 4}
    assert not set_observed_generation(status, {"metadata": {"generation": 4}})
