"""The simulated kubelet: runs pods bound to simulated nodes, without running anything.

A bound pod moves Pending -> Running (podIP from the node's podCIDR, hostIP, Ready) after an
optional start delay; graceful deletions complete after an optional termination delay. Nothing
inside the pod is evaluated: images are not pulled, commands, probes, volumes, init containers
and resource limits have no effect. Tests drive the rest: a container exits with a code, a pod
fails or is evicted, readiness flips.
"""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

from streams_k8s.sandbox.clock import now
from streams_k8s.sandbox.conditions import set_condition
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.pod_streams import ContainerLogs
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import WatchEvent, clone
from streams_k8s.sandbox.worker import Worker

PODS = ("", "pods")
NODES = ("", "nodes")
PodKey = tuple[str, str]


class Kubelet:
    def __init__(
        self,
        registry: Registry,
        start_delay: float = 0.0,
        termination_delay: float = 0.0,
        logs: ContainerLogs | None = None,
    ) -> None:
        self.registry = registry
        self.logs = logs if logs is not None else ContainerLogs(registry)
        self.start_delay = start_delay
        self.termination_delay = termination_delay
        self.pods_rt: ResourceType = registry.types[PODS]
        self.nodes_rt: ResourceType = registry.types[NODES]
        self.worker: Worker[PodKey] = Worker("kubelet", self._sync)
        self._next_ip: dict[str, int] = {}
        self._due: dict[PodKey, float] = {}
        self._stopping: set[str] = set()  # uids of pods whose graceful stop was logged
        registry.graceful_pods = True
        registry.store.listeners.append(self._on_event)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        if rt.key == PODS and event.type != "DELETED" and event.obj["spec"].get("nodeName"):
            self.worker.add((event.obj["metadata"]["namespace"], event.obj["metadata"]["name"]))
        elif rt.key == PODS and event.type == "DELETED":
            self._due.pop((event.obj["metadata"]["namespace"], event.obj["metadata"]["name"]), None)
            self._stopping.discard(event.obj["metadata"]["uid"])

    def _log(self, pod: dict[str, Any], text: str, container: str | None = None) -> None:
        """A line in the log of one container (all of them by default), marked as the kubelet's."""
        names = [container] if container else [c["name"] for c in pod["spec"].get("containers") or []]
        for name in names:
            self.logs.write(pod["metadata"]["uid"], name, f"sandbox kubelet: {text}")

    def _wait(self, key: PodKey, delay: float) -> bool:
        """True once `delay` has passed since the kubelet first saw `key` in this state."""
        if delay <= 0:
            return True
        loop = asyncio.get_running_loop()
        due = self._due.setdefault(key, loop.time() + delay)
        if loop.time() >= due:
            del self._due[key]
            return True
        self.worker.later(due - loop.time(), key)
        return False

    def _sync(self, key: PodKey) -> None:
        pod = self.registry.find(self.pods_rt, *key)
        if pod is None:
            return
        node = self.registry.find(self.nodes_rt, None, pod["spec"]["nodeName"])
        if node is None:
            if pod["metadata"].get("deletionTimestamp"):  # no kubelet to finish it: the pod GC does
                self._ignore_gone(lambda: self.registry.delete(self.pods_rt, *key, {"gracePeriodSeconds": 0}))
            return  # bound to a node that does not exist: stays Pending, as with a lost node
        if pod["metadata"].get("deletionTimestamp"):
            grace = pod["metadata"].get("deletionGracePeriodSeconds")
            if grace and pod["metadata"]["uid"] not in self._stopping:
                self._stopping.add(pod["metadata"]["uid"])
                self._log(pod, f"stopping (SIGTERM, grace period {grace}s)")
            if grace and self._wait(key, self.termination_delay):
                self._ignore_gone(lambda: self.registry.delete(self.pods_rt, *key, {"gracePeriodSeconds": 0}))
            return
        if pod["status"].get("phase") == "Pending" and self._wait(key, self.start_delay):
            self._start(pod, node)

    def _start(self, pod: dict[str, Any], node: dict[str, Any]) -> None:
        new = clone(pod)
        at = now()
        status = new["status"]
        status["phase"] = "Running"
        status["hostIP"] = next(
            a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"
        )
        status["hostIPs"] = [{"ip": status["hostIP"]}]
        status["podIP"] = self._allocate_ip(node)
        status["podIPs"] = [{"ip": status["podIP"]}]
        status["startTime"] = at
        status["containerStatuses"] = [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": f"sandbox://{c.get('image', '')}",
                "containerID": f"sandbox://{pod['metadata']['uid'][:8]}-{c['name']}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": at}},
            }
            for c in new["spec"].get("containers") or []
        ]
        _set_ready(status, True)
        for cond in ("Initialized", "PodReadyToStartContainers"):
            set_condition(status, cond, "True")
        for c in new["spec"].get("containers") or []:
            self._log(
                new,
                f'container "{c["name"]}" started on {node["metadata"]["name"]} (image {c.get("image", "")}, '
                f"IP {status['podIP']}); nothing runs in it: this log is what the sandbox simulates",
                c["name"],
            )
        self._log(new, "ready")
        self._write_status(new)

    def _allocate_ip(self, node: dict[str, Any]) -> str:
        name = node["metadata"]["name"]
        network = ipaddress.ip_network(node["spec"].get("podCIDR", "127.244.0.0/24"))
        index = self._next_ip.get(name, 1)
        self._next_ip[name] = index % (network.num_addresses - 2) + 1
        return str(network.network_address + index)

    def _write_status(self, new: dict[str, Any]) -> dict[str, Any] | None:
        meta = new["metadata"]
        written: dict[str, Any] | None = self._ignore_gone(
            lambda: self.registry.update(self.pods_rt, "v1", meta["namespace"], meta["name"], new, "status")
        )
        return written

    @staticmethod
    def _ignore_gone(action: Any) -> Any:
        try:
            return action()
        except ApiError as err:
            if err.code not in (404, 409):
                raise
            return None

    # -- test hooks -----------------------------------------------------------------------------

    def _running(self, namespace: str, name: str) -> dict[str, Any]:
        pod = self.registry.get(self.pods_rt, namespace, name)
        if pod["status"].get("phase") != "Running":
            raise ValueError(f"pod {namespace}/{name} is {pod['status'].get('phase')}, not Running")
        return clone(pod)  # type: ignore[no-any-return]

    def exit_container(
        self, namespace: str, name: str, exit_code: int = 0, container: str | None = None
    ) -> dict[str, Any] | None:
        """A container (all of them by default) exits; the restart policy decides what follows."""
        pod = self._running(namespace, name)
        policy = pod["spec"].get("restartPolicy", "Always")
        at = now()
        for cs in pod["status"]["containerStatuses"]:
            if container is not None and cs["name"] != container:
                continue
            terminated = {
                "exitCode": exit_code,
                "reason": "Completed" if exit_code == 0 else "Error",
                "startedAt": (cs["state"].get("running") or {}).get("startedAt", at),
                "finishedAt": at,
                "containerID": cs.get("containerID", ""),
            }
            self._log(pod, f"exited with code {exit_code} ({terminated['reason']})", cs["name"])
            if policy == "Always" or (policy == "OnFailure" and exit_code != 0):
                cs["restartCount"] += 1
                cs["lastState"] = {"terminated": terminated}
                cs["state"] = {"running": {"startedAt": at}}
            else:
                cs["state"] = {"terminated": terminated}
                cs["ready"] = False
                cs["started"] = False
        states = [cs["state"] for cs in pod["status"]["containerStatuses"]]
        if all("terminated" in s for s in states):
            ok = all(s["terminated"]["exitCode"] == 0 for s in states)
            pod["status"]["phase"] = "Succeeded" if ok else "Failed"
            _set_ready(pod["status"], False, "PodCompleted" if ok else "PodFailed")
        elif any("terminated" in s for s in states):
            _set_ready(pod["status"], False, "ContainersNotReady")
        written = self._write_status(pod)
        for cs in pod["status"]["containerStatuses"]:
            if (
                "running" in cs["state"]
                and cs.get("lastState")
                and (container is None or cs["name"] == container)
            ):
                self._log(
                    pod, f"restarted (restart {cs['restartCount']}, restartPolicy {policy})", cs["name"]
                )
        return written

    def fail_pod(
        self, namespace: str, name: str, reason: str = "Error", message: str = "the pod failed (simulated)"
    ) -> dict[str, Any] | None:
        """The pod fails as a whole (phase Failed with a reason), e.g. a node-level error."""
        pod = clone(self.registry.get(self.pods_rt, namespace, name))
        at = now()
        pod["status"].update({"phase": "Failed", "reason": reason, "message": message})
        for cs in pod["status"].get("containerStatuses") or []:
            cs["state"] = {"terminated": {"exitCode": 137, "reason": reason, "finishedAt": at}}
            cs["ready"] = False
        self._log(pod, f"pod failed ({reason}): {message}")
        _set_ready(pod["status"], False, "PodFailed")
        return self._write_status(pod)

    def evict_pod(
        self, namespace: str, name: str, message: str = "The node was low on resource: memory."
    ) -> Any:
        """The kubelet evicts the pod: phase Failed, reason Evicted, DisruptionTarget condition."""
        pod = self.fail_pod(namespace, name, "Evicted", message)
        if pod is None:
            return None
        pod = clone(pod)
        set_condition(pod["status"], "DisruptionTarget", "True", "TerminationByKubelet", message)
        return self._write_status(pod)

    def set_ready(self, namespace: str, name: str, ready: bool) -> dict[str, Any] | None:
        """Flip readiness of every container (as a failing or recovering readiness probe would)."""
        pod = self._running(namespace, name)
        for cs in pod["status"]["containerStatuses"]:
            cs["ready"] = ready
        _set_ready(pod["status"], ready, None if ready else "ContainersNotReady")
        self._log(pod, "ready" if ready else "not ready (readiness probe failing)")
        return self._write_status(pod)


def _set_ready(status: dict[str, Any], ready: bool, reason: str | None = None) -> None:
    value = "True" if ready else "False"
    set_condition(status, "ContainersReady", value, reason)
    set_condition(status, "Ready", value, reason)
