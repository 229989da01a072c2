"""Simulated endpoints controller: each Service with a selector gets an Endpoints object listing
the IPs of its matching pods (ready ones in `addresses`, others in `notReadyAddresses`)."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.selectors import LabelSelector, Requirement
from streams_k8s.sandbox.store import WatchEvent
from streams_k8s.sandbox.worker import Worker
from streams_k8s.sandbox.workloads import is_ready

PODS = ("", "pods")
SERVICES = ("", "services")
ENDPOINTS = ("", "endpoints")
ServiceKey = tuple[str, str]


def _selector(service: dict[str, Any]) -> LabelSelector | None:
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return None
    return LabelSelector([Requirement(k, "=", (str(v),)) for k, v in selector.items()])


class EndpointsController:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.rts = {key: registry.types[key] for key in (PODS, SERVICES, ENDPOINTS)}
        self.worker: Worker[ServiceKey] = Worker("endpoints-controller", self._sync)
        registry.store.listeners.append(self._on_event)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        meta = event.obj["metadata"]
        if rt.key == SERVICES:
            self.worker.add((meta["namespace"], meta["name"]))
        elif rt.key == PODS:
            labels = [meta.get("labels") or {}] + (
                [event.old["metadata"].get("labels") or {}] if event.old else []
            )
            for service in self.registry.items(self.rts[SERVICES], meta["namespace"]):
                selector = _selector(service)
                if selector is not None and any(selector.matches(lbl) for lbl in labels):
                    self.worker.add((meta["namespace"], service["metadata"]["name"]))

    def _sync(self, key: ServiceKey) -> None:
        ns, name = key
        service = self.registry.find(self.rts[SERVICES], ns, name)
        existing = self.registry.find(self.rts[ENDPOINTS], ns, name)
        selector = _selector(service) if service is not None else None
        if service is None or selector is None:
            if existing is not None and service is None:
                self._call(lambda: self.registry.delete(self.rts[ENDPOINTS], ns, name))
            return
        pods = [
            p
            for p in self.registry.items(self.rts[PODS], ns)
            if selector.matches(p["metadata"].get("labels"))
            and (p.get("status") or {}).get("podIP")
            and not p["metadata"].get("deletionTimestamp")
        ]
        subsets: list[dict[str, Any]] = []
        if pods:
            ready: list[dict[str, Any]] = []
            not_ready: list[dict[str, Any]] = []
            for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
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
