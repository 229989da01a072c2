"""Defaults the API server fills into built-in kinds on create (the fields controllers read back)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _pod_spec(spec: dict[str, Any]) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if isinstance(container, dict):
            image = str(container.get("image", ""))
            latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
            container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})
            for port in container.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


def pod(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    _pod_spec(spec)
    obj["status"] = {"phase": "Pending", "qosClass": _qos(spec)}


def _qos(spec: dict[str, Any]) -> str:
    resources = [c.get("resources") or {} for c in spec.get("containers") or [] if isinstance(c, dict)]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        r.get("limits")
        and set(r["limits"]) >= {"cpu", "memory"}
        and all(r.get("requests", {}).get(k, r["limits"][k]) == r["limits"][k] for k in ("cpu", "memory"))
        for r in resources
    )
    return "Guaranteed" if guaranteed else "Burstable"


def service(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
    obj["status"] = {"loadBalancer": {}}


def _workload(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    template = spec.setdefault("template", {})
    _pod_spec(template.setdefault("spec", {}))
    obj["status"] = {"replicas": 0}


def statefulset(obj: dict[str, Any]) -> None:
    _workload(obj)
    spec = obj["spec"]
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})


def deployment(obj: dict[str, Any]) -> None:
    _workload(obj)
    spec = obj["spec"]
    spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault(
        "strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    )


def namespace(obj: dict[str, Any]) -> None:
    obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
    obj["status"] = {"phase": "Active"}
    obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]


def secret(obj: dict[str, Any]) -> None:
    obj.setdefault("type", "Opaque")


ON_CREATE: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
    ("", "pods"): pod,
    ("", "services"): service,
    ("", "namespaces"): namespace,
    ("", "secrets"): secret,
    ("apps", "statefulsets"): statefulset,
    ("apps", "deployments"): deployment,
}
