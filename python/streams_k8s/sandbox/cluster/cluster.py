"""The simulated cluster: nodes, scheduler, kubelet, workload, endpoints and EndpointSlice
controllers, and the operations tests use to disturb it (kill or evict pods, cordon or taint
nodes, delete objects behind the controller's back)."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.cluster.kubelet import Kubelet
from streams_k8s.sandbox.cluster.nodes import NodeSpec
from streams_k8s.sandbox.controllers.endpoints import (
    EndpointsController,
    EndpointSliceController,
    ServicePods,
)
from streams_k8s.sandbox.controllers.scheduler import Scheduler, tolerates
from streams_k8s.sandbox.controllers.workloads import WorkloadControllers
from streams_k8s.sandbox.disruption import POD_GC, TAINT_MANAGER, mark_disruption
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.pod_streams import ContainerLogs
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.store import clone
from streams_k8s.sandbox.worker import Worker

NODES = ("", "nodes")
PODS = ("", "pods")


class SimulatedCluster:
    def __init__(
        self,
        registry: Registry,
        nodes: list[NodeSpec],
        *,
        start_delay: float = 0.0,
        termination_delay: float = 0.0,
        logs: ContainerLogs | None = None,
    ) -> None:
        self.registry = registry
        self.scheduler = Scheduler(registry)
        self.kubelet = Kubelet(registry, start_delay, termination_delay, logs or ContainerLogs(registry))
        self.workloads = WorkloadControllers(registry)
        service_pods = ServicePods(registry)
        self.endpoints = EndpointsController(registry, service_pods)
        self.endpoint_slices = EndpointSliceController(registry, service_pods)
        self._node_count = 0
        for spec in nodes:
            self.add_node(spec)

    @property
    def workers(self) -> list[Worker[Any]]:
        return [
            self.scheduler.worker,
            self.kubelet.worker,
            self.workloads.worker,
            self.endpoints.worker,
            self.endpoint_slices.worker,
        ]

    # -- nodes ----------------------------------------------------------------------------------

    def add_node(self, spec: NodeSpec) -> dict[str, Any]:
        node = self.registry.create(self.registry.types[NODES], "v1", None, spec.to_object(self._node_count))
        self._node_count += 1
        return node

    def remove_node(self, name: str) -> None:
        """Delete a node and the pods bound to it (as the pod garbage collector would)."""
        self.registry.delete(self.registry.types[NODES], None, name)
        pods = self.registry.types[PODS]
        for pod in list(self.registry.items(pods)):
            if pod["spec"].get("nodeName") == name:
                m = pod["metadata"]
                mark_disruption(self.registry, m["namespace"], m["name"], POD_GC, f"node {name} is gone")
                self.registry.delete(
                    pods, pod["metadata"]["namespace"], pod["metadata"]["name"], {"gracePeriodSeconds": 0}
                )

    def _edit_node(self, name: str, change: Any) -> dict[str, Any]:
        rt = self.registry.types[NODES]
        node = clone(self.registry.get(rt, None, name))
        change(node["spec"])
        return self.registry.update(rt, "v1", None, name, node)

    def cordon(self, name: str) -> dict[str, Any]:
        """Mark a node unschedulable: no new pods land on it; running pods stay."""
        return self._edit_node(name, lambda spec: spec.__setitem__("unschedulable", True))

    def uncordon(self, name: str) -> dict[str, Any]:
        return self._edit_node(name, lambda spec: spec.pop("unschedulable", None))

    def taint(self, name: str, key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, Any]:
        """Add a taint. With effect NoExecute, pods that do not tolerate it are evicted (deleted)."""
        taint = {"key": key, "value": value, "effect": effect}

        def add(spec: dict[str, Any]) -> None:
            spec["taints"] = [t for t in spec.get("taints") or [] if t.get("key") != key] + [taint]

        node = self._edit_node(name, add)
        if effect == "NoExecute":
            pods = self.registry.types[PODS]
            for pod in list(self.registry.items(pods)):
                if pod["spec"].get("nodeName") == name and not tolerates(
                    pod["spec"].get("tolerations") or [], taint
                ):
                    m = pod["metadata"]
                    mark_disruption(self.registry, m["namespace"], m["name"], TAINT_MANAGER, f"taint {key}")
                    self.registry.delete(pods, m["namespace"], m["name"])
        return node

    def untaint(self, name: str, key: str) -> dict[str, Any]:
        def remove(spec: dict[str, Any]) -> None:
            spec["taints"] = [t for t in spec.get("taints") or [] if t.get("key") != key]

        return self._edit_node(name, remove)

    # -- pods -----------------------------------------------------------------------------------

    def exit_container(
        self, namespace: str, name: str, exit_code: int = 0, container: str | None = None
    ) -> Any:
        """A container exits with `exit_code`; the pod's restartPolicy decides what follows."""
        return self.kubelet.exit_container(namespace, name, exit_code, container)

    def kill_pod(self, namespace: str, name: str) -> Any:
        """Every container is killed (exit code 137), as after an OOM kill or a crash."""
        return self.kubelet.exit_container(namespace, name, 137)

    def fail_pod(
        self, namespace: str, name: str, reason: str = "Error", message: str = "simulated failure"
    ) -> Any:
        return self.kubelet.fail_pod(namespace, name, reason, message)

    def evict_pod(
        self, namespace: str, name: str, message: str = "The node was low on resource: memory."
    ) -> Any:
        return self.kubelet.evict_pod(namespace, name, message)

    def set_ready(self, namespace: str, name: str, ready: bool) -> Any:
        return self.kubelet.set_ready(namespace, name, ready)

    def apply(self, spec: dict[str, Any]) -> Any:
        """The HTTP form (`POST /_sandbox/cluster`): `{"action": "cordon", "node": "node-0"}`,
        `{"action": "killPod", "namespace": "ns", "pod": "p"}`, ... (see the README)."""
        action = spec.get("action")
        node, ns, pod = spec.get("node", ""), spec.get("namespace", "default"), spec.get("pod", "")
        if action == "cordon":
            return self.cordon(node)
        if action == "uncordon":
            return self.uncordon(node)
        if action == "taint":
            return self.taint(node, spec["key"], spec.get("value", ""), spec.get("effect", "NoSchedule"))
        if action == "untaint":
            return self.untaint(node, spec["key"])
        if action == "addNode":
            return self.add_node(NodeSpec(**spec["spec"]))
        if action == "removeNode":
            return self.remove_node(node)
        if action == "killPod":
            return self.kill_pod(ns, pod)
        if action == "evictPod":
            return self.evict_pod(ns, pod)
        if action == "failPod":
            return self.fail_pod(
                ns, pod, spec.get("reason", "Error"), spec.get("message", "simulated failure")
            )
        if action == "exitContainer":
            return self.exit_container(ns, pod, int(spec.get("exitCode", 0)), spec.get("container"))
        if action == "setReady":
            return self.set_ready(ns, pod, bool(spec.get("ready", True)))
        raise ApiError(400, f"unknown cluster action {action!r}")
