"""Simulated endpoints and EndpointSlice controllers: each Service with a selector gets an Endpoints
object (ready pods in `addresses`, others in `notReadyAddresses`) and an EndpointSlice (every pod
with an IP, its ready/serving/terminating conditions, node, zone and target), kept in step with its
pods. Services without a selector get neither: their owners write them.

Both controllers share one index of pods by label and Services by selector (`ServicePods`), so a
pod change reaches only the Services that select it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams_k8s.sandbox.controllers.workloads import is_ready
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.label_index import LabelIndex, SelectorIndex
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import WatchEvent
from streams_k8s.sandbox.worker import Worker

PODS = ("", "pods")
NODES = ("", "nodes")
SERVICES = ("", "services")
ENDPOINTS = ("", "endpoints")
ENDPOINT_SLICES = ("discovery.k8s.io", "endpointslices")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
SLICE_CONTROLLER = "endpointslice-controller.k8s.io"
HEADLESS_LABEL = "service.kubernetes.io/headless"
ZONE_LABEL = "topology.kubernetes.io/zone"
ServiceKey = tuple[str, str]


def _selector(service: dict[str, Any] | None) -> dict[str, str]:
    if service is None:
        return {}
    return {k: str(v) for k, v in ((service.get("spec") or {}).get("selector") or {}).items()}


def _ignore_gone(action: Callable[[], Any]) -> None:
    try:
        action()
    except ApiError as err:
        if err.code not in (403, 404, 409):
            raise


def _target_ref(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]}


def _service_port(port: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
    """A Service port as the endpoint controllers publish it: the target port resolved on `pod`."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, str):  # a named container port
        named = [
            cp
            for c in pod["spec"].get("containers") or []
            for cp in c.get("ports") or []
            if cp.get("name") == target
        ]
        target = named[0]["containerPort"] if named else port.get("port")
    out = {"port": target, "protocol": port.get("protocol", "TCP")}
    if port.get("name"):
        out["name"] = port["name"]
    if port.get("appProtocol"):
        out["appProtocol"] = port["appProtocol"]
    return out


