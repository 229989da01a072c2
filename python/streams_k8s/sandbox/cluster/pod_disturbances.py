"""What tests do to running pods through the simulated kubelet: a container exits, the pod is
killed, fails or is evicted, readiness flips. Each writes the pod's status as the kubelet would
(through the API server) and returns the pod as written (None when it is gone).

A container that runs as a process (`pod_processes`) cannot be told to exit with a code: kill its
pod instead (SIGKILL: its exit, 137, is reported as the container's). Failing or evicting such a
pod kills its processes first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.objects import Object
from streams_k8s.sandbox.cluster import pod_status
from streams_k8s.sandbox.cluster.container_env import runs_here
from streams_k8s.sandbox.cluster.kubelet import Kubelet


class PodDisturbances:
    def __init__(self, kubelet: Kubelet) -> None:
        self.kubelet = kubelet

    async def _pod(self, namespace: str, name: str) -> Object:
        pod: Object = await self.kubelet.client.get(PODS, name, namespace)
        if not self.kubelet.ours(pod):
            raise ValueError(f"pod {namespace}/{name} is not bound to a simulated node")
        return pod

    async def _running(self, namespace: str, name: str) -> Object:
        pod = await self._pod(namespace, name)
        if (pod.get("status") or {}).get("phase") != "Running":
            raise ValueError(
                f"pod {namespace}/{name} is {(pod.get('status') or {}).get('phase')}, not Running"
            )
        return pod

    async def _write(self, pod: Object, compute: Callable[[Object], dict[str, Any]]) -> Object | None:
        meta = pod["metadata"]
        return await self.kubelet.update_status((meta["namespace"], meta["name"]), compute, meta["uid"])

    async def exit_container(
        self, namespace: str, name: str, exit_code: int = 0, container: str | None = None
    ) -> Object | None:
        """A container (all of them by default) exits; the restart policy decides what follows."""
        pod = await self._running(namespace, name)
        containers = [
            c for c in pod["spec"].get("containers") or [] if container is None or c.get("name") == container
        ]
        if any(runs_here(c) for c in containers) and self.kubelet.processes is not None:
            raise ValueError(f"pod {namespace}/{name} runs a process: kill the pod to end it")
        codes = {str(c["name"]): exit_code for c in containers}
        restart = pod_status.restarts(pod, codes)
        for each in codes:
            self.kubelet.log(
                pod, f"exited with code {exit_code} ({'Completed' if exit_code == 0 else 'Error'})", each
            )
        written = await self._write(pod, lambda p: pod_status.exited(p, codes, restart))
        if written is None:
            return None
        policy = pod["spec"].get("restartPolicy", "Always")
        counts = {cs["name"]: cs.get("restartCount", 0) for cs in written["status"]["containerStatuses"]}
        for each in sorted(restart):
            self.kubelet.log(written, f"restarted (restart {counts[each]}, restartPolicy {policy})", each)
        return written

    async def kill_pod(self, namespace: str, name: str) -> Object | None:
        """Every container is killed (exit code 137), as after an OOM kill or a crash."""
        pod = await self._running(namespace, name)
        processes = self.kubelet.processes
        if processes is not None and processes.running(pod["metadata"]["uid"]):
            await processes.kill(pod["metadata"]["uid"])
            return await self.kubelet.client.get(PODS, name, namespace)
        return await self.exit_container(namespace, name, pod_status.KILLED)

    async def _stop_processes(self, pod: Object) -> None:
        processes = self.kubelet.processes
        if processes is not None and processes.running(pod["metadata"]["uid"]):
            await self.kubelet.prober.stop(pod["metadata"]["uid"])
            await processes.stop(pod["metadata"]["uid"], 0)

    async def fail_pod(
        self, namespace: str, name: str, reason: str = "Error", message: str = "simulated failure"
    ) -> Object | None:
        """The pod fails as a whole (phase Failed with a reason), e.g. a node-level error."""
        pod = await self._pod(namespace, name)
        await self._stop_processes(pod)
        self.kubelet.log(pod, f"pod failed ({reason}): {message}")
        return await self._write(pod, lambda p: pod_status.failed(p, reason, message))

    async def evict_pod(
        self, namespace: str, name: str, message: str = "The node was low on resource: memory."
    ) -> Object | None:
        """The kubelet evicts the pod: phase Failed, reason Evicted, DisruptionTarget condition."""
        pod = await self._pod(namespace, name)
        await self._stop_processes(pod)
        self.kubelet.log(pod, f"pod failed (Evicted): {message}")
        return await self._write(pod, lambda p: pod_status.evicted(p, message))

    async def set_ready(self, namespace: str, name: str, ready: bool) -> Object | None:
        """Flip readiness of every container (as a failing or recovering readiness probe would)."""
        pod = await self._running(namespace, name)
        everyone = {str(c["name"]): ready for c in pod["spec"].get("containers") or []}
        written = await self._write(pod, lambda p: pod_status.readiness(p, everyone))
        if written is not None:
            self.kubelet.log(written, "ready" if ready else "not ready (readiness probe failing)")
        return written
