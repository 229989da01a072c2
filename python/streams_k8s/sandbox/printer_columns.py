"""The columns of a Table, as kube-apiserver's printers define them: its built-in printers' columns
for built-in kinds, and for a custom resource the Name column plus the CRD's
additionalPrinterColumns (Age only when the CRD declares none)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from streams_k8s.sandbox.printer_cells import (
    Cell,
    age,
    binding_subjects,
    endpoints,
    event_count,
    event_first_seen,
    event_last_seen,
    event_object,
    event_source,
    meta_of,
    node_address,
    node_info,
    node_roles,
    node_status,
    pod_ready,
    pod_restarts,
    pod_status,
    replicas,
    selector_text,
    service_ports,
    slice_endpoints,
    slice_ports,
    spec_of,
    status_of,
    template_containers,
)
from streams_k8s.sandbox.resources import ResourceType, get_path


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


NAME = Column("Name", "string", lambda o: meta_of(o).get("name", ""), format="name")
AGE = Column("Age", "string", lambda o: age(meta_of(o).get("creationTimestamp")))
CREATED_AT = Column("Created At", "date", lambda o: meta_of(o).get("creationTimestamp"))


def _pod_wide(column: str, cell: Cell) -> Column:
    return Column(column, "string", cell, priority=1)


_BUILTIN: dict[tuple[str, str], list[Column]] = {
    ("", "pods"): [
        NAME,
        Column("Ready", "string", pod_ready),
        Column("Status", "string", pod_status),
        Column("Restarts", "string", pod_restarts),
        AGE,
        _pod_wide("IP", lambda o: status_of(o).get("podIP") or "<none>"),
        _pod_wide("Node", lambda o: spec_of(o).get("nodeName") or "<none>"),
        _pod_wide("Nominated Node", lambda o: status_of(o).get("nominatedNodeName") or "<none>"),
        _pod_wide("Readiness Gates", lambda o: "<none>"),
    ],
    ("", "nodes"): [
        NAME,
        Column("Status", "string", node_status),
        Column("Roles", "string", node_roles),
        AGE,
        Column("Version", "string", node_info("kubeletVersion")),
        Column("Internal-IP", "string", node_address("InternalIP"), priority=1),
        Column("External-IP", "string", node_address("ExternalIP"), priority=1),
        Column("OS-Image", "string", node_info("osImage"), priority=1),
        Column("Kernel-Version", "string", node_info("kernelVersion"), priority=1),
        Column("Container-Runtime", "string", node_info("containerRuntimeVersion"), priority=1),
    ],
    ("", "namespaces"): [NAME, Column("Status", "string", lambda o: status_of(o).get("phase", "")), AGE],
    ("", "services"): [
        NAME,
        Column("Type", "string", lambda o: spec_of(o).get("type", "ClusterIP")),
        Column("Cluster-IP", "string", lambda o: spec_of(o).get("clusterIP") or "<none>"),
        Column("External-IP", "string", lambda o: ",".join(spec_of(o).get("externalIPs") or []) or "<none>"),
        Column("Port(s)", "string", service_ports),
        AGE,
        Column("Selector", "string", lambda o: selector_text(spec_of(o).get("selector")), priority=1),
    ],
    ("", "endpoints"): [NAME, Column("Endpoints", "string", endpoints), AGE],
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
        Column("Last Seen", "string", event_last_seen),
        Column("Type", "string", lambda o: o.get("type", "")),
        Column("Reason", "string", lambda o: o.get("reason", "")),
        Column("Object", "string", event_object),
        Column(
            "Subobject", "string", lambda o: (o.get("involvedObject") or {}).get("fieldPath", ""), priority=1
        ),
        Column("Source", "string", event_source, priority=1),
        Column("Message", "string", lambda o: str(o.get("message", "")).strip()),
        Column("First Seen", "string", event_first_seen, priority=1),
        Column("Count", "string", event_count, priority=1),
        Column("Name", "string", NAME.cell, priority=1, format="name"),
    ],
    ("apps", "statefulsets"): [
        NAME,
        Column("Ready", "string", replicas),
        AGE,
        Column("Containers", "string", template_containers("name"), priority=1),
        Column("Images", "string", template_containers("image"), priority=1),
    ],
    ("apps", "deployments"): [
        NAME,
        Column("Ready", "string", replicas),
        Column("Up-to-date", "integer", lambda o: status_of(o).get("updatedReplicas", 0)),
        Column("Available", "integer", lambda o: status_of(o).get("availableReplicas", 0)),
        AGE,
        Column("Containers", "string", template_containers("name"), priority=1),
        Column("Images", "string", template_containers("image"), priority=1),
    ],
    ("coordination.k8s.io", "leases"): [
        NAME,
        Column("Holder", "string", lambda o: spec_of(o).get("holderIdentity", "")),
        AGE,
    ],
    ("discovery.k8s.io", "endpointslices"): [
        NAME,
        Column("AddressType", "string", lambda o: o.get("addressType", "")),
        Column("Ports", "string", slice_ports),
        Column("Endpoints", "string", slice_endpoints),
        AGE,
    ],
    ("networking.k8s.io", "networkpolicies"): [
        NAME,
        Column(
            "Pod-Selector",
            "string",
            lambda o: selector_text((spec_of(o).get("podSelector") or {}).get("matchLabels")),
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
    Column("Users", "string", binding_subjects("User"), priority=1),
    Column("Groups", "string", binding_subjects("Group"), priority=1),
    Column("ServiceAccounts", "string", binding_subjects("ServiceAccount"), priority=1),
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
