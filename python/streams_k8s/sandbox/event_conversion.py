"""events.k8s.io/v1 Events are a view of core/v1 Events, as in Kubernetes: one storage (core/v1
form), converted field by field on the way in and out, so `kubectl get events` shows what a
controller recorded through either API."""

from __future__ import annotations

from typing import Any

# events.k8s.io/v1 field -> core/v1 field
_RENAMED = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_SAME = ("metadata", "related", "reason", "type", "action", "eventTime", "series", "reportingInstance")
_BACK = {core: new for new, core in _RENAMED.items()}

# Field selectors of events.k8s.io/v1, as paths of the stored core/v1 object.
FIELD_PATHS = {
    "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath",
    "reportingController": "reportingComponent",
    "note": "message",
}


def to_core(event: dict[str, Any]) -> dict[str, Any]:
    core: dict[str, Any] = {"apiVersion": "v1", "kind": "Event"}
    for key, value in event.items():
        if key in _RENAMED:
            core[_RENAMED[key]] = value
        elif key in _SAME:
            core[key] = value
    core.setdefault("involvedObject", {})
    return core


def from_core(core: dict[str, Any], api_version: str = "events.k8s.io/v1") -> dict[str, Any]:
    event: dict[str, Any] = {"apiVersion": api_version, "kind": "Event"}
    for key, value in core.items():
        if key in _BACK:
            event[_BACK[key]] = value
        elif key in _SAME:
            event[key] = value
    return event
