"""Telling a pod the cluster took from one a user deleted (`controller.pes.disruption`)."""

from __future__ import annotations

from typing import Any

import pytest

from streams_k8s.controller.pes.disruption import disruption


def pod(
    conditions: list[dict[str, Any]] | None = None, reason: str | None = None, **spec: Any
) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": conditions or []}
    if reason:
        status["reason"] = reason
    return {"spec": {"nodeName": "n1", **spec}, "status": status}


def node(
    unschedulable: bool = False, taints: list[dict[str, str]] = (), ready: str = "True"
) -> dict[str, Any]:  # type: ignore[assignment]
    return {
        "spec": {"unschedulable": unschedulable, "taints": list(taints)},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


@pytest.mark.parametrize(
    "reason", ["EvictionByEvictionAPI", "PreemptionByScheduler", "DeletionByTaintManager", "DeletionByPodGC"]
)
def test_the_disruption_target_condition_names_the_cause(reason: str) -> None:
    taken = pod([{"type": "DisruptionTarget", "status": "True", "reason": reason}])
    assert disruption(taken, "n1", node()) == reason


def test_an_evicted_pod_without_the_condition_is_still_taken() -> None:
    assert disruption(pod(reason="Evicted"), "n1", node()) == "Evicted"


@pytest.mark.parametrize(
    ("state", "why"),
    [
        (None, "NodeGone"),
        (node(unschedulable=True), "NodeCordoned"),
        (node(ready="Unknown"), "NodeNotReady"),
        (node(taints=[{"key": "maintenance", "effect": "NoExecute"}]), "NoExecuteTaint(maintenance)"),
    ],
)
def test_the_state_of_the_node_tells_when_the_pod_cannot(state: dict[str, Any] | None, why: str) -> None:
    assert disruption(None, "n1", state) == why
    assert disruption(pod(), "n1", state) == why


def test_a_plain_deletion_on_a_healthy_node_is_a_users() -> None:
    assert disruption(pod(), "n1", node()) is None
    assert disruption(None, None, None) is None  # never scheduled: nothing says the cluster took it


def test_a_tolerated_no_execute_taint_takes_nothing() -> None:
    taint = {"key": "maintenance", "effect": "NoExecute"}
    tolerant = pod(tolerations=[{"key": "maintenance", "operator": "Exists", "effect": "NoExecute"}])
    assert disruption(tolerant, "n1", node(taints=[taint])) is None
