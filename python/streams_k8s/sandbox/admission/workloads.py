"""Deployments and StatefulSets: selectors that match their templates, strategies, replica counts,
and the fields an update may not change (selectors; a StatefulSet's service and claims)."""

from __future__ import annotations

import re
from typing import Any

from streams_k8s.sandbox.admission import metadata, names, pods, selectors
from streams_k8s.sandbox.admission.field_errors import FieldErrors, GoJson, child, go_struct
from streams_k8s.sandbox.selectors import LabelSelector, selector_from_spec

_PERCENT = re.compile(r"^[0-9]+%$")
_NONNEGATIVE = "must be greater than or equal to 0"
# What a StatefulSet update may not change (in 1.37 the rest of its spec may change).
_STATEFULSET_IMMUTABLE = ("selector", "volumeClaimTemplates", "serviceName", "podManagementPolicy")


def _nonnegative(spec: dict[str, Any], field: str, path: str, errors: FieldErrors) -> None:
    value = spec.get(field)
    if value is not None and value < 0:
        errors.invalid(child(path, field), value, _NONNEGATIVE)


def printed_selector(selector: dict[str, Any]) -> GoJson:
    """A LabelSelector as it marshals (empty fields left out)."""
    fields = ("matchLabels", "matchExpressions")
    return go_struct(**{f: selector[f] for f in fields if selector.get(f)})


def _selector(spec: dict[str, Any], kind: str, errors: FieldErrors) -> LabelSelector | None:
    selector = spec.get("selector")
    if selector is None:
        errors.required("spec.selector")
        return None
    selectors.label_selector(selector, "spec.selector", errors)
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errors.invalid("spec.selector", printed_selector(selector), f"empty selector is invalid for {kind}")
        return None
    valid_operators = ("In", "NotIn", "Exists", "DoesNotExist")
    if any(e.get("operator") not in valid_operators for e in selector.get("matchExpressions") or []):
        return None  # reported above
    return selector_from_spec(selector)


def _template_matches(
    spec: dict[str, Any], selector: LabelSelector | None, path: str, errors: FieldErrors
) -> None:
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if selector is not None and not selector.matches(labels):
        errors.invalid(path, labels, "`selector` does not match template `labels`")


def _template_restart_and_deadline(spec: dict[str, Any], kind: str, errors: FieldErrors) -> None:
    template_spec = (spec.get("template") or {}).get("spec") or {}
    policy = template_spec.get("restartPolicy", "Always")
    if policy != "Always":
        errors.not_supported("spec.template.spec.restartPolicy", policy, ["Always"])
    if template_spec.get("activeDeadlineSeconds") is not None:
        errors.forbidden(
            "spec.template.spec.activeDeadlineSeconds", f"activeDeadlineSeconds in {kind} is not Supported"
        )


# -- Deployments ----------------------------------------------------------------------------------


