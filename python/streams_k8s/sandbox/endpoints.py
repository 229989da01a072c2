"""Simulated endpoints controller: each Service with a selector gets an Endpoints object listing
the IPs of its matching pods (ready ones in `addresses`, others in `notReadyAddresses`)."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.label_index import LabelIndex, SelectorIndex
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import WatchEvent
from streams_k8s.sandbox.worker import Worker
from streams_k8s.sandbox.workloads import is_ready

PODS = ("", "pods")
SERVICES = ("", "services")
ENDPOINTS = ("", "endpoints")
ServiceKey = tuple[str, str]


def _selector(service: dict[str, Any] | None) -> dict[str, str]:
    if service is None:
        return {}
    return {k: str(v) for k, v in ((service.get("spec") or {}).get("selector") or {}).items()}


class EndpointsController:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.rts = {key: registry.types[key] for key in (PODS, SERVICES, ENDPOINTS)}
        self.worker: Worker[ServiceKey] = Worker("endpoints-controller", self._sync)
        self.pods = LabelIndex()
        self.services = SelectorIndex()
        registry.store.listeners.append(self._on_event)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        meta = event.obj["metadata"]
        key = (meta["namespace"], meta["name"]) if rt.key in (SERVICES, PODS) else None
        if key is None:
            return
        if rt.key == SERVICES:
            self.services.update(key, _selector(event.obj) if event.type != "DELETED" else None)
            self.worker.add(key)
            return
        old_labels = event.old["metadata"].get("labels") or {} if event.old else {}
        new_labels = meta.get("labels") or {} if event.type != "DELETED" else {}
        self.pods.update(key, old_labels, new_labels)
        for labels in (old_labels, new_labels):
            for service in self.services.matching(key[0], labels):
                self.worker.add(service)

    def _sync(self, key: ServiceKey) -> None:
        ns, name = key
        service = self.registry.find(self.rts[SERVICES], ns, name)
        existing = self.registry.find(self.rts[ENDPOINTS], ns, name)
        selector = _selector(service)
        if service is None or not selector:
            if existing is not None and service is None:
                self._call(lambda: self.registry.delete(self.rts[ENDPOINTS], ns, name))
            return
        pods = []
        for pod_ns, pod_name in sorted(self.pods.candidates(ns, selector)):
            pod = self.registry.find(self.rts[PODS], pod_ns, pod_name)
            labels = pod["metadata"].get("labels") or {} if pod is not None else {}
            if (
                pod is not None
                and all(labels.get(k) == v for k, v in selector.items())
                and (pod.get("status") or {}).get("podIP")
                and not pod["metadata"].get("deletionTimestamp")
            ):
                pods.append(pod)
        subsets: list[dict[str, Any]] = []
        if pods:
            ready: list[dict[str, Any]] = []
            not_ready: list[dict[str, Any]] = []
            for pod in pods:
                address = {
                    "ip": pod["status"]["podIP"],
                    "nodeName": pod["spec"].get("nodeName", ""),
                    "targetRef": {
                        "kind": "Pod",
                        "namespace": ns,
                        "name": pod["metadata"]["name"],
                        "uid": pod["metadata"]["uid"],
                    },
                }
                if pod["spec"].get("hostname") and pod["spec"].get("subdomain") == name:
                    address["hostname"] = pod["spec"]["hostname"]
                (ready if is_ready(pod) else not_ready).append(address)
            subset: dict[str, Any] = {
                "ports": [self._port(p, pods[0]) for p in service["spec"].get("ports") or []]
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
            self._call(lambda: self.registry.create(self.rts[ENDPOINTS], "v1", ns, body))
        else:
            body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            body["metadata"].update(
                {k: existing["metadata"][k] for k in ("annotations",) if k in existing["metadata"]}
            )
            self._call(lambda: self.registry.update(self.rts[ENDPOINTS], "v1", ns, name, body))

    @staticmethod
    def _port(port: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
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
        return out

    @staticmethod
    def _call(action: Any) -> None:
        try:
            action()
        except ApiError as err:
            if err.code not in (403, 404, 409):
                raise
