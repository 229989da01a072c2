"""The pod garbage collector of the embedded server (kube-controller-manager's podgc): the pods of
a node that was deleted are deleted too (grace period 0, after their DisruptionTarget condition
says ``DeletionByPodGC``), and so is a pod being deleted on a node that does not exist (no
kubelet will finish it). A pod bound to a node that never existed stays Pending (a cluster's pod
GC deletes it after a 40 s quarantine)."""

from __future__ import annotations

from streams_k8s.sandbox.disruption import POD_GC, mark_disruption
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import WatchEvent
from streams_k8s.sandbox.worker import Worker

NODES = ("", "nodes")
PODS = ("", "pods")
PodKey = tuple[str, str]


class PodGarbageCollector:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.worker: Worker[PodKey] = Worker("pod-garbage-collector", self._collect)
        self._gone: set[str] = set()  # nodes seen deleted (and not registered again)
        registry.store.listeners.append(self._on_event)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        if rt.key == NODES:
            name = event.obj["metadata"]["name"]
            if event.type != "DELETED":
                self._gone.discard(name)
                return
            self._gone.add(name)
            for pod in self.registry.items(self.registry.types[PODS]):
                if pod["spec"].get("nodeName") == name:
                    self.worker.add((pod["metadata"]["namespace"], pod["metadata"]["name"]))
        elif rt.key == PODS and event.type != "DELETED":
            meta, node = event.obj["metadata"], event.obj["spec"].get("nodeName")
            if node and (meta.get("deletionTimestamp") or node in self._gone):
                self.worker.add((meta["namespace"], meta["name"]))

    def _collect(self, key: PodKey) -> None:
        pods = self.registry.types[PODS]
        pod = self.registry.find(pods, *key)
        node = pod["spec"].get("nodeName") if pod is not None else None
        if pod is None or not node or self.registry.find(self.registry.types[NODES], None, node) is not None:
            return
        if node not in self._gone and not pod["metadata"].get("deletionTimestamp"):
            return
        try:
            if not pod["metadata"].get("deletionTimestamp"):
                mark_disruption(self.registry, *key, POD_GC, f"node {node} is gone")
            self.registry.delete(pods, *key, {"gracePeriodSeconds": 0})
        except ApiError as err:
            if err.code not in (404, 409):
                raise
