"""A PE's headless Service `<job>-<peId>`: the DNS name its peers resolve, with the PE's ports."""

from __future__ import annotations

from typing import Any

from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    JOB_LABEL,
    PE_LABEL,
    SVC_LABEL,
    SVC_PE,
    USER_PORT_PREFIX,
    pe_service_name,
)
from streams_k8s.app.physical import PlannedPe
from streams_k8s.controller.children.metadata import ChildMetadata, pe_labels
from streams_k8s.controller.children.pe_ports import service_ports


def pe_service(pe: PlannedPe, metadata: ChildMetadata) -> dict[str, Any]:
    """Headless, selecting the PE's pods (`pe_service_selector`), one port per PE input port and
    the system ports."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(pe_service_name(metadata.job, pe.id), pe_labels(pe.id)),
        "spec": {
            "clusterIP": "None",
            "selector": pe_service_selector(metadata.job, pe.id),
            "ports": service_ports(len(pe.inputs)),
        },
    }


def pe_service_selector(job: str, pe: int) -> dict[str, str]:
    """The pods of PE ``pe`` of ``job``, whatever its generation and launch.

    Not the generation: a PE keeps its id across width changes (its pods get the new generation
    when its content changes), so a selector naming the generation would select nothing after a
    change unless every surviving Service were rewritten at once; the PE's identity never goes
    stale. ``svc=pe`` leaves out the failed pods kept as ``svc=zombie``."""
    return {APP_LABEL: APP_VALUE, JOB_LABEL: job, SVC_LABEL: SVC_PE, PE_LABEL: str(pe)}


def service_update(current: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any] | None:
    """The merge patch that gives an existing PE Service the desired selector and system ports
    (keeping the ``usr-*`` ports the runtime added), or None when it has them.

    Heals Services an earlier operator made (selecting a generation) and those of PEs a width
    change re-fused (their input ports follow the new fusion)."""
    spec, wanted = current.get("spec") or {}, desired["spec"]
    patch: dict[str, Any] = {}
    selector = spec.get("selector") or {}
    if selector != wanted["selector"]:
        patch["selector"] = {**dict.fromkeys(selector), **wanted["selector"]}  # null drops a key

    def system(port: dict[str, Any]) -> bool:
        return not str(port.get("name", "")).startswith(USER_PORT_PREFIX)

    def shape(ports: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(p.get("name"), p.get("port"), p.get("protocol", "TCP")) for p in ports if system(p)]

    ports = spec.get("ports") or []
    if shape(ports) != shape(wanted["ports"]):
        patch["ports"] = [*wanted["ports"], *(p for p in ports if not system(p))]
    if not patch:
        return None
    version = (current.get("metadata") or {}).get("resourceVersion")
    return {"metadata": {"resourceVersion": version}, "spec": patch}