def validate_deployment(deployment: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(deployment["metadata"], names.name_is_dns_subdomain, True, errors)
    spec = deployment.get("spec") or {}
    _nonnegative(spec, "replicas", "spec", errors)
    selector = _selector(spec, "deployment", errors)
    _template_matches(spec, selector, "spec.template.metadata.labels", errors)
    pods.validate_template(spec.get("template") or {}, "spec.template", errors)
    _template_restart_and_deadline(spec, "ReplicaSet", errors)
    _strategy(spec.get("strategy") or {}, errors)
    for field in ("minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"):
        _nonnegative(spec, field, "spec", errors)
    deadline = spec.get("progressDeadlineSeconds")
    if deadline is not None and deadline <= spec.get("minReadySeconds", 0):
        errors.invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds")


def _strategy(strategy: dict[str, Any], errors: FieldErrors) -> None:
    kind = strategy.get("type", "RollingUpdate")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            errors.forbidden(
                "spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"
            )
    elif kind == "RollingUpdate":
        if rolling is None:
            errors.required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil")
            return
        path = "spec.strategy.rollingUpdate"
        unavailable, surge = rolling.get("maxUnavailable", "25%"), rolling.get("maxSurge", "25%")
        _int_or_percent(unavailable, child(path, "maxUnavailable"), errors)
        _int_or_percent(surge, child(path, "maxSurge"), errors)
        if _amount(unavailable) == 0 and _amount(surge) == 0:
            errors.invalid(child(path, "maxUnavailable"), unavailable, "may not be 0 when `maxSurge` is 0")
        _at_most_100_percent(unavailable, child(path, "maxUnavailable"), errors)
    else:
        errors.not_supported("spec.strategy", strategy, ["Recreate", "RollingUpdate"])


def _int_or_percent(value: Any, path: str, errors: FieldErrors) -> None:
    if isinstance(value, str):
        if not _PERCENT.match(value):
            errors.invalid(
                path,
                value,
                names.regex_error(
                    "a valid percent string must be a numeric string followed by an ending '%'",
                    "[0-9]+%",
                    "1%",
                    "93%",
                ),
            )
    elif value < 0:
        errors.invalid(path, value, _NONNEGATIVE)


def _amount(value: Any) -> int:
    if isinstance(value, str):
        return int(value[:-1]) if _PERCENT.match(value) else 0
    return int(value)


def _at_most_100_percent(value: Any, path: str, errors: FieldErrors) -> None:
    if isinstance(value, str) and _PERCENT.match(value) and int(value[:-1]) > 100:
        errors.invalid(path, value, "must not be greater than 100%")


def validate_deployment_update(deployment: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(deployment["metadata"], old["metadata"], errors)
    validate_deployment(deployment, errors)
    selector = (deployment.get("spec") or {}).get("selector")
    if selector != (old.get("spec") or {}).get("selector"):
        errors.immutable("spec.selector", printed_selector(selector or {}))


# -- StatefulSets ---------------------------------------------------------------------------------


def validate_statefulset(statefulset: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(statefulset["metadata"], names.name_is_dns_label, True, errors)
    _statefulset_spec(statefulset.get("spec") or {}, errors)


def _statefulset_spec(spec: dict[str, Any], errors: FieldErrors, check_template: bool = True) -> None:
    """`check_template`: the pod template is validated too (an update of a StatefulSet stored
    with a template now invalid is not, as kube-apiserver tolerates it)."""
    policy = spec.get("podManagementPolicy", "")
    if not policy:
        errors.required("spec.podManagementPolicy")
    elif policy not in ("OrderedReady", "Parallel"):
        errors.invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")
    strategy = spec.get("updateStrategy") or {}
    kind = strategy.get("type", "")
    if not kind:
        errors.required("spec.updateStrategy")
    elif kind == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            errors.invalid(
                "spec.updateStrategy.rollingUpdate",
                strategy["rollingUpdate"],
                "only allowed for updateStrategy 'RollingUpdate'",
            )
    elif kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate") or {}
        _nonnegative(rolling, "partition", "spec.updateStrategy.rollingUpdate", errors)
        if rolling.get("maxUnavailable") is not None:
            path = "spec.updateStrategy.rollingUpdate.maxUnavailable"
            _int_or_percent(rolling["maxUnavailable"], path, errors)
            if _amount(rolling["maxUnavailable"]) == 0:
                errors.invalid(path, rolling["maxUnavailable"], "cannot be 0")
            _at_most_100_percent(rolling["maxUnavailable"], path, errors)
    else:
        errors.invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'")
    retention = spec.get("persistentVolumeClaimRetentionPolicy") or {}
    for field in ("whenDeleted", "whenScaled"):
        value = retention.get(field, "Retain")
        if value not in ("Retain", "Delete"):
            errors.not_supported(
                f"spec.persistentVolumeClaimRetentionPolicy.{field}", value, ["Retain", "Delete"]
            )
    _nonnegative(spec, "replicas", "spec", errors)
    _nonnegative(spec, "minReadySeconds", "spec", errors)
    start = (spec.get("ordinals") or {}).get("start")
    if start is not None and start < 0:
        errors.invalid("spec.ordinals.start", start, _NONNEGATIVE)
    selector = _selector(spec, "statefulset", errors)
    template = spec.get("template") or {}
    _template_matches(spec, selector, "spec.template.metadata.labels", errors)
    if check_template:
        # hostname and subdomain are the controller's to set on each pod
        pod_spec = {
            k: v for k, v in (template.get("spec") or {}).items() if k not in ("hostname", "subdomain")
        }
        pods.validate_template({**template, "spec": pod_spec}, "spec.template", errors)
    meta = template.get("metadata") or {}
    metadata.validate_labels(meta.get("labels"), "spec.template.labels", errors)
    metadata.validate_annotations(meta.get("annotations"), "spec.template.annotations", errors)
    _template_restart_and_deadline(spec, "StatefulSet", errors)


def validate_statefulset_update(
    statefulset: dict[str, Any], old: dict[str, Any], errors: FieldErrors
) -> None:
    metadata.validate_update(statefulset["metadata"], old["metadata"], errors)
    spec, old_spec = statefulset.get("spec") or {}, old.get("spec") or {}
    old_errors = FieldErrors()
    _statefulset_spec(old_spec, old_errors)
    _statefulset_spec(spec, errors, check_template=not old_errors.all())
    for field in _STATEFULSET_IMMUTABLE:
        if spec.get(field) != old_spec.get(field):
            value = spec.get(field)
            errors.immutable(
                child("spec", field), printed_selector(value or {}) if field == "selector" else value
            )