class ServicePods:
    """Which pods each Service selects: pods indexed by label, Services by selector; every change
    that may alter a Service's pods queues that Service on each subscribed worker."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.pods_rt = registry.types[PODS]
        self.services_rt = registry.types[SERVICES]
        self.pods = LabelIndex()
        self.services = SelectorIndex()
        self.workers: list[Worker[ServiceKey]] = []
        registry.store.listeners.append(self._on_event)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        if rt.key not in (SERVICES, PODS):
            return
        meta = event.obj["metadata"]
        key = (meta["namespace"], meta["name"])
        if rt.key == SERVICES:
            self.services.update(key, _selector(event.obj) if event.type != "DELETED" else None)
            self._queue(key)
            return
        old_labels = event.old["metadata"].get("labels") or {} if event.old else {}
        new_labels = meta.get("labels") or {} if event.type != "DELETED" else {}
        self.pods.update(key, old_labels, new_labels)
        for labels in (old_labels, new_labels):
            for service in self.services.matching(key[0], labels):
                self._queue(service)

    def _queue(self, key: ServiceKey) -> None:
        for worker in self.workers:
            worker.add(key)

    def service(self, key: ServiceKey) -> dict[str, Any] | None:
        return self.registry.find(self.services_rt, *key)

    def selected(self, ns: str, selector: dict[str, str]) -> list[dict[str, Any]]:
        """The pods with an IP that `selector` matches, by name (terminating ones included)."""
        pods = []
        for pod_ns, pod_name in sorted(self.pods.candidates(ns, selector)):
            pod = self.registry.find(self.pods_rt, pod_ns, pod_name)
            if pod is None:
                continue
            labels = pod["metadata"].get("labels") or {}
            status = pod.get("status") or {}
            if (
                all(labels.get(k) == v for k, v in selector.items())
                and status.get("podIP")
                and status.get("phase") not in ("Succeeded", "Failed")
            ):
                pods.append(pod)
        return pods


class EndpointsController:
    """core/v1 Endpoints, named as the Service."""

    def __init__(self, registry: Registry, pods: ServicePods) -> None:
        self.registry = registry
        self.service_pods = pods
        self.rt = registry.types[ENDPOINTS]
        self.worker: Worker[ServiceKey] = Worker("endpoints-controller", self._sync)
        pods.workers.append(self.worker)

    def _sync(self, key: ServiceKey) -> None:
        ns, name = key
        service = self.service_pods.service(key)
        existing = self.registry.find(self.rt, ns, name)
        selector = _selector(service)
        if service is None or not selector:
            if existing is not None and service is None:
                _ignore_gone(lambda: self.registry.delete(self.rt, ns, name))
            return
        pods = [
            p for p in self.service_pods.selected(ns, selector) if not p["metadata"].get("deletionTimestamp")
        ]
        subsets: list[dict[str, Any]] = []
        if pods:
            ready: list[dict[str, Any]] = []
            not_ready: list[dict[str, Any]] = []
            for pod in pods:
                address = {
                    "ip": pod["status"]["podIP"],
                    "nodeName": pod["spec"].get("nodeName", ""),
                    "targetRef": _target_ref(pod),
                }
                if pod["spec"].get("hostname") and pod["spec"].get("subdomain") == name:
                    address["hostname"] = pod["spec"]["hostname"]
                (ready if is_ready(pod) else not_ready).append(address)
            subset: dict[str, Any] = {
                "ports": [_service_port(p, pods[0]) for p in service["spec"].get("ports") or []]
            }
            if ready:
                subset["addresses"] = ready
            if not_ready:
                subset["notReadyAddresses"] = not_ready
            subsets.append(subset)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": name, "labels": service["metadata"].get("labels") or {}},
            "subsets": subsets,
        }
        if existing is None:
            _ignore_gone(lambda: self.registry.create(self.rt, "v1", ns, body))
        else:
            body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            body["metadata"].update(
                {k: existing["metadata"][k] for k in ("annotations",) if k in existing["metadata"]}
            )
            _ignore_gone(lambda: self.registry.update(self.rt, "v1", ns, name, body))


class EndpointSliceController:
    """discovery.k8s.io/v1 EndpointSlices: one IPv4 slice per Service with a selector, named
    `<service>-<random>`, labelled with the Service's name and this controller as its manager,
    owned by the Service. Slices of other managers are left alone."""

    def __init__(self, registry: Registry, pods: ServicePods) -> None:
        self.registry = registry
        self.service_pods = pods
        self.rt = registry.types[ENDPOINT_SLICES]
        self.nodes_rt = registry.types[NODES]
        self.worker: Worker[ServiceKey] = Worker("endpointslice-controller", self._sync)
        self.managed: dict[ServiceKey, set[str]] = {}  # the slices this controller manages, by Service
        pods.workers.append(self.worker)
        registry.store.listeners.append(self._on_event)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        if rt.key != ENDPOINT_SLICES:
            return
        meta = event.obj["metadata"]
        labels = meta.get("labels") or {}
        service = labels.get(SERVICE_NAME_LABEL)
        old_labels = (event.old["metadata"].get("labels") or {}) if event.old else {}
        if old_labels.get(MANAGED_BY_LABEL) == SLICE_CONTROLLER and old_labels.get(SERVICE_NAME_LABEL):
            self._forget((meta["namespace"], old_labels[SERVICE_NAME_LABEL]), meta["name"])
        if event.type != "DELETED" and labels.get(MANAGED_BY_LABEL) == SLICE_CONTROLLER and service:
            self.managed.setdefault((meta["namespace"], service), set()).add(meta["name"])
        elif event.type == "DELETED" and service and labels.get(MANAGED_BY_LABEL) == SLICE_CONTROLLER:
            self.worker.add((meta["namespace"], service))  # a managed slice deleted by hand comes back

    def _forget(self, key: ServiceKey, name: str) -> None:
        names = self.managed.get(key)
        if names is not None:
            names.discard(name)
            if not names:
                del self.managed[key]

    def _sync(self, key: ServiceKey) -> None:
        ns, name = key
        service = self.service_pods.service(key)
        selector = _selector(service)
        slices = sorted(self.managed.get(key, ()))
        if service is None or not selector:
            for slice_name in slices:  # the Service is gone or lost its selector
                self._delete(ns, slice_name)
            return
        pods = self.service_pods.selected(ns, selector)
        desired = self._desired(service, pods)
        current = self.registry.find(self.rt, ns, slices[0]) if slices else None
        for extra in slices[1:]:
            self._delete(ns, extra)
        if current is None:
            # As the real controller: none created for a Service being deleted (the garbage
            # collector would be deleting them as fast as they come).
            if not service["metadata"].get("deletionTimestamp"):
                desired["metadata"]["generateName"] = f"{name}-"
                _ignore_gone(lambda: self.registry.create(self.rt, "v1", ns, desired))
            return
        if all(current.get(k) == desired.get(k) for k in ("addressType", "endpoints", "ports")) and all(
            current["metadata"].get(k) == desired["metadata"][k] for k in ("labels", "ownerReferences")
        ):
            return
        meta = {**current["metadata"], **desired["metadata"]}
        body = {**desired, "metadata": meta}
        _ignore_gone(lambda: self.registry.update(self.rt, "v1", ns, meta["name"], body))

    def _delete(self, ns: str, name: str) -> None:
        _ignore_gone(lambda: self.registry.delete(self.rt, ns, name))

    def _desired(self, service: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
        meta = service["metadata"]
        spec = service.get("spec") or {}
        labels = {
            **(meta.get("labels") or {}),
            SERVICE_NAME_LABEL: meta["name"],
            MANAGED_BY_LABEL: SLICE_CONTROLLER,
        }
        if spec.get("clusterIP") == "None":
            labels[HEADLESS_LABEL] = ""
        owner = {
            "apiVersion": "v1",
            "kind": "Service",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        publish_not_ready = bool(spec.get("publishNotReadyAddresses"))
        endpoints = [self._endpoint(meta["name"], pod, publish_not_ready) for pod in pods]
        # A Service that selects no pod gets a placeholder slice: no endpoints, no ports.
        ports = [_service_port(p, pods[0]) for p in spec.get("ports") or []] if pods else []
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"labels": labels, "ownerReferences": [owner]},
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": ports,
        }

    def _endpoint(self, service: str, pod: dict[str, Any], publish_not_ready: bool) -> dict[str, Any]:
        terminating = bool(pod["metadata"].get("deletionTimestamp"))
        serving = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (pod.get("status") or {}).get("conditions") or []
        )
        endpoint: dict[str, Any] = {
            "addresses": [pod["status"]["podIP"]],
            "conditions": {
                "ready": publish_not_ready or (serving and not terminating),
                "serving": serving,
                "terminating": terminating,
            },
            "targetRef": _target_ref(pod),
        }
        node_name = pod["spec"].get("nodeName")
        if node_name:
            endpoint["nodeName"] = node_name
            node = self.registry.find(self.nodes_rt, None, node_name)
            zone = ((node or {}).get("metadata", {}).get("labels") or {}).get(ZONE_LABEL)
            if zone:
                endpoint["zone"] = zone
        if pod["spec"].get("hostname") and pod["spec"].get("subdomain") == service:
            endpoint["hostname"] = pod["spec"]["hostname"]
        return endpoint
