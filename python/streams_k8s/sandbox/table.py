"""Server-side `Table` rendering (what `kubectl get` asks for): name, printer columns and age."""

from __future__ import annotations

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


def _pod_cells(obj: dict[str, Any]) -> list[Any]:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    containers = len((obj.get("spec") or {}).get("containers") or [])
    ready = sum(1 for s in statuses if s.get("ready"))
    restarts = sum(int(s.get("restartCount", 0)) for s in statuses)
    phase = (obj.get("status") or {}).get("reason") or (obj.get("status") or {}).get("phase", "")
    if obj["metadata"].get("deletionTimestamp"):
        phase = "Terminating"
    return [f"{ready}/{containers}", phase, restarts]


_BUILTIN: dict[tuple[str, str], tuple[list[tuple[str, str]], Any]] = {
    ("", "pods"): ([("Ready", "string"), ("Status", "string"), ("Restarts", "integer")], _pod_cells),
    ("apps", "statefulsets"): (
        [("Ready", "string")],
        lambda o: [f"{(o.get('status') or {}).get('readyReplicas', 0)}/{o['spec'].get('replicas', 0)}"],
    ),
    ("apps", "deployments"): (
        [("Ready", "string")],
        lambda o: [f"{(o.get('status') or {}).get('readyReplicas', 0)}/{o['spec'].get('replicas', 0)}"],
    ),
    ("", "namespaces"): ([("Status", "string")], lambda o: [(o.get("status") or {}).get("phase", "")]),
    ("", "services"): (
        [("Type", "string"), ("Cluster-IP", "string")],
        lambda o: [o["spec"].get("type", ""), o["spec"].get("clusterIP", "")],
    ),
}


def table(rt: ResourceType, version: str, objects: list[dict[str, Any]], rv: int) -> dict[str, Any]:
    columns: list[dict[str, Any]] = [_column("Name", "string", "name")]
    custom = rt.printer_columns.get(version) or []
    builtin = _BUILTIN.get(rt.key)
    if builtin is not None:
        columns += [_column(name, kind) for name, kind in builtin[0]]
    columns += [
        _column(c["name"], c.get("type", "string"), c.get("format", ""), c.get("priority", 0)) for c in custom
    ]
    age = not any(c["name"] == "Age" for c in custom)
    if age:
        columns.append(_column("Age", "string"))
    rows = []
    for obj in objects:
        cells: list[Any] = [obj["metadata"]["name"]]
        if builtin is not None:
            cells += builtin[1](obj)
        for c in custom:
            value = get_path(obj, c["jsonPath"])
            if c.get("type") == "date" and isinstance(value, str):
                value = _age(value)
            cells.append(value if value is not None else "")
        if age:
            cells.append(_age(obj["metadata"].get("creationTimestamp")))
        rows.append({"cells": cells, "object": obj})
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": str(rv)},
        "columnDefinitions": columns,
        "rows": rows,
    }


def _column(name: str, kind: str, fmt: str = "", priority: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind if kind != "date" else "string",
        "format": fmt,
        "description": "",
        "priority": priority,
    }
