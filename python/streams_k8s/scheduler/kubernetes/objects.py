"""Kubernetes objects (plain dicts from the informers) as the scheduler's model types.

Only what the scheduler reads is kept, so a pod whose status churns (phase, conditions,
IPs) converts to an equal `Pod` and does not disturb the state.
"""

from __future__ import annotations

from typing import Any

from streams_k8s.k8s.objects import Object, meta
from streams_k8s.scheduler.model import UNSCHEDULABLE_ANNOTATION, ZONE_LABEL, Node, Pod, Taint


def node_from_object(obj: Object) -> Node:
    spec = _mapping(obj.get("spec"))
    taints = tuple(
        Taint(str(t.get("key") or ""), str(t.get("effect") or ""))
        for t in spec.get("taints") or ()
        if isinstance(t, dict)
    )
    zone = _mapping(meta(obj).get("labels")).get(ZONE_LABEL)
    return Node(
        str(meta(obj).get("name") or ""),
        zone=str(zone) if zone else None,
        unschedulable=spec.get("unschedulable") is True,
        taints=taints,
    )


def pod_from_object(obj: Object) -> Pod:
    """A pod by name, node (empty while Pending) and its unschedulable mark, if any."""
    annotations = _mapping(meta(obj).get("annotations"))
    mark = annotations.get(UNSCHEDULABLE_ANNOTATION)
    return Pod(
        str(meta(obj).get("name") or ""),
        str(_mapping(obj.get("spec")).get("nodeName") or ""),
        {UNSCHEDULABLE_ANNOTATION: str(mark)} if mark is not None else {},
    )


def statefulset_replicas(obj: Object) -> int:
    """`spec.replicas`; an unset field means 1, as for the StatefulSet controller."""
    replicas = _mapping(obj.get("spec")).get("replicas", 1)
    return replicas if isinstance(replicas, int) and replicas >= 0 else 1


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
