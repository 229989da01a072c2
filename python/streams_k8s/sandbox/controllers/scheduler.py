"""The simulated scheduler: binds Pending pods to nodes as kube-scheduler's filters would.

Honoured: spec.nodeName (pods that name a node skip scheduling), nodeSelector, required node
affinity (In, NotIn, Exists, DoesNotExist, Gt, Lt; matchFields on metadata.name), required pod
affinity and anti-affinity with topologyKey (including existing pods' anti-affinity), taints and
tolerations (NoSchedule, NoExecute; PreferNoSchedule is ignored), cordoned nodes, resource
requests (cpu, memory) and the node's pod count. Preferred (soft) rules and topology spread
constraints are not evaluated; among feasible nodes the one with the fewest pods wins.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from streams_k8s.api.quantity import parse_quantity
from streams_k8s.sandbox.conditions import set_condition
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.selectors import selector_from_spec
from streams_k8s.sandbox.store import WatchEvent, clone
from streams_k8s.sandbox.worker import Worker

PODS = ("", "pods")
NODES = ("", "nodes")
TERMINAL = ("Succeeded", "Failed")

PodKey = tuple[str, str]


def is_active(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") not in TERMINAL


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol["key"] == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def _requirement_holds(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator"), expr.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def matches_node_affinity(pod_spec: dict[str, Any], node: dict[str, Any]) -> bool:
    labels = node["metadata"].get("labels") or {}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in required.get("nodeSelectorTerms") or []:
        exprs = term.get("matchExpressions") or []
        field_exprs = term.get("matchFields") or []
        if not exprs and not field_exprs:
            continue
        if all(_requirement_holds(e, labels) for e in exprs) and all(
            _requirement_holds(e, fields) for e in field_exprs
        ):
            return True
    return False


@lru_cache(maxsize=4096)
def millis(quantity: str | int | float) -> int:
    """A quantity in thousandths, rounded up (cpu in millicores; memory in milli-bytes)."""
    return math.ceil(parse_quantity(quantity) * 1000)


def pod_requests(pod: dict[str, Any]) -> tuple[int, int]:
    """The pod's cpu and memory requests (limits stand in for missing requests), in thousandths."""
    cpu = memory = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        limits = (container.get("resources") or {}).get("limits") or {}
        cpu += millis(requests.get("cpu", limits.get("cpu", 0)))
        memory += millis(requests.get("memory", limits.get("memory", 0)))
    return cpu, memory


