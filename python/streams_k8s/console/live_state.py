"""What the console shows of a job, as plain JSON-able rows computed from cached objects.

Pure functions of the objects (no I/O): the jobs list's rows, a job's PEs with their pod, node
and health, its consistent regions, and Event rows. The pages render these rows, the JSON API
returns them, and the push channel sends the ones that changed.

Health of a PE (its colour on the graph), from what the cluster says now:
- ``failed``: its pod failed, is being deleted, or is gone after it ran (launch count > 0); or a
  consistent region of the PE cannot recover (``UNHEALTHY``, maximum reset attempts reached);
- ``starting``: no pod yet, a pending pod, a running pod whose PE is not fully connected, or a
  region resetting;
- ``ok``: its pod runs, the PE is fully connected and its regions are processing;
- ``unknown``: the pod's phase is ``Unknown`` (its node stopped reporting).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from streams_k8s.api.consistent_region import RegionState
from streams_k8s.api.contract import PE_LABEL
from streams_k8s.k8s.conditions import find_condition
from streams_k8s.k8s.objects import Object, meta

HealthName = Literal["ok", "starting", "failed", "unknown"]
Row = dict[str, Any]

_FAILED_REGION = (RegionState.UNHEALTHY, RegionState.MAXIMUM_RESET_ATTEMPTS_REACHED)
_RECOVERING_REGION = (RegionState.RESETTING,)


def _status(obj: Object | None) -> dict[str, Any]:
    status = (obj or {}).get("status")
    return status if isinstance(status, dict) else {}


def _spec(obj: Object | None) -> dict[str, Any]:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """kubectl's short age: 42s, 5m, 3h, 2d ("" without a timestamp)."""
    if not timestamp:
        return ""
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return ""
    seconds = max(0, int(((now or datetime.now(UTC)) - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def upgrades(job: Object, parallel_regions: Iterable[Object]) -> list[str]:
    """What is changing in a job now, in words: a spec not yet applied, regions being resized."""
    found = []
    generation, observed = meta(job).get("generation"), _status(job).get("observedGeneration")
    if observed is not None and generation is not None and observed != generation:
        found.append(f"spec generation {generation} (applied {observed})")
    reconciling = find_condition(_status(job).get("conditions"), "Reconciling")
    if reconciling is not None and reconciling.get("status") == "True":
        found.append(str(reconciling.get("message") or reconciling.get("reason") or "reconciling"))
    for region in parallel_regions:
        wanted, applied = _spec(region).get("width"), _status(region).get("width")
        if applied is not None and wanted != applied:
            found.append(f"width of {_spec(region).get('alias')}: {applied} → {wanted}")
    return found


def job_row(job: Object, parallel_regions: Iterable[Object]) -> Row:
    m, status = meta(job), _status(job)
    return {
        "namespace": m.get("namespace"),
        "name": m.get("name"),
        "id": status.get("id"),
        "phase": status.get("phase") or "Submitting",
        "application": status.get("applicationName") or "",
        "pes": int(status.get("processingElements") or 0),
        "ready": int(status.get("processingElementsReady") or 0),
        "age": age(m.get("creationTimestamp")),
        "upgrades": upgrades(job, parallel_regions),
        "message": status.get("message") or "",
        "link": f"/jobs/{m.get('namespace')}/{m.get('name')}",
    }


def _pod_failed(pod: Object) -> bool:
    return _status(pod).get("phase") == "Failed" or bool(meta(pod).get("deletionTimestamp"))


def pe_health(pe: Object, pods: list[Object], region_states: Iterable[str]) -> HealthName:
    """The PE's health (module docs) from its pods (the newest launch first) and region states."""
    states = set(region_states)
    pod = pods[0] if pods else None
    if pod is not None and _status(pod).get("phase") == "Unknown":
        return "unknown"
    if (
        (pod is not None and _pod_failed(pod))
        or (pod is None and int(_status(pe).get("launchCount") or 0) > 0)
        or states & set(_FAILED_REGION)
    ):
        return "failed"
    running = pod is not None and _status(pod).get("phase") == "Running"
    if not running or _status(pe).get("connectivity") != "Full" or states & set(_RECOVERING_REGION):
        return "starting"
    return "ok"


def restarts(pods: Iterable[Object]) -> int:
    """Container restarts of the PE's pods (the controller replaces pods: launch count counts those)."""
    return sum(
        int(c.get("restartCount") or 0) for p in pods for c in _status(p).get("containerStatuses") or ()
    )


def pods_by_pe(pods: Iterable[Object]) -> dict[str, list[Object]]:
    """A job's pods by PE id, the newest first (a replaced pod may linger while it terminates)."""
    found: dict[str, list[Object]] = {}
    for pod in pods:
        pe = (meta(pod).get("labels") or {}).get(PE_LABEL)
        if pe is not None:
            found.setdefault(str(pe), []).append(pod)
    for group in found.values():
        group.sort(key=lambda p: str(meta(p).get("creationTimestamp") or ""), reverse=True)
        group.sort(key=lambda p: bool(meta(p).get("deletionTimestamp")))
    return found


def region_states_by_pe(regions: Iterable[Object]) -> dict[str, list[str]]:
    """The states of the consistent regions each PE belongs to, by PE id."""
    found: dict[str, list[str]] = {}
    for region in regions:
        state = str(_status(region).get("state") or RegionState.STARTED)
        for pe in _spec(region).get("pesInRegion") or ():
            found.setdefault(str(pe), []).append(state)
    return found


def pe_row(pe: Object, pods: list[Object], region_states: list[str]) -> Row:
    spec, status = _spec(pe), _status(pe)
    pod = pods[0] if pods else None
    return {
        "id": spec.get("id"),
        "name": meta(pe).get("name"),
        "operators": list(spec.get("operators") or ()),
        "contentId": spec.get("contentId") or "",
        "launchCount": int(status.get("launchCount") or 0),
        "connectivity": status.get("connectivity") or "None",
        "pod": meta(pod).get("name") if pod else status.get("podName") or "",
        "podPhase": _status(pod).get("phase") if pod else "",
        "node": _spec(pod).get("nodeName") if pod else status.get("nodeName") or "",
        "restarts": restarts(pods),
        "regions": region_states,
        "health": pe_health(pe, pods, region_states),
    }


def pe_rows(pes: Iterable[Object], pods: Iterable[Object], regions: Iterable[Object]) -> list[Row]:
    by_pe, states = pods_by_pe(pods), region_states_by_pe(regions)
    rows = [
        pe_row(pe, by_pe.get(str(_spec(pe).get("id")), []), states.get(str(_spec(pe).get("id")), []))
        for pe in pes
    ]
    return sorted(rows, key=lambda r: int(r["id"] or 0))


def _milliseconds(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def region_row(region: Object) -> Row:
    spec, status = _spec(region), _status(region)
    return {
        "name": meta(region).get("name"),
        "index": spec.get("regionIndex"),
        "state": status.get("state") or RegionState.STARTED.value,
        "healthy": bool(status.get("regionHealthy")),
        "lastCompletedSeqId": status.get("lastCompletedSeqID"),
        "currentSeqId": status.get("currentSeqID"),
        "resetAttempt": status.get("currentResetAttempt") or 0,
        "avgDrainMs": _milliseconds(status.get("avgDrainTime")),
        "avgResetMs": _milliseconds(status.get("avgResetTime")),
        "pes": list(spec.get("pesInRegion") or ()),
    }


def parallel_row(region: Object) -> Row:
    spec, status = _spec(region), _status(region)
    return {"alias": spec.get("alias"), "width": spec.get("width"), "applied": status.get("width")}


def event_time(event: Object) -> str:
    """When an Event last happened (RFC 3339 strings sort in time order)."""
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or meta(event).get("creationTimestamp")
        or ""
    )


def event_row(event: Object) -> Row:
    involved = event.get("involvedObject") or {}
    return {
        "type": event.get("type") or "Normal",
        "reason": event.get("reason") or "",
        "object": f"{involved.get('kind', '')}/{involved.get('name', '')}",
        "message": event.get("message") or "",
        "count": int(event.get("count") or 1),
        "age": age(event_time(event) or None),
    }


def health_map(rows: Iterable[Mapping[str, Any]]) -> dict[str, HealthName]:
    """PE id → health, as the graph's ``data-health`` attributes are keyed."""
    return {str(r["id"]): r["health"] for r in rows}
