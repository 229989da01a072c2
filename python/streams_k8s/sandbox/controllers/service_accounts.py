"""The service account controller of the embedded server (kube-controller-manager's): every
namespace has a ServiceAccount ``default``, made again if deleted. Pods that name no service
account run as it; the simulated kubelet mints their tokens for it."""

from __future__ import annotations

from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import WatchEvent
from streams_k8s.sandbox.worker import Worker

NAMESPACES = ("", "namespaces")
SERVICE_ACCOUNTS = ("", "serviceaccounts")
DEFAULT = "default"


class ServiceAccountController:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.worker: Worker[str] = Worker("serviceaccount-controller", self._ensure)
        registry.store.listeners.append(self._on_event)
        for namespace in registry.items(registry.types[NAMESPACES]):
            self.worker.add(namespace["metadata"]["name"])

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        meta = event.obj["metadata"]
        if rt.key == NAMESPACES and event.type == "ADDED":
            self.worker.add(meta["name"])
        elif rt.key == SERVICE_ACCOUNTS and event.type == "DELETED" and meta["name"] == DEFAULT:
            self.worker.add(meta["namespace"])

    def _ensure(self, namespace: str) -> None:
        ns = self.registry.find(self.registry.types[NAMESPACES], None, namespace)
        accounts = self.registry.types[SERVICE_ACCOUNTS]
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return
        if self.registry.find(accounts, namespace, DEFAULT) is not None:
            return
        try:
            self.registry.create(accounts, "v1", namespace, {"metadata": {"name": DEFAULT}})
        except ApiError as err:
            if err.code not in (403, 409):  # the namespace started terminating, or it exists
                raise
