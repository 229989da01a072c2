"""The taint eviction controller of the embedded server (kube-controller-manager's): a pod bound to
a node with a NoExecute taint it does not tolerate is deleted (gracefully, after its
DisruptionTarget condition says ``DeletionByTaintManager``), whether the taint came after the pod
or the pod after the taint. ``tolerationSeconds`` are not waited for: such a pod goes at once."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.controllers.scheduler import tolerates
from streams_k8s.sandbox.disruption import TAINT_MANAGER, mark_disruption
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import WatchEvent
from streams_k8s.sandbox.worker import Worker

NODES = ("", "nodes")
PODS = ("", "pods")
PodKey = tuple[str, str]


def no_execute(node: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [t for t in ((node or {}).get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]


class TaintEvictionController:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.worker: Worker[PodKey] = Worker("taint-eviction-controller", self._evict)
        registry.store.listeners.append(self._on_event)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        if event.type == "DELETED":
            return
        if rt.key == NODES and no_execute(event.obj) and no_execute(event.obj) != no_execute(event.old):
            name = event.obj["metadata"]["name"]
            for pod in self.registry.items(self.registry.types[PODS]):
                if pod["spec"].get("nodeName") == name:
                    self.worker.add((pod["metadata"]["namespace"], pod["metadata"]["name"]))
        elif (
            rt.key == PODS
            and event.obj["spec"].get("nodeName")
            and not (event.old or {}).get("spec", {}).get("nodeName")
        ):  # it just landed on a node
            self.worker.add((event.obj["metadata"]["namespace"], event.obj["metadata"]["name"]))

    def _evict(self, key: PodKey) -> None:
        pods = self.registry.types[PODS]
        pod = self.registry.find(pods, *key)
        if pod is None or pod["metadata"].get("deletionTimestamp") or not pod["spec"].get("nodeName"):
            return
        node = self.registry.find(self.registry.types[NODES], None, pod["spec"]["nodeName"])
        tolerations = pod["spec"].get("tolerations") or []
        untolerated = [t for t in no_execute(node) if not tolerates(tolerations, t)]
        if not untolerated:
            return
        try:
            mark_disruption(self.registry, *key, TAINT_MANAGER, f"taint {untolerated[0].get('key')}")
            self.registry.delete(pods, *key)
        except ApiError as err:
            if err.code not in (404, 409):
                raise
