"""Standard status conditions (metav1.Condition) on plain dicts.

Works on the wire form, so any model with ``to_wire``/``model_validate`` (for example
``streams_k8s.api.base.Condition``) round-trips through it without this module importing it.
``lastTransitionTime`` moves only when ``status`` changes; reason, message and
``observedGeneration`` are updated in place.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableSequence
from datetime import UTC, datetime
from typing import Any

ConditionDict = dict[str, Any]


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with second precision, as the API server writes metav1.Time."""
    return moment.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    """A Time as the API server writes it (`format_time`), None for none."""
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None


def find_condition(conditions: Iterable[ConditionDict] | None, type_: str) -> ConditionDict | None:
    for condition in conditions or ():
        if condition.get("type") == type_:
            return condition
    return None


def is_condition_true(conditions: Iterable[ConditionDict] | None, type_: str) -> bool:
    condition = find_condition(conditions, type_)
    return condition is not None and condition.get("status") == "True"


def set_condition(
    conditions: MutableSequence[ConditionDict],
    type_: str,
    status: str,
    reason: str,
    message: str = "",
    observed_generation: int | None = None,
    now: datetime | None = None,
) -> bool:
    """Set one condition in place; return whether anything a reader sees changed."""
    if status not in ("True", "False", "Unknown"):
        raise ValueError(f"condition status must be True, False or Unknown, not {status!r}")
    if not reason:
        raise ValueError("a condition needs a reason (CamelCase, e.g. 'Reconciled')")
    wanted: ConditionDict = {"type": type_, "status": status, "reason": reason, "message": message}
    if observed_generation is not None:
        wanted["observedGeneration"] = observed_generation
    current = find_condition(conditions, type_)
    if current is None:
        wanted["lastTransitionTime"] = format_time(now or datetime.now(UTC))
        conditions.append(wanted)
        return True
    if current.get("status") != status:
        wanted["lastTransitionTime"] = format_time(now or datetime.now(UTC))
    else:
        wanted["lastTransitionTime"] = current.get("lastTransitionTime") or format_time(
            now or datetime.now(UTC)
        )
    if all(current.get(k) == v for k, v in wanted.items()) and (
        observed_generation is not None or "observedGeneration" not in current
    ):
        return False
    current.clear()
    current.update(wanted)
    return True


def remove_condition(conditions: MutableSequence[ConditionDict], type_: str) -> bool:
    for index, condition in enumerate(conditions):
        if condition.get("type") == type_:
            del conditions[index]
            return True
    return False


def set_observed_generation(status: dict[str, Any], obj: dict[str, Any]) -> bool:
    """Record the generation this status was computed from; return whether it changed."""
    generation = (obj.get("metadata") or {}).get("generation")
    if generation is None or status.get("observedGeneration") == generation:
        return False
    status["observedGeneration"] = generation
    return True
