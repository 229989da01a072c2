"""The simulated kubelet: runs the pods the API server binds to the simulated nodes, as a client
of that server (any: the embedded sandbox or a real kube-apiserver).

It watches the pods bound to a node (``fieldSelector=spec.nodeName!=``, keeping its nodes' own),
and steps each with `pod_lifecycle.next_step`:
- a Pending pod starts after ``start_delay``: a pod address from its node's podCIDR (`pod_network`:
  never one a live pod holds, the running pods' addresses adopted first), containers running,
  conditions Initialized, PodReadyToStartContainers, ContainersReady and Ready, written through
  ``pods/{name}/status``. Containers whose program is ours run as processes (`pod_processes`),
  not ready until their readiness probe passes (`readiness`); the others run nothing;
- a pod being deleted is finished as the kubelet does: its processes get SIGTERM (SIGKILL after
  the grace period), simulated containers stop after ``termination_delay``; then the containers'
  terminated statuses and the final phase are written, and the pod is deleted with grace period 0
  and a UID precondition. Finalizers are left alone: the API server keeps the pod until whoever
  owns them removes them.
A process that exits is the container's exit: restartPolicy decides (a restart waits 1 s,
doubling to 5 min, where the kubelet's back-off starts at 10 s). Status writes carry the pod's
resourceVersion and uid, made again from a fresh read on a conflict (`status_writes`). Each pod
has a worker of its own (one step of it at a time), so pods start and stop side by side. Each
step is written to the container's log, marked ``sandbox kubelet:``. Test hooks that disturb pods
(exits, failures, evictions, readiness) are `pod_disturbances`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.informer import EventType, Informer
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.objects import Object, ObjectKey
from streams_k8s.sandbox.cluster import pod_status
from streams_k8s.sandbox.cluster.container_env import runs_here
from streams_k8s.sandbox.cluster.container_logs import ContainerLog
from streams_k8s.sandbox.cluster.node_agent import NodeAgent
from streams_k8s.sandbox.cluster.pod_lifecycle import Step, next_step
from streams_k8s.sandbox.cluster.pod_network import HostNetwork, NoFreeAddress, PodAddresses, host_address
from streams_k8s.sandbox.cluster.pod_processes import PodProcesses
from streams_k8s.sandbox.cluster.readiness import ReadinessProber
from streams_k8s.sandbox.cluster.status_writes import write_status
from streams_k8s.sandbox.worker import Worker

log = logging.getLogger(__name__)

PodKey = tuple[str, str]
RETRY_START = 5.0
RETRY_SYNC = 1.0
BACKOFF_START, BACKOFF_MAX = 1.0, 300.0


def key_of(pod: Object) -> PodKey:
    meta = pod.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class Kubelet:
    def __init__(
        self,
        client: KubeClient,
        pods: Informer,
        nodes: dict[str, NodeAgent],
        logs: ContainerLog,
        *,
        processes: PodProcesses | None = None,
        host_network: HostNetwork | None = None,
        start_delay: float = 0.0,
        termination_delay: float = 0.0,
    ) -> None:
        self.client = client
        self.pods = pods
        self.nodes = nodes
        self.logs = logs
        self.processes = processes
        self.host_network = host_network or HostNetwork()
        self.start_delay = start_delay
        self.termination_delay = termination_delay
        self.addresses = PodAddresses()
        self.prober = ReadinessProber(self.readiness_changed)
        self.worker: Worker[PodKey] = Worker("kubelet", self._sync)
        self._keys: dict[str, PodKey] = {}  # pod uid -> its key
        self._due: dict[PodKey, float] = {}
        self._stop_logged: set[str] = set()
        self._stopping: set[str] = set()  # uids whose processes are being stopped
        self._exit_codes: dict[str, dict[str, int]] = {}  # uid -> codes of its stopped processes
        self._restarts: dict[tuple[str, str], int] = {}  # (uid, container) -> restarts so far
        self._backoffs: set[asyncio.Task[None]] = set()
        self._restarting: set[tuple[str, str]] = set()  # (uid, container) waiting out a back-off
        self._syncing: set[PodKey] = set()  # pods whose worker runs; those in _again run once more
        self._again: set[PodKey] = set()
        pods.add_handler(self._on_event)

    # -- what the API server says ---------------------------------------------------------------

    def ours(self, pod: Object) -> bool:
        return (pod.get("spec") or {}).get("nodeName") in self.nodes

    def _on_event(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        pod = new if new is not None else old
        if pod is None or not self.ours(pod):
            return
        uid = str(pod["metadata"]["uid"])
        key = key_of(pod)
        if kind == "delete":
            self._forget(uid, key, pod)
            return
        self._keys[uid] = key
        status = pod.get("status") or {}
        if status.get("phase") in pod_status.TERMINAL:
            self.addresses.release(uid)
        elif status.get("podIP"):
            self.addresses.adopt(pod["spec"]["nodeName"], uid, str(status["podIP"]))
        self.worker.add(key)

    def _forget(self, uid: str, key: PodKey, pod: Object) -> None:
        """The pod is gone: whatever of it still runs is killed, its address freed."""
        self._keys.pop(uid, None)
        if self.pods.store.get(ObjectKey(*key)) is None:  # no pod of that name took its place
            self._due.pop(key, None)
        self._stop_logged.discard(uid)
        self._exit_codes.pop(uid, None)
        address = self.addresses.held_by(uid)
        self.addresses.release(uid)
        if address is not None:
            self.host_network.leave(address)
        if self.processes is not None and (self.processes.running(uid) or uid in self._stopping):
            self.worker.spawn(self._kill(uid))
        elif self.prober.probing(uid):
            self.worker.spawn(self.prober.stop(uid))

    async def _kill(self, uid: str) -> None:
        await self.prober.stop(uid)
        if self.processes is not None:
            await self.processes.stop(uid, 0)

    # -- one pod ----------------------------------------------------------------------------------

    def _wait(self, key: PodKey, delay: float) -> bool:
        """True once ``delay`` has passed since the kubelet first saw ``key`` in this state."""
        if delay <= 0:
            return True
        loop = asyncio.get_running_loop()
        due = self._due.setdefault(key, loop.time() + delay)
        if loop.time() >= due:
            del self._due[key]
            return True
        self.worker.later(due - loop.time(), key)
        return False

    def _stopped(self, key: PodKey, pod: Object) -> bool:
        meta = pod["metadata"]
        uid, grace = str(meta["uid"]), meta.get("deletionGracePeriodSeconds")
        deleting = bool(meta.get("deletionTimestamp")) and bool(grace)
        if (
            deleting
            and uid not in self._stop_logged
            and (pod.get("status") or {}).get("phase") not in pod_status.TERMINAL
        ):
            self._stop_logged.add(uid)
            self.log(pod, f"stopping (SIGTERM, grace period {grace}s)")
        if uid in self._stopping or (self.processes is not None and self.processes.running(uid)):
            return False
        return not deleting or self._wait(key, self.termination_delay)

    def _sync(self, key: PodKey) -> None:
        """Each pod has a worker of its own, as in the kubelet: pods start and stop side by side
        (one at a time, each waiting for its status write, 5,000 pods took 2.5 times as long)."""
        if key in self._syncing:
            self._again.add(key)  # its worker looks once more when done
            return
        self._syncing.add(key)
        self.worker.spawn(self._pod_worker(key))

    async def _pod_worker(self, key: PodKey) -> None:
        try:
            while True:
                try:
                    await self._step(key)
                except Exception as exc:  # the API server refused or is away: look again later
                    log.warning("kubelet: pod %s/%s: %s; retrying in %.0fs", *key, exc, RETRY_SYNC)
                    # Not `worker.later`: what the server keeps refusing is no work the simulation is
                    # behind on.
                    asyncio.get_running_loop().call_later(RETRY_SYNC, self.worker.add, key)
                if key not in self._again:
                    return
                self._again.discard(key)
        finally:
            self._syncing.discard(key)

    async def _step(self, key: PodKey) -> None:
        pod = self.pods.store.get(ObjectKey(*key))
        if pod is None or not self.ours(pod):
            return
        uid = str(pod["metadata"]["uid"])
        step = next_step(pod, stopped=self._stopped(key, pod))
        if step is Step.START:
            if self._wait(key, self.start_delay):
                await self._start(pod, self.nodes[pod["spec"]["nodeName"]])
        elif step is Step.STOP:
            self._stop(key, pod)
        elif step is Step.FINISH:
            codes = self._exit_codes.pop(uid, {})
            await self.update_status(key, lambda p: pod_status.finished(p, codes), uid)
        elif step is Step.REMOVE:
            with contextlib.suppress(ApiError):  # gone, or replaced by a pod of another uid: not ours
                await self.client.delete(PODS, key[1], key[0], uid=uid, grace_period_seconds=0)
        elif self._lost_processes(pod):
            await self._restart_lost(pod)

    def _stop(self, key: PodKey, pod: Object) -> None:
        uid = str(pod["metadata"]["uid"])
        if uid in self._stopping or self.processes is None or not self.processes.running(uid):
            return  # nothing runs here, or it is being stopped: the delay runs out
        self._stopping.add(uid)
        grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)

        async def stop() -> None:
            assert self.processes is not None
            try:
                await self.prober.stop(uid)
                self._exit_codes[uid] = await self.processes.stop(uid, grace)
            finally:
                self._stopping.discard(uid)
                self.worker.add(key)

        self.worker.spawn(stop())

    async def _start(self, pod: Object, node: NodeAgent) -> None:
        key, uid = key_of(pod), str(pod["metadata"]["uid"])
        try:
            pod_ip = self.addresses.allocate(node.name, node.pod_cidr, uid)
        except NoFreeAddress as err:
            self.log(pod, f"cannot start: {err}")
            return
        running = [c for c in pod["spec"].get("containers") or [] if runs_here(c)]
        processes = {str(c["name"]) for c in running}
        probed = frozenset(str(c["name"]) for c in running if ReadinessProber.probe_of(c) is not None)
        address = host_address(pod_ip) if running and self.processes is not None else None
        if running and self.processes is not None:
            if address is None:
                self.log(pod, f"cannot start: pod address {pod_ip} is outside the simulated pod network")
                return
            try:
                self.host_network.listen(pod_ip, address)
                await self.processes.start(pod, address, pod_ip, node.internal_ip)
            except Exception as exc:  # e.g. no token for its service account: the kubelet retries
                why = f"cannot start the container's process: {exc}"
                self.log(pod, f"{why}; retrying in {RETRY_START:.0f}s")
                await self.update_status(
                    key, lambda p: pod_status.waiting(p, "CreateContainerConfigError", why), uid
                )
                self.worker.later(RETRY_START, key)
                return
        written = await self.update_status(
            key, lambda p: pod_status.started(p, node.internal_ip, pod_ip, probed), uid
        )
        if written is None:
            return
        for container in pod["spec"].get("containers") or []:
            name, image = container["name"], container.get("image", "")
            runs = (
                "a process runs in it"
                if name in processes
                else ("nothing runs in it: this log is what the sandbox simulates")
            )
            self.log(
                pod, f'container "{name}" started on {node.name} (image {image}, IP {pod_ip}); {runs}', name
            )
        self.log(pod, "ready" if not probed else "not ready until its readiness probe passes")
        for container in running:
            if address is not None:
                self.prober.start(uid, address, container)

    # -- processes --------------------------------------------------------------------------------

    def _lost_processes(self, pod: Object) -> bool:
        """A Running pod whose processes are not here (the simulation restarted meanwhile)."""
        uid = str(pod["metadata"]["uid"])
        return (
            self.processes is not None
            and (pod.get("status") or {}).get("phase") == "Running"
            and PodProcesses.runs(pod)
            and not self.processes.running(uid)
            and not any(held == uid for held, _ in self._restarting)
        )

    async def _restart_lost(self, pod: Object) -> None:
        uid = str(pod["metadata"]["uid"])
        for container in pod["spec"].get("containers") or []:
            if runs_here(container):
                await self.exited(uid, str(container["name"]), pod_status.KILLED)

    async def exited(self, uid: str, container: str, code: int) -> None:
        """A container's process ended on its own: its status, then a restart if its policy says."""
        key = self._keys.get(uid)
        pod = self.pods.store.get(ObjectKey(*key)) if key is not None else None
        if key is None or pod is None or pod["metadata"].get("deletionTimestamp"):
            if key is not None:
                self.worker.add(key)  # being deleted: the deletion goes on
            return
        codes = {container: code}
        restart = pod_status.restarts(pod, codes)
        self.log(pod, f"exited with code {code} ({'Completed' if code == 0 else 'Error'})", container)
        written = await self.update_status(key, lambda p: pod_status.exited(p, codes, restart), uid)
        if written is None or container not in restart:
            return
        count = self._restarts[(uid, container)] = self._restarts.get((uid, container), 0) + 1
        delay = min(BACKOFF_MAX, BACKOFF_START * 2 ** (count - 1))
        policy = written["spec"].get("restartPolicy", "Always")
        self.log(written, f"restarted (restart {count}, restartPolicy {policy})", container)
        self._restarting.add((uid, container))
        task = asyncio.get_running_loop().create_task(
            self._restart_after(delay, key, uid, container), name=f"restart {container} of {key}"
        )
        self._backoffs.add(task)
        task.add_done_callback(self._backoffs.discard)

    async def _restart_after(self, delay: float, key: PodKey, uid: str, container: str) -> None:
        try:
            await asyncio.sleep(delay)
            await self._restart(key, uid, container)
        finally:
            self._restarting.discard((uid, container))

    async def _restart(self, key: PodKey, uid: str, container: str) -> None:
        pod = self.pods.store.get(ObjectKey(*key))
        if pod is None or pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
            return
        if self.processes is None:
            return
        status = pod.get("status") or {}
        pod_ip = str(status.get("podIP") or "")
        address = host_address(pod_ip)
        if address is None:
            return
        self.host_network.listen(pod_ip, address)
        node = self.nodes.get(pod["spec"]["nodeName"])
        try:
            await self.processes.start(pod, address, pod_ip, node.internal_ip if node else "")
        except Exception as exc:
            self.log(pod, f"cannot restart the container's process: {exc}", container)
            return
        spec = next((c for c in pod["spec"].get("containers") or [] if c.get("name") == container), None)
        if spec is not None and ReadinessProber.probe_of(spec) is not None:
            await self.readiness_changed(uid, container, False)
            await self.prober.stop(uid)
            self.prober.start(uid, address, spec)

    async def readiness_changed(self, uid: str, container: str, ready: bool) -> None:
        key = self._keys.get(uid)
        if key is None:
            return
        written = await self.update_status(key, lambda p: pod_status.readiness(p, {container: ready}), uid)
        if written is not None:
            self.log(written, "ready" if ready else "not ready (readiness probe failing)", container)

    # -- writes -------------------------------------------------------------------------------------

    async def update_status(
        self, key: PodKey, compute: Callable[[Object], dict[str, Any] | None], uid: str | None = None
    ) -> Object | None:
        """Write ``compute(pod)`` as the pod's status (`status_writes.write_status`)."""
        return await write_status(self.client, self.pods.store, key, compute, uid)

    def log(self, pod: Object, text: str, container: str | None = None) -> None:
        """A line in the log of one container (all of them by default), marked as the kubelet's."""
        names = [container] if container else [c["name"] for c in pod["spec"].get("containers") or []]
        for name in names:
            self.logs.write(pod["metadata"]["uid"], name, f"sandbox kubelet: {text}")

    def forget_node(self, name: str) -> None:
        """A node left: what ran of its pods is killed (the pod garbage collector deletes them)."""
        for uid, key in list(self._keys.items()):
            pod = self.pods.store.get(ObjectKey(*key))
            if pod is not None and pod["spec"].get("nodeName") == name:
                self._forget(uid, key, pod)

    async def close(self) -> None:
        for task in list(self._backoffs):
            task.cancel()
        await self.prober.close()
        if self.processes is not None:
            await self.processes.close()