@dataclass(frozen=True)
class NodeFacts:
    """What the filters read of a node, derived once per change of the nodes."""

    node: dict[str, Any]
    name: str
    labels: dict[str, str]
    unschedulable: bool
    taints: tuple[dict[str, Any], ...]  # the NoSchedule and NoExecute ones
    max_pods: int
    cpu: int  # allocatable, in thousandths
    memory: int

    @classmethod
    def of(cls, node: dict[str, Any]) -> NodeFacts:
        spec = node.get("spec") or {}
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        return cls(
            node,
            node["metadata"]["name"],
            node["metadata"].get("labels") or {},
            bool(spec.get("unschedulable")),
            tuple(t for t in spec.get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")),
            int(allocatable.get("pods", 110)),
            millis(allocatable.get("cpu", "0")),
            millis(allocatable.get("memory", "0")),
        )


class Scheduler:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.pods_rt: ResourceType = registry.types[PODS]
        self.nodes_rt: ResourceType = registry.types[NODES]
        self.worker: Worker[PodKey] = Worker("scheduler", self._schedule)
        self.waiting: set[PodKey] = set()
        # Active pods bound to nodes, kept from store events so a decision never scans all pods.
        self.bound: dict[PodKey, dict[str, Any]] = {}
        self.on_node: dict[str, dict[PodKey, dict[str, Any]]] = {}
        self.used: dict[str, tuple[int, int]] = {}
        self.anti_affine: dict[PodKey, dict[str, Any]] = {}
        self._nodes: list[NodeFacts] | None = None  # by name; None: to derive again
        registry.store.listeners.append(self._on_event)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        if rt.key == NODES:
            self._nodes = None
        if rt.key == NODES or (rt.key == PODS and event.type == "DELETED"):
            for key in self.waiting:
                self.worker.add(key)
        if rt.key != PODS:
            return
        meta = event.obj["metadata"]
        key = (meta["namespace"], meta["name"])
        self._account(key, event.old, None if event.type == "DELETED" else event.obj)
        if event.type == "DELETED":
            self.waiting.discard(key)
            return
        spec = event.obj.get("spec") or {}
        if (
            not spec.get("nodeName")
            and spec.get("schedulerName", "default-scheduler") == "default-scheduler"
            and not meta.get("deletionTimestamp")
        ):
            self.worker.add(key)
        elif event.old is not None and event.old["spec"].get("nodeName") != spec.get("nodeName"):
            for waiting in self.waiting:  # a pod landing can satisfy a waiting pod's affinity
                self.worker.add(waiting)

    def _account(self, key: PodKey, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """Move a pod's claim on its node from `old` to `new` (None: no claim)."""
        for pod, sign in ((old, -1), (new, 1)):
            if pod is None or not pod["spec"].get("nodeName") or not is_active(pod):
                continue
            node = pod["spec"]["nodeName"]
            cpu, memory = pod_requests(pod)
            used_cpu, used_memory = self.used.get(node, (0, 0))
            self.used[node] = (used_cpu + sign * cpu, used_memory + sign * memory)
            pods = self.on_node.setdefault(node, {})
            if sign < 0:
                pods.pop(key, None)
                self.bound.pop(key, None)
                self.anti_affine.pop(key, None)
            else:
                pods[key] = self.bound[key] = pod
                if _required((pod["spec"].get("affinity") or {}).get("podAntiAffinity")):
                    self.anti_affine[key] = pod

    def _schedule(self, key: PodKey) -> None:
        pod = self.registry.find(self.pods_rt, key[0], key[1])
        if pod is None or pod["spec"].get("nodeName") or pod["metadata"].get("deletionTimestamp"):
            self.waiting.discard(key)
            return
        if self._nodes is None:
            facts = (NodeFacts.of(n) for n in self.registry.items(self.nodes_rt))
            self._nodes = sorted(facts, key=lambda f: f.name)
        nodes = self._nodes
        node_labels = {f.name: f.labels for f in nodes}
        reasons: Counter[str] = Counter()
        feasible: list[tuple[int, str]] = []
        requests = pod_requests(pod)
        for node in nodes:
            reason = self._unfit(pod, requests, node, node_labels)
            if reason is None:
                feasible.append((len(self.on_node.get(node.name, ())), node.name))
            else:
                reasons[reason] += 1
        if feasible:
            self.waiting.discard(key)
            self._bind(pod, min(feasible)[1])
        else:
            self.waiting.add(key)
            detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
            message = f"0/{len(nodes)} nodes are available" + (f": {detail}." if detail else ".")
            self._condition(pod, "False", "Unschedulable", message)

    def _unfit(
        self,
        pod: dict[str, Any],
        requests: tuple[int, int],
        node: NodeFacts,
        node_labels: dict[str, dict[str, str]],
    ) -> str | None:
        spec = pod["spec"]
        tolerations = spec.get("tolerations") or []
        if node.unschedulable and not tolerates(
            tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
        ):
            return "node(s) were unschedulable"
        if not matches_node_affinity(spec, node.node):
            return "node(s) didn't match Pod's node affinity/selector"
        for taint in node.taints:
            if not tolerates(tolerations, taint):
                return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
        if len(self.on_node.get(node.name, ())) + 1 > node.max_pods:
            return "Too many pods"
        cpu, memory = requests
        used_cpu, used_memory = self.used.get(node.name, (0, 0))
        if cpu and used_cpu + cpu > node.cpu:
            return "Insufficient cpu"
        if memory and used_memory + memory > node.memory:
            return "Insufficient memory"
        return self._pod_affinity_unfit(pod, node.node, node_labels)

    def _pod_affinity_unfit(
        self, pod: dict[str, Any], node: dict[str, Any], node_labels: dict[str, dict[str, str]]
    ) -> str | None:
        affinity = pod["spec"].get("affinity") or {}
        if not self.anti_affine and not affinity.get("podAffinity") and not affinity.get("podAntiAffinity"):
            return None  # no rule of the pod's, and no pod that keeps others away
        ns = pod["metadata"]["namespace"]

        def peers(term: dict[str, Any], term_ns: str) -> list[dict[str, Any]]:
            selector = selector_from_spec(term.get("labelSelector"))
            namespaces = term.get("namespaces") or [term_ns]
            return [
                p
                for p in self.bound.values()
                if p["metadata"]["namespace"] in namespaces and selector.matches(p["metadata"].get("labels"))
            ]

        def same_domain(other: dict[str, Any], key: str) -> bool:
            here = (node["metadata"].get("labels") or {}).get(key)
            there = node_labels.get(other["spec"]["nodeName"], {}).get(key)
            return here is not None and here == there

        for term in _required(affinity.get("podAffinity")):
            key = term.get("topologyKey", "")
            candidates = peers(term, ns)
            if not any(same_domain(p, key) for p in candidates):
                own = selector_from_spec(term.get("labelSelector")).matches(pod["metadata"].get("labels"))
                if candidates or not own:  # the first pod of a self-affine group may go anywhere
                    return "node(s) didn't match pod affinity rules"
        for term in _required(affinity.get("podAntiAffinity")):
            key = term.get("topologyKey", "")
            if any(same_domain(p, key) for p in peers(term, ns)):
                return "node(s) didn't match pod anti-affinity rules"
        for other in self.anti_affine.values():  # existing pods' anti-affinity also keeps this pod away
            for term in _required((other["spec"].get("affinity") or {}).get("podAntiAffinity")):
                selector = selector_from_spec(term.get("labelSelector"))
                namespaces = term.get("namespaces") or [other["metadata"]["namespace"]]
                if (
                    ns in namespaces
                    and selector.matches(pod["metadata"].get("labels"))
                    and same_domain(other, term.get("topologyKey", ""))
                ):
                    return "node(s) didn't satisfy existing pods anti-affinity rules"
        return None

    def _bind(self, pod: dict[str, Any], node_name: str) -> None:
        meta = pod["metadata"]
        try:
            self.registry.bind(meta["namespace"], meta["name"], node_name)
        except ApiError as err:
            if err.code not in (404, 409):
                raise

    def _condition(self, pod: dict[str, Any], status: str, reason: str | None, message: str | None) -> None:
        new = clone(pod)
        set_condition(new["status"], "PodScheduled", status, reason, message)
        meta = pod["metadata"]
        try:
            self.registry.update(self.pods_rt, "v1", meta["namespace"], meta["name"], new, "status")
        except ApiError as err:
            if err.code not in (404, 409):
                raise


def _required(rules: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list((rules or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or [])
