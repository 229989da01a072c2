"""Defaults the API server fills into built-in kinds: on every write (as decoding does, so an update
that leaves a defaulted field out does not change it) and, on create, the initial status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
_RBAC_GROUP = "rbac.authorization.k8s.io"


def _pod_spec(spec: dict[str, Any]) -> None:
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict) and set(volume) <= {"name"}:
            volume["emptyDir"] = {}  # a volume that names no source is an emptyDir
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if isinstance(container, dict):
            _container(container)


def _container(container: dict[str, Any]) -> None:
    image = str(container.get("image", ""))
    latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
    container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for variable in container.get("env") or []:
        field_ref = (variable.get("valueFrom") or {}).get("fieldRef") if isinstance(variable, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")
    for name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(name)
        if isinstance(probe, dict):
            for key, value in _PROBE_DEFAULTS.items():
                probe.setdefault(key, value)
            if isinstance(probe.get("httpGet"), dict):
                probe["httpGet"].setdefault("path", "/")
                probe["httpGet"].setdefault("scheme", "HTTP")


def _pod(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    _pod_spec(spec)
    spec.setdefault("enableServiceLinks", True)  # pods, not pod templates
    for container in spec.get("containers") or []:
        # A pod (not a template) requests what it limits, unless it says otherwise.
        resources = container.get("resources") if isinstance(container, dict) else None
        if isinstance(resources, dict) and resources.get("limits"):
            requests = resources.setdefault("requests", {})
            for key, value in resources["limits"].items():
                requests.setdefault(key, value)


def _new_pod(obj: dict[str, Any]) -> None:
    obj["status"] = {"phase": "Pending", "qosClass": _qos(obj["spec"])}


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


def _service(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
        # IPv4 only (a single-stack cluster); a headless Service without a selector may have both
        headless_only = spec.get("clusterIP") == "None" and not spec.get("selector")
        spec.setdefault("ipFamilyPolicy", "RequireDualStack" if headless_only else "SingleStack")
        spec.setdefault("ipFamilies", ["IPv4", "IPv6"] if headless_only else ["IPv4"])
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))


def _new_service(obj: dict[str, Any]) -> None:
    obj["status"] = {"loadBalancer": {}}


def _workload(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    template = spec.setdefault("template", {})
    _pod_spec(template.setdefault("spec", {}))


def _statefulset(obj: dict[str, Any]) -> None:
    _workload(obj)
    spec = obj["spec"]
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
    if strategy.get("type") == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("partition", 0)
        rolling.setdefault("maxUnavailable", 1)  # MaxUnavailableStatefulSet, on by default since 1.37
    spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})


def _deployment(obj: dict[str, Any]) -> None:
    _workload(obj)
    spec = obj["spec"]
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxSurge", "25%")
        rolling.setdefault("maxUnavailable", "25%")


def _new_deployment(obj: dict[str, Any]) -> None:
    obj["status"] = {}  # its counts are omitempty


def _new_statefulset(obj: dict[str, Any]) -> None:
    obj["status"] = {"replicas": 0, "availableReplicas": 0}


def _namespace(obj: dict[str, Any]) -> None:
    obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]


def _new_namespace(obj: dict[str, Any]) -> None:
    obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
    obj["status"] = {"phase": "Active"}


def _secret(obj: dict[str, Any]) -> None:
    obj.setdefault("type", "Opaque")


def _network_policy(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in rule.get("ports") or [] if isinstance(rule, dict) else []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", *(["Egress"] if spec.get("egress") else [])]


def _binding(obj: dict[str, Any]) -> None:
    for subject in obj.get("subjects") or []:
        if (
            isinstance(subject, dict)
            and "apiGroup" not in subject
            and subject.get("kind") in ("User", "Group")
        ):
            subject["apiGroup"] = _RBAC_GROUP


def _endpoints(obj: dict[str, Any]) -> None:
    for subset in obj.get("subsets") or []:
        for port in subset.get("ports") or [] if isinstance(subset, dict) else []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


def _node(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("podCIDR") and not spec.get("podCIDRs"):
        spec["podCIDRs"] = [spec["podCIDR"]]  # v1's conversion keeps the two in step


def _endpoint_slice(obj: dict[str, Any]) -> None:
    for port in obj.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


_ON_WRITE: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
    ("", "pods"): _pod,
    ("", "services"): _service,
    ("", "namespaces"): _namespace,
    ("", "secrets"): _secret,
    ("", "endpoints"): _endpoints,
    ("", "nodes"): _node,
    ("apps", "statefulsets"): _statefulset,
    ("apps", "deployments"): _deployment,
    ("networking.k8s.io", "networkpolicies"): _network_policy,
    ("rbac.authorization.k8s.io", "rolebindings"): _binding,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _binding,
    ("discovery.k8s.io", "endpointslices"): _endpoint_slice,
}
_ON_CREATE: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
    ("", "pods"): _new_pod,
    ("", "services"): _new_service,
    ("", "namespaces"): _new_namespace,
    ("apps", "statefulsets"): _new_statefulset,
    ("apps", "deployments"): _new_deployment,
}


def on_write(key: tuple[str, str], obj: dict[str, Any]) -> None:
    """The defaults of a kind's fields, filled into any written object (idempotent)."""
    hook = _ON_WRITE.get(key)
    if hook is not None:
        hook(obj)


def on_create(key: tuple[str, str], obj: dict[str, Any]) -> None:
    """Defaults, then the status a new object of the kind starts with."""
    on_write(key, obj)
    hook = _ON_CREATE.get(key)
    if hook is not None:
        hook(obj)
