"""The DisruptionTarget condition Kubernetes (>= 1.26) sets on a pod before it deletes it for a
reason of its own: the Eviction API, the taint manager (NoExecute), the pod garbage collector
(node gone). Controllers read it from the pod's last state to tell such losses from a user's delete.
"""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.conditions import set_condition
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import clone

EVICTION_API = "EvictionByEvictionAPI"
TAINT_MANAGER = "DeletionByTaintManager"
POD_GC = "DeletionByPodGC"


def mark_disruption(registry: Registry, namespace: str, name: str, reason: str, message: str) -> None:
    """Set the pod's DisruptionTarget condition (its deletion follows); a pod already gone is left."""
    pods = registry.types[("", "pods")]
    try:
        pod = clone(registry.get(pods, namespace, name))
    except ApiError as err:
        if err.code == 404:
            return
        raise
    set_condition(pod.setdefault("status", {}), "DisruptionTarget", "True", reason, message)
    registry.update(pods, "v1", namespace, name, pod, "status")


def evict(registry: Registry, rt: ResourceType, namespace: str | None, name: str, options: Any) -> None:
    """The Eviction API (`pods/eviction`): the condition, then the deletion with ``options``."""
    mark_disruption(registry, str(namespace), name, EVICTION_API, "Eviction API: evicting")
    registry.delete(rt, namespace, name, options)
