"""Label selectors, node selector terms and tolerations, as the API server validates them wherever
they appear (workload selectors, affinity, NetworkPolicy peers)."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.admission import names
from streams_k8s.sandbox.admission.field_errors import FieldErrors, child, index
from streams_k8s.sandbox.admission.metadata import validate_labels

_TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def label_selector(selector: dict[str, Any] | None, path: str, errors: FieldErrors) -> None:
    if selector is None:
        return
    validate_labels(selector.get("matchLabels"), child(path, "matchLabels"), errors)
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        _requirement(expr, index(child(path, "matchExpressions"), i), errors)


def _requirement(expr: dict[str, Any], path: str, errors: FieldErrors) -> None:
    values = _operator(expr, path, errors, node=False)
    errors.invalid_each(child(path, "key"), expr.get("key", ""), names.qualified_name(expr.get("key", "")))
    for i, value in enumerate(values):
        errors.invalid_each(index(child(path, "values"), i), value, names.label_value(value))


def _operator(expr: dict[str, Any], path: str, errors: FieldErrors, node: bool) -> list[str]:
    """The operator and how many values it takes (node selectors also have Gt and Lt)."""
    operator, values = expr.get("operator", ""), expr.get("values") or []
    if operator in ("In", "NotIn"):
        if not values:
            errors.required(child(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'")
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errors.forbidden(
                child(path, "values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
    elif node and operator in ("Gt", "Lt"):
        if len(values) != 1:
            errors.required(
                child(path, "values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"
            )
    else:
        errors.invalid(child(path, "operator"), operator, "not a valid selector operator")
    return list(values)


def node_selector_term(term: dict[str, Any], path: str, errors: FieldErrors) -> None:
    for i, expr in enumerate(term.get("matchExpressions") or []):
        at = index(child(path, "matchExpressions"), i)
        _operator(expr, at, errors, node=True)
        errors.invalid_each(child(at, "key"), expr.get("key", ""), names.qualified_name(expr.get("key", "")))
    for i, expr in enumerate(term.get("matchFields") or []):
        at = index(child(path, "matchFields"), i)
        if expr.get("key") != "metadata.name":
            errors.invalid(child(at, "key"), expr.get("key", ""), "not a valid field selector key")
        _operator(expr, at, errors, node=True)


def tolerations(items: list[dict[str, Any]], path: str, errors: FieldErrors) -> None:
    for i, toleration in enumerate(items):
        at = index(path, i)
        key, operator = toleration.get("key", ""), toleration.get("operator", "")
        effect, value = toleration.get("effect", ""), toleration.get("value", "")
        if key:
            errors.invalid_each(child(at, "key"), key, names.qualified_name(key))
        if not key and operator != "Exists":
            errors.invalid(
                child(at, "operator"),
                operator,
                'operator must be Exists when `key` is empty, which means "match all values and all keys"',
            )
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errors.invalid(
                child(at, "effect"), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"
            )
        if operator in ("Equal", ""):
            messages = names.label_value(value)
            if messages:
                errors.invalid(child(at, "operator"), value, ";".join(messages))
        elif operator == "Exists":
            if value:
                errors.invalid(
                    child(at, "operator"), toleration, "value must be empty when `operator` is 'Exists'"
                )
        else:
            errors.not_supported(child(at, "operator"), operator, ["Equal", "Exists"])
        if effect:
            taint_effect(effect, child(at, "effect"), errors)


def taint_effect(effect: str, path: str, errors: FieldErrors) -> None:
    if effect not in _TAINT_EFFECTS:
        errors.not_supported(path, effect, _TAINT_EFFECTS)
