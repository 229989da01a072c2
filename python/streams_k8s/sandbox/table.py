"""Server-side `Table` rendering (what `kubectl get` asks for): name, printer columns and age."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from streams_k8s.sandbox.resources import ResourceType, get_path


def _age(timestamp: str | None) -> str:
    if not timestamp:
        return "<unknown>"
    created = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    seconds = max(0, int((datetime.now(UTC) - created).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * 2 or (unit == "m" and seconds >= 120):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


def _pod_ready(obj: dict[str, Any]) -> str:
    statuses = _status(obj).get("containerStatuses") or []
    containers = len((obj.get("spec") or {}).get("containers") or [])
    return f"{sum(1 for s in statuses if s.get('ready'))}/{containers}"


def _pod_status(obj: dict[str, Any]) -> str:
    if obj["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return str(_status(obj).get("reason") or _status(obj).get("phase", ""))


def _node_status(obj: dict[str, Any]) -> str:
    ready: dict[str, Any] = next(
        (c for c in _status(obj).get("conditions") or [] if c.get("type") == "Ready"), {}
    )
    text = "Ready" if ready.get("status") == "True" else "NotReady"
    return text + (",SchedulingDisabled" if (obj.get("spec") or {}).get("unschedulable") else "")


def _endpoints(obj: dict[str, Any]) -> str:
    found = [
        f"{a['ip']}:{p.get('port')}"
        for s in obj.get("subsets") or []
        for a in s.get("addresses") or []
        for p in s.get("ports") or [{}]
    ]
    return ",".join(found[:3]) + (f" + {len(found) - 3} more..." if len(found) > 3 else "") or "<none>"


def _replicas(obj: dict[str, Any]) -> str:
    return f"{_status(obj).get('readyReplicas', 0)}/{(obj.get('spec') or {}).get('replicas', 0)}"


Column = tuple[str, str, int, Callable[[dict[str, Any]], Any]]  # name, type, priority, cell
AGE: Column = ("Age", "string", 0, lambda o: _age(o["metadata"].get("creationTimestamp")))

# Built-in kinds: the columns after the name, in kubectl's order (priority 1 shows with -o wide).
_BUILTIN: dict[tuple[str, str], list[Column]] = {
    ("", "pods"): [
        ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status),
        (
            "Restarts",
            "integer",
            0,
            lambda o: sum(int(s.get("restartCount", 0)) for s in _status(o).get("containerStatuses") or []),
        ),
        AGE,
        ("IP", "string", 1, lambda o: _status(o).get("podIP", "<none>")),
        ("Node", "string", 1, lambda o: (o.get("spec") or {}).get("nodeName", "<none>")),
    ],
    ("", "nodes"): [
        ("Status", "string", 0, _node_status),
        AGE,
        ("Version", "string", 0, lambda o: (_status(o).get("nodeInfo") or {}).get("kubeletVersion", "")),
        (
            "Internal-IP",
            "string",
            1,
            lambda o: next(
                (a["address"] for a in _status(o).get("addresses") or [] if a.get("type") == "InternalIP"),
                "<none>",
            ),
        ),
    ],
    ("apps", "statefulsets"): [("Ready", "string", 0, _replicas), AGE],
    ("apps", "deployments"): [
        ("Ready", "string", 0, _replicas),
        ("Up-to-date", "integer", 0, lambda o: _status(o).get("updatedReplicas", 0)),
        ("Available", "integer", 0, lambda o: _status(o).get("availableReplicas", 0)),
        AGE,
    ],
    ("", "namespaces"): [("Status", "string", 0, lambda o: _status(o).get("phase", "")), AGE],
    ("", "services"): [
        ("Type", "string", 0, lambda o: o["spec"].get("type", "")),
        ("Cluster-IP", "string", 0, lambda o: o["spec"].get("clusterIP", "")),
        (
            "Ports",
            "string",
            0,
            lambda o: (
                ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in o["spec"].get("ports") or [])
                or "<none>"
            ),
        ),
        AGE,
    ],
    ("", "endpoints"): [("Endpoints", "string", 0, _endpoints), AGE],
    ("", "events"): [
        ("Type", "string", 0, lambda o: o.get("type", "")),
        ("Reason", "string", 0, lambda o: o.get("reason", "")),
        (
            "Object",
            "string",
            0,
            lambda o: "{}/{}".format(
                (o.get("involvedObject") or {}).get("kind", "").lower(),
                (o.get("involvedObject") or {}).get("name", ""),
            ),
        ),
        ("Message", "string", 0, lambda o: o.get("message", "")),
        AGE,
    ],
}


def table(rt: ResourceType, version: str, objects: list[dict[str, Any]], rv: int) -> dict[str, Any]:
    builtin = _BUILTIN.get(rt.key)
    if builtin is not None:
        specs = builtin
    else:
        custom: list[Column] = [
            (c["name"], c.get("type", "string"), c.get("priority", 0), _custom_cell(c))
            for c in rt.printer_columns.get(version) or []
        ]
        specs = custom if any(c[0] == "Age" for c in custom) else [*custom, AGE]
    columns = [_column("Name", "string", "name")] + [_column(n, t, "", p) for n, t, p, _ in specs]
    rows = [
        {"cells": [obj["metadata"]["name"], *(cell(obj) for *_, cell in specs)], "object": obj}
        for obj in objects
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": str(rv)},
        "columnDefinitions": columns,
        "rows": rows,
    }


def _custom_cell(column: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    def cell(obj: dict[str, Any]) -> Any:
        value = get_path(obj, column["jsonPath"])
        if column.get("type") == "date" and isinstance(value, str):
            return _age(value)
        return "" if value is None else value

    return cell


def _column(name: str, kind: str, fmt: str = "", priority: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind if kind != "date" else "string",
        "format": fmt,
        "description": "",
        "priority": priority,
    }
