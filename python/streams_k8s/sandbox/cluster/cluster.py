"""The simulated cluster as tests and tools drive it: its nodes (added, removed, cordoned,
tainted) and its pods (exits, kills, failures, evictions, readiness), every change made through
the API server, as a node's kubelet or an administrator would.

Removing a node deletes it (and stops what ran of its pods here); its pods are deleted by the
pod garbage collector, the embedded sandbox's or a real kube-controller-manager's. A NoExecute
taint evicts the pods that do not tolerate it through the taint eviction controller, likewise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import NODES
from streams_k8s.k8s.objects import Object
from streams_k8s.sandbox.cluster.kubelet import Kubelet
from streams_k8s.sandbox.cluster.node_agent import RENEW_INTERVAL, STATUS_INTERVAL, NodeAgent
from streams_k8s.sandbox.cluster.nodes import NodeSpec
from streams_k8s.sandbox.cluster.pod_disturbances import PodDisturbances

_EDIT_ATTEMPTS = 5


class UnknownAction(ValueError):
    """A control request naming no action the cluster has."""


class SimulatedCluster(PodDisturbances):
    def __init__(
        self,
        client: KubeClient,
        kubelet: Kubelet,
        *,
        renew_interval: float = RENEW_INTERVAL,
        status_interval: float = STATUS_INTERVAL,
    ) -> None:
        super().__init__(kubelet)
        self.client = client
        self.nodes = kubelet.nodes  # the kubelet runs the pods of exactly these
        self.renew_interval = renew_interval
        self.status_interval = status_interval

    # -- nodes ----------------------------------------------------------------------------------

    async def add_node(self, spec: NodeSpec) -> Object:
        """Register a node (its pod network the first /24 no node holds) and start its heartbeat."""
        existing, _ = await self.client.list_all(NODES)
        taken = [str((n.get("spec") or {}).get("podCIDR") or "") for n in existing]
        return await self.register(spec, [cidr for cidr in taken if cidr])

    async def register(self, spec: NodeSpec, taken_cidrs: list[str]) -> Object:
        """Register a node whose pod network is none of ``taken_cidrs``; start its heartbeat."""
        agent = NodeAgent(
            self.client, spec, renew_interval=self.renew_interval, status_interval=self.status_interval
        )
        node = await agent.register(taken_cidrs)
        self.nodes[spec.name] = agent
        agent.start()
        return node

    async def remove_node(self, name: str) -> None:
        """Delete a node; the pod garbage collector deletes its pods."""
        agent = self.nodes.pop(name, None)
        self.kubelet.forget_node(name)
        if agent is not None:
            await agent.remove()
            return
        await self.client.delete(NODES, name)

    async def _edit_node(self, name: str, change: Callable[[dict[str, Any]], None]) -> Object:
        for attempt in range(_EDIT_ATTEMPTS):
            node = await self.client.get(NODES, name)
            node.setdefault("spec", {})
            change(node["spec"])
            try:
                return await self.client.replace(NODES, node)
            except ApiError as err:
                if not err.conflict or attempt == _EDIT_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    async def cordon(self, name: str) -> Object:
        """Mark a node unschedulable: no new pods land on it; running pods stay."""
        return await self._edit_node(name, lambda spec: spec.__setitem__("unschedulable", True))

    async def uncordon(self, name: str) -> Object:
        return await self._edit_node(name, lambda spec: spec.pop("unschedulable", None))

    async def taint(self, name: str, key: str, value: str = "", effect: str = "NoSchedule") -> Object:
        """Add a taint (replacing one of the same key). NoExecute: the taint eviction controller
        deletes the pods that do not tolerate it."""
        taint = {"key": key, "value": value, "effect": effect}

        def add(spec: dict[str, Any]) -> None:
            spec["taints"] = [t for t in spec.get("taints") or [] if t.get("key") != key] + [taint]

        return await self._edit_node(name, add)

    async def untaint(self, name: str, key: str) -> Object:
        def remove(spec: dict[str, Any]) -> None:
            kept = [t for t in spec.get("taints") or [] if t.get("key") != key]
            if kept:
                spec["taints"] = kept
            else:
                spec.pop("taints", None)

        return await self._edit_node(name, remove)

    # -- the HTTP form ----------------------------------------------------------------------------

    async def apply(self, spec: dict[str, Any]) -> Any:
        """The HTTP form (`POST /_sandbox/cluster`): `{"action": "cordon", "node": "node-0"}`,
        `{"action": "killPod", "namespace": "ns", "pod": "p"}`, ... (see the README)."""
        action = spec.get("action")
        node, ns, pod = (
            str(spec.get("node", "")),
            str(spec.get("namespace", "default")),
            str(spec.get("pod", "")),
        )
        if action == "cordon":
            return await self.cordon(node)
        if action == "uncordon":
            return await self.uncordon(node)
        if action == "taint":
            return await self.taint(
                node, spec["key"], spec.get("value", ""), spec.get("effect", "NoSchedule")
            )
        if action == "untaint":
            return await self.untaint(node, spec["key"])
        if action == "addNode":
            return await self.add_node(NodeSpec(**spec["spec"]))
        if action == "removeNode":
            return await self.remove_node(node)
        if action == "killPod":
            return await self.kill_pod(ns, pod)
        if action == "evictPod":
            return await self.evict_pod(ns, pod)
        if action == "failPod":
            return await self.fail_pod(
                ns, pod, spec.get("reason", "Error"), spec.get("message", "simulated failure")
            )
        if action == "exitContainer":
            return await self.exit_container(ns, pod, int(spec.get("exitCode", 0)), spec.get("container"))
        if action == "setReady":
            return await self.set_ready(ns, pod, bool(spec.get("ready", True)))
        raise UnknownAction(f"unknown cluster action {action!r}")
