"""Status conditions as Kubernetes keeps them: one per type, lastTransitionTime kept while the
status value is unchanged."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.clock import now


def set_condition(
    status: dict[str, Any], kind: str, value: str, reason: str | None = None, message: str | None = None
) -> None:
    conditions = status.get("conditions") or []
    previous = next((c for c in conditions if c.get("type") == kind), None)
    condition: dict[str, Any] = {"type": kind, "status": value}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    unchanged = previous is not None and previous.get("status") == value
    condition["lastTransitionTime"] = previous["lastTransitionTime"] if unchanged and previous else now()
    status["conditions"] = [c for c in conditions if c.get("type") != kind] + [condition]
