"""Server-side `Table` rendering (what `kubectl get` asks for), for lists, gets and watches.

Columns are those kube-apiserver prints: its built-in printers' columns for built-in kinds, and for
a custom resource the Name column plus the CRD's additionalPrinterColumns (Age only when the CRD
declares none). Rows carry the object as `includeObject` asks (None, Metadata: the default, or
Object). A watch sends the column definitions with its first event only, as the API server does;
kubectl keeps using the ones it has.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from streams_k8s.sandbox.errors import bad_request
from streams_k8s.sandbox.resources import ResourceType, get_path
from streams_k8s.sandbox.store import Converter, WatchEvent, view

TABLE_API_VERSION = "meta.k8s.io/v1"
INCLUDE_OBJECT = ("None", "Metadata", "Object")
Cell = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    cell: Cell
    priority: int = 0
    format: str = ""

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": "",
            "priority": self.priority,
        }


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


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


def _listed(values: list[str], limit: int = 3) -> str:
    """Up to `limit` values, then how many more (the printers' endpoint-list format)."""
    if not values:
        return "<none>"
    more = f" + {len(values) - limit} more..." if len(values) > limit else ""
    return ",".join(values[:limit]) + more


def _selector(selector: dict[str, Any] | None) -> str:
    if not selector:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


NAME = Column("Name", "string", lambda o: _meta(o).get("name", ""), format="name")
AGE = Column("Age", "string", lambda o: age(_meta(o).get("creationTimestamp")))
CREATED_AT = Column("Created At", "date", lambda o: _meta(o).get("creationTimestamp"))


# -- built-in kinds -----------------------------------------------------------------------------


def _pod_ready(obj: dict[str, Any]) -> str:
    statuses = _status(obj).get("containerStatuses") or []
    return f"{sum(1 for s in statuses if s.get('ready'))}/{len(_spec(obj).get('containers') or [])}"


def _pod_status(obj: dict[str, Any]) -> str:
    """The STATUS column: the phase, or what the containers say (Completed, Error, ...)."""
    status = _status(obj)
    reason = str(status.get("reason") or status.get("phase") or "")
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            terminated = state["terminated"]
            reason = terminated.get("reason") or f"ExitCode:{terminated.get('exitCode', 0)}"
    if _meta(obj).get("deletionTimestamp"):
        return "Terminating"
    return reason


def _pod_restarts(obj: dict[str, Any]) -> Any:
    statuses = _status(obj).get("containerStatuses") or []
    restarts = sum(int(s.get("restartCount", 0)) for s in statuses)
    finished = [
        t
        for s in statuses
        if (t := parse_time(((s.get("lastState") or {}).get("terminated") or {}).get("finishedAt")))
    ]
    if restarts and finished:
        return f"{restarts} ({human_duration((datetime.now(UTC) - max(finished)).total_seconds())} ago)"
    return str(restarts)


def _node_status(obj: dict[str, Any]) -> str:
    ready: dict[str, Any] = next(
        (c for c in _status(obj).get("conditions") or [] if c.get("type") == "Ready"), {}
    )
    text = "Ready" if ready.get("status") == "True" else "NotReady"
    return text + (",SchedulingDisabled" if _spec(obj).get("unschedulable") else "")


def _node_roles(obj: dict[str, Any]) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k.removeprefix(prefix) for k in _meta(obj).get("labels") or {} if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def _node_address(kind: str) -> Cell:
    return lambda o: next(
        (a["address"] for a in _status(o).get("addresses") or [] if a.get("type") == kind), "<none>"
    )


def _node_info(field: str) -> Cell:
    return lambda o: (_status(o).get("nodeInfo") or {}).get(field, "")


def _service_ports(obj: dict[str, Any]) -> str:
    ports = [
        f"{p.get('port')}"
        + (f":{p['nodePort']}" if p.get("nodePort") else "")
        + f"/{p.get('protocol', 'TCP')}"
        for p in _spec(obj).get("ports") or []
    ]
    return ",".join(ports) or "<none>"


def _endpoints(obj: dict[str, Any]) -> str:
    return _listed(
        [
            f"{a['ip']}:{p['port']}" if "port" in p else a["ip"]
            for s in obj.get("subsets") or []
            for p in s.get("ports") or [{}]
            for a in s.get("addresses") or []
        ]
    )


def _slice_ports(obj: dict[str, Any]) -> str:
    ports = [str(p["port"]) for p in obj.get("ports") or [] if p.get("port") is not None]
    return ",".join(ports) or "<unset>"


def _slice_endpoints(obj: dict[str, Any]) -> str:
    return _listed([a for e in obj.get("endpoints") or [] for a in e.get("addresses") or []])


def _replicas(obj: dict[str, Any]) -> str:
    return f"{_status(obj).get('readyReplicas', 0)}/{_spec(obj).get('replicas', 0)}"


def _template_containers(field: str) -> Cell:
    return lambda o: ",".join(
        c.get(field, "") for c in ((_spec(o).get("template") or {}).get("spec") or {}).get("containers") or []
    )


def _binding_subjects(kind: str) -> Cell:
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


def _event_object(obj: dict[str, Any]) -> str:
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    return f"{kind}/{involved['name']}" if involved.get("name") else kind


def _event_first_seen(obj: dict[str, Any]) -> str:
    return age(obj.get("firstTimestamp") or obj.get("eventTime"))


def _event_last_seen(obj: dict[str, Any]) -> str:
    """Series' last observation, else lastTimestamp, else the first sighting (as the printer does)."""
    series = obj.get("series") or {}
    if series.get("lastObservedTime"):
        return age(series["lastObservedTime"])
    return age(obj["lastTimestamp"]) if obj.get("lastTimestamp") else _event_first_seen(obj)


def _event_count(obj: dict[str, Any]) -> int:
    series = obj.get("series") or {}
    return int(series.get("count") or obj.get("count") or 1)


def _event_source(obj: dict[str, Any]) -> str:
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    host = source.get("host") or obj.get("reportingInstance") or ""
    return f"{component}, {host}" if host else component


def _pod_wide(column: str, cell: Cell) -> Column:
    return Column(column, "string", cell, priority=1)


_BUILTIN: dict[tuple[str, str], list[Column]] = {
    ("", "pods"): [
        NAME,
        Column("Ready", "string", _pod_ready),
        Column("Status", "string", _pod_status),
        Column("Restarts", "string", _pod_restarts),
        AGE,
        _pod_wide("IP", lambda o: _status(o).get("podIP") or "<none>"),
        _pod_wide("Node", lambda o: _spec(o).get("nodeName") or "<none>"),
        _pod_wide("Nominated Node", lambda o: _status(o).get("nominatedNodeName") or "<none>"),
        _pod_wide("Readiness Gates", lambda o: "<none>"),
    ],
    ("", "nodes"): [
        NAME,
        Column("Status", "string", _node_status),
        Column("Roles", "string", _node_roles),
        AGE,
        Column("Version", "string", _node_info("kubeletVersion")),
        Column("Internal-IP", "string", _node_address("InternalIP"), priority=1),
        Column("External-IP", "string", _node_address("ExternalIP"), priority=1),
        Column("OS-Image", "string", _node_info("osImage"), priority=1),
        Column("Kernel-Version", "string", _node_info("kernelVersion"), priority=1),
        Column("Container-Runtime", "string", _node_info("containerRuntimeVersion"), priority=1),
    ],
    ("", "namespaces"): [NAME, Column("Status", "string", lambda o: _status(o).get("phase", "")), AGE],
    ("", "services"): [
        NAME,
        Column("Type", "string", lambda o: _spec(o).get("type", "ClusterIP")),
        Column("Cluster-IP", "string", lambda o: _spec(o).get("clusterIP") or "<none>"),
        Column("External-IP", "string", lambda o: ",".join(_spec(o).get("externalIPs") or []) or "<none>"),
        Column("Port(s)", "string", _service_ports),
        AGE,
        Column("Selector", "string", lambda o: _selector(_spec(o).get("selector")), priority=1),
    ],
    ("", "endpoints"): [NAME, Column("Endpoints", "string", _endpoints), AGE],
    ("", "configmaps"): [
        NAME,
        Column("Data", "integer", lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
        AGE,
    ],
    ("", "secrets"): [
        NAME,
        Column("Type", "string", lambda o: o.get("type", "Opaque")),
        Column("Data", "integer", lambda o: len(o.get("data") or {})),
        AGE,
    ],
    ("", "serviceaccounts"): [NAME, Column("Secrets", "integer", lambda o: len(o.get("secrets") or [])), AGE],
    ("", "events"): [
        Column("Last Seen", "string", _event_last_seen),
        Column("Type", "string", lambda o: o.get("type", "")),
        Column("Reason", "string", lambda o: o.get("reason", "")),
        Column("Object", "string", _event_object),
        Column(
            "Subobject", "string", lambda o: (o.get("involvedObject") or {}).get("fieldPath", ""), priority=1
        ),
        Column("Source", "string", _event_source, priority=1),
        Column("Message", "string", lambda o: str(o.get("message", "")).strip()),
        Column("First Seen", "string", _event_first_seen, priority=1),
        Column("Count", "string", _event_count, priority=1),
        Column("Name", "string", NAME.cell, priority=1, format="name"),
    ],
    ("apps", "statefulsets"): [
        NAME,
        Column("Ready", "string", _replicas),
        AGE,
        Column("Containers", "string", _template_containers("name"), priority=1),
        Column("Images", "string", _template_containers("image"), priority=1),
    ],
    ("apps", "deployments"): [
        NAME,
        Column("Ready", "string", _replicas),
        Column("Up-to-date", "integer", lambda o: _status(o).get("updatedReplicas", 0)),
        Column("Available", "integer", lambda o: _status(o).get("availableReplicas", 0)),
        AGE,
        Column("Containers", "string", _template_containers("name"), priority=1),
        Column("Images", "string", _template_containers("image"), priority=1),
    ],
    ("coordination.k8s.io", "leases"): [
        NAME,
        Column("Holder", "string", lambda o: _spec(o).get("holderIdentity", "")),
        AGE,
    ],
    ("discovery.k8s.io", "endpointslices"): [
        NAME,
        Column("AddressType", "string", lambda o: o.get("addressType", "")),
        Column("Ports", "string", _slice_ports),
        Column("Endpoints", "string", _slice_endpoints),
        AGE,
    ],
    ("networking.k8s.io", "networkpolicies"): [
        NAME,
        Column(
            "Pod-Selector",
            "string",
            lambda o: _selector((_spec(o).get("podSelector") or {}).get("matchLabels")),
        ),
        AGE,
    ],
    ("apiextensions.k8s.io", "customresourcedefinitions"): [NAME, CREATED_AT],
}
_RBAC = "rbac.authorization.k8s.io"
_BINDING = [
    NAME,
    Column(
        "Role",
        "string",
        lambda o: f"{(o.get('roleRef') or {}).get('kind')}/{(o.get('roleRef') or {}).get('name')}",
    ),
    AGE,
    Column("Users", "string", _binding_subjects("User"), priority=1),
    Column("Groups", "string", _binding_subjects("Group"), priority=1),
    Column("ServiceAccounts", "string", _binding_subjects("ServiceAccount"), priority=1),
]
_BUILTIN.update(
    {
        (_RBAC, "roles"): [NAME, CREATED_AT],
        (_RBAC, "clusterroles"): [NAME, CREATED_AT],
        (_RBAC, "rolebindings"): _BINDING,
        (_RBAC, "clusterrolebindings"): _BINDING,
    }
)
# events.k8s.io Events are stored in core form: the core printer renders both.
_BUILTIN[("events.k8s.io", "events")] = _BUILTIN[("", "events")]


# -- custom resources ---------------------------------------------------------------------------


def _custom_cell(column: dict[str, Any]) -> Cell:
    kind = column.get("type", "string")

    def cell(obj: dict[str, Any]) -> Any:
        value = get_path(obj, column["jsonPath"])
        if value is None:
            return None  # kubectl shows <none>
        if kind == "date":
            return age(value) if isinstance(value, str) else None
        if kind == "string":
            return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        return value

    return cell


def columns(rt: ResourceType, version: str) -> list[Column]:
    """The columns of `rt` in `version`, Name first (except where the printer puts it elsewhere)."""
    builtin = _BUILTIN.get(rt.key)
    if builtin is not None:
        return builtin
    if not rt.builtin:
        declared = rt.printer_columns.get(version) or []
        if declared:
            return [
                NAME,
                *(
                    Column(
                        c["name"],
                        c.get("type", "string"),
                        _custom_cell(c),
                        c.get("priority", 0),
                        c.get("format", ""),
                    )
                    for c in declared
                ),
            ]
        return [NAME, Column("Age", "date", AGE.cell)]
    return [NAME, AGE]


# -- tables -------------------------------------------------------------------------------------


def include_object(query: Any) -> str:
    """The `includeObject` parameter (Metadata when absent); 400 for an unknown value."""
    value = query.get("includeObject") or "Metadata"
    if value not in INCLUDE_OBJECT:
        raise bad_request(f'unrecognized includeObject value: "{value}"')
    return str(value)


def _row_object(obj: dict[str, Any], include: str, api_version: str, convert: Converter | None) -> Any:
    if include == "Object":
        return view(obj, api_version, convert)
    if include == "Metadata":
        return {"kind": "PartialObjectMetadata", "apiVersion": TABLE_API_VERSION, "metadata": obj["metadata"]}
    return None


def _row(
    specs: list[Column], obj: dict[str, Any], include: str, api_version: str, convert: Converter | None
) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": [c.cell(obj) for c in specs]}
    included = _row_object(obj, include, api_version, convert)
    if included is not None:
        row["object"] = included
    return row


def table(
    rt: ResourceType,
    version: str,
    objects: list[dict[str, Any]],
    list_meta: dict[str, Any],
    include: str = "Metadata",
    convert: Converter | None = None,
) -> dict[str, Any]:
    """The Table of `objects` (stored form); `list_meta` is the list's metadata (resourceVersion,
    continue, remainingItemCount), carried over as the API server does."""
    specs = columns(rt, version)
    api_version = rt.api_version(version)
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": list_meta,
        "columnDefinitions": [c.definition() for c in specs],
        "rows": [_row(specs, obj, include, api_version, convert) for obj in objects],
    }


class TableRows:
    """How a Table watch encodes events: one row per event, the column definitions in the first
    event only. The row of an event is encoded once and shared by every watch of the same form."""

    def __init__(self, rt: ResourceType, version: str, include: str, convert: Converter | None) -> None:
        self.specs = columns(rt, version)
        self.api_version = rt.api_version(version)
        self.include = include
        self.convert = convert
        self._key = f"table {self.api_version} {include}"
        self._headers_sent = False

    def line(self, type_: str, event: WatchEvent) -> bytes:
        if not self._headers_sent:
            self._headers_sent = True
            body = self._table(event, [c.definition() for c in self.specs])
        else:
            body = event.cached(self._key, lambda: self._table(event, None))
        return b'{"type":"' + type_.encode() + b'","object":' + body + b"}\n"

    def _table(self, event: WatchEvent, definitions: list[dict[str, Any]] | None) -> bytes:
        row = _row(self.specs, event.obj, self.include, self.api_version, self.convert)
        return orjson.dumps(
            {
                "kind": "Table",
                "apiVersion": TABLE_API_VERSION,
                "metadata": {"resourceVersion": str(event.rv)},
                "columnDefinitions": definitions,
                "rows": [row],
            }
        )
