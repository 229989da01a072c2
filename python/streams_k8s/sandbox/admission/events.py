"""Events, validated in their stored core/v1 form: the legacy rules every Event passes, and the
stricter ones for Events written through events.k8s.io/v1 (required reporting fields, length limits,
what an update may not change)."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.admission import metadata, names
from streams_k8s.sandbox.admission.field_errors import FieldErrors

_REPORTING_INSTANCE_MAX = 128
_ACTION_MAX = 128
_REASON_MAX = 128
_NOTE_MAX = 1024
_IMMUTABLE = (
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
)


def validate_event(event: dict[str, Any], strict: bool, errors: FieldErrors) -> None:
    """`strict`: written through events.k8s.io (field names are that API's)."""
    _legacy(event, strict, errors)
    if not strict:
        # core/v1 Events only get the checks every kind gets (names as URL path segments).
        metadata.validate(event["metadata"], names.name_is_path_segment, True, errors)
        return
    metadata.validate(event["metadata"], names.name_is_dns_subdomain, True, errors)
    if not event.get("eventTime"):
        errors.required("eventTime")
    if event.get("type") not in ("Normal", "Warning"):
        errors.invalid("type", "", f"has invalid value: {event.get('type', '')}")
    for core, new in (
        ("firstTimestamp", "deprecatedFirstTimestamp"),
        ("lastTimestamp", "deprecatedLastTimestamp"),
        ("count", "deprecatedCount"),
    ):
        if event.get(core):
            errors.invalid(new, "", "needs to be unset")
    if any((event.get("source") or {}).values()):
        errors.invalid("deprecatedSource", "", "needs to be unset")


def _legacy(event: dict[str, Any], strict: bool, errors: FieldErrors) -> None:
    namespace = event["metadata"].get("namespace", "")
    involved = (event.get("involvedObject") or {}).get("namespace", "")
    controller_field = "reportingController" if strict else "reportingComponent"
    if not event.get("eventTime"):
        if (not involved and namespace not in ("", "default")) or (involved and involved != namespace):
            errors.invalid("involvedObject.namespace", involved, "does not match event.namespace")
    else:
        if not involved and namespace not in ("default", "kube-system"):
            errors.invalid("involvedObject.namespace", involved, "does not match event.namespace")
        controller = event.get("reportingComponent", "")
        if not controller:
            errors.required(controller_field)
        errors.invalid_each(controller_field, controller, names.qualified_name(controller))
        for field, limit, shown in (
            ("reportingInstance", _REPORTING_INSTANCE_MAX, "reportingInstance"),
            ("action", _ACTION_MAX, "action"),
            ("reason", _REASON_MAX, "reason"),
        ):
            value = event.get(field, "")
            if not value:
                errors.required(shown)
            if len(value) > limit:
                errors.invalid(shown, "", f"can have at most {limit} characters")
        if len(event.get("message", "")) > _NOTE_MAX:
            errors.invalid("message", "", f"can have at most {_NOTE_MAX} characters")
    errors.invalid_each("namespace", namespace, names.dns1123_subdomain(namespace))


def validate_event_update(
    event: dict[str, Any], old: dict[str, Any], strict: bool, errors: FieldErrors
) -> None:
    _legacy(event, strict, errors)
    if not strict:
        return
    metadata.validate_update(event["metadata"], old["metadata"], errors)
    for field in _IMMUTABLE:
        if event.get(field) != old.get(field):
            errors.immutable(field, event.get(field))
    if event.get("eventTime"):
        for field in ("action", "reportingComponent", "reportingInstance"):
            if event.get(field) != old.get(field):
                errors.immutable(field, event.get(field))
