"""Cells of the built-in printers' columns: what kube-apiserver prints for each kind (a pod's
Ready and Status, a node's roles, a service's ports, an event's source...), and ages as kubectl
shows them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

Cell = Callable[[dict[str, Any]], Any]


def parse_time(timestamp: Any) -> datetime | None:
    """An RFC 3339 time (seconds or MicroTime precision), or None when absent or malformed."""
    if not isinstance(timestamp, str) or not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def human_duration(seconds: float) -> str:
    """A duration as kubectl shows ages: 45s, 5m12s, 3h20m, 2d5h, 1y30d (Kubernetes' HumanDuration)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        return f"{minutes}m" + (f"{whole % 60}s" if whole % 60 else "")
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        return f"{hours}h" + (f"{minutes % 60}m" if minutes % 60 else "")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" + (f"{hours % 24}h" if hours % 24 else "")
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" + (f"{days}d" if days else "")
    return f"{hours // 24 // 365}y"


def age(timestamp: Any) -> str:
    moment = parse_time(timestamp)
    if moment is None:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - moment).total_seconds())


def meta_of(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def status_of(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


def listed(values: list[str], limit: int = 3) -> str:
    """Up to `limit` values, then how many more (the printers' endpoint-list format)."""
    if not values:
        return "<none>"
    more = f" + {len(values) - limit} more..." if len(values) > limit else ""
    return ",".join(values[:limit]) + more


def selector_text(selector: dict[str, Any] | None) -> str:
    if not selector:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def pod_ready(obj: dict[str, Any]) -> str:
    statuses = status_of(obj).get("containerStatuses") or []
    return f"{sum(1 for s in statuses if s.get('ready'))}/{len(spec_of(obj).get('containers') or [])}"


def pod_status(obj: dict[str, Any]) -> str:
    """The STATUS column: the phase, or what the containers say (Completed, Error, ...)."""
    status = status_of(obj)
    reason = str(status.get("reason") or status.get("phase") or "")
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            terminated = state["terminated"]
            reason = terminated.get("reason") or f"ExitCode:{terminated.get('exitCode', 0)}"
    if meta_of(obj).get("deletionTimestamp"):
        return "Terminating"
    return reason


def pod_restarts(obj: dict[str, Any]) -> Any:
    statuses = status_of(obj).get("containerStatuses") or []
    restarts = sum(int(s.get("restartCount", 0)) for s in statuses)
    finished = [
        t
        for s in statuses
        if (t := parse_time(((s.get("lastState") or {}).get("terminated") or {}).get("finishedAt")))
    ]
    if restarts and finished:
        return f"{restarts} ({human_duration((datetime.now(UTC) - max(finished)).total_seconds())} ago)"
    return str(restarts)


def node_status(obj: dict[str, Any]) -> str:
    ready: dict[str, Any] = next(
        (c for c in status_of(obj).get("conditions") or [] if c.get("type") == "Ready"), {}
    )
    text = "Ready" if ready.get("status") == "True" else "NotReady"
    return text + (",SchedulingDisabled" if spec_of(obj).get("unschedulable") else "")


def node_roles(obj: dict[str, Any]) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k.removeprefix(prefix) for k in meta_of(obj).get("labels") or {} if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def node_address(kind: str) -> Cell:
    return lambda o: next(
        (a["address"] for a in status_of(o).get("addresses") or [] if a.get("type") == kind), "<none>"
    )


def node_info(field: str) -> Cell:
    return lambda o: (status_of(o).get("nodeInfo") or {}).get(field, "")


def service_ports(obj: dict[str, Any]) -> str:
    ports = [
        f"{p.get('port')}"
        + (f":{p['nodePort']}" if p.get("nodePort") else "")
        + f"/{p.get('protocol', 'TCP')}"
        for p in spec_of(obj).get("ports") or []
    ]
    return ",".join(ports) or "<none>"


def endpoints(obj: dict[str, Any]) -> str:
    return listed(
        [
            f"{a['ip']}:{p['port']}" if "port" in p else a["ip"]
            for s in obj.get("subsets") or []
            for p in s.get("ports") or [{}]
            for a in s.get("addresses") or []
        ]
    )


def slice_ports(obj: dict[str, Any]) -> str:
    ports = [str(p["port"]) for p in obj.get("ports") or [] if p.get("port") is not None]
    return ",".join(ports) or "<unset>"


def slice_endpoints(obj: dict[str, Any]) -> str:
    return listed([a for e in obj.get("endpoints") or [] for a in e.get("addresses") or []])


def replicas(obj: dict[str, Any]) -> str:
    return f"{status_of(obj).get('readyReplicas', 0)}/{spec_of(obj).get('replicas', 0)}"


def template_containers(field: str) -> Cell:
    return lambda o: ",".join(
        c.get(field, "")
        for c in ((spec_of(o).get("template") or {}).get("spec") or {}).get("containers") or []
    )


def binding_subjects(kind: str) -> Cell:
    def cell(obj: dict[str, Any]) -> str:
        found = [
            (
                f"{s['namespace']}/{s['name']}"
                if kind == "ServiceAccount" and s.get("namespace")
                else s["name"]
            )
            for s in obj.get("subjects") or []
            if s.get("kind") == kind and s.get("name")
        ]
        return ", ".join(found)

    return cell


def event_object(obj: dict[str, Any]) -> str:
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    return f"{kind}/{involved['name']}" if involved.get("name") else kind


def event_first_seen(obj: dict[str, Any]) -> str:
    return age(obj.get("firstTimestamp") or obj.get("eventTime"))


def event_last_seen(obj: dict[str, Any]) -> str:
    """Series' last observation, else lastTimestamp, else the first sighting (as the printer does)."""
    series = obj.get("series") or {}
    if series.get("lastObservedTime"):
        return age(series["lastObservedTime"])
    return age(obj["lastTimestamp"]) if obj.get("lastTimestamp") else event_first_seen(obj)


def event_count(obj: dict[str, Any]) -> int:
    series = obj.get("series") or {}
    return int(series.get("count") or obj.get("count") or 1)


def event_source(obj: dict[str, Any]) -> str:
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    host = source.get("host") or obj.get("reportingInstance") or ""
    return f"{component}, {host}" if host else component
