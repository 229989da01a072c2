"""One simulated node's registration and heartbeat, as its kubelet keeps them.

The kubelet registers its Node (or, restarted, finds the one it registered before: labelled
`SIMULATED_LABEL`; any other Node of that name is refused), with the pod network the Node says, or
the first /24 no other Node holds. Then it renews a Lease named after the node in
`kube-node-lease` every `renew_interval` (10 s) and posts the node's conditions (Ready and no
pressure) with a fresh heartbeat every `status_interval` (60 s): what the node lifecycle
controller reads to keep the node Ready. Failures are logged and retried at the next beat.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from typing import Any

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import NODES
from streams_k8s.k8s.objects import Object
from streams_k8s.sandbox.cluster.nodes import SIMULATED_LABEL, NodeSpec, free_pod_cidr

LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40
RENEW_INTERVAL = 10.0
STATUS_INTERVAL = 60.0
_CONDITIONS = (
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status (simulated)"),
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)

log = logging.getLogger(__name__)


class NodeTaken(Exception):
    """A Node of that name exists and is not one the simulation registered."""


def micro_time(at: datetime) -> str:
    """A MicroTime, as Leases hold their renew time."""
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def node_conditions(transitions: dict[str, str], at: datetime) -> list[dict[str, Any]]:
    """The node's conditions with this heartbeat (transition times kept from ``transitions``)."""
    heartbeat = _seconds(at)
    return [
        {
            "type": kind,
            "status": value,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": transitions.get(kind, heartbeat),
        }
        for kind, value, reason, message in _CONDITIONS
    ]


class NodeAgent:
    def __init__(
        self,
        client: KubeClient,
        spec: NodeSpec,
        *,
        renew_interval: float = RENEW_INTERVAL,
        status_interval: float = STATUS_INTERVAL,
    ) -> None:
        self.client = client
        self.spec = spec
        self.renew_interval = renew_interval
        self.status_interval = status_interval
        self.node: Object = {}
        self.lease: Object | None = None
        self._transitions: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def pod_cidr(self) -> str:
        return str((self.node.get("spec") or {}).get("podCIDR") or "")

    @property
    def internal_ip(self) -> str:
        addresses = (self.node.get("status") or {}).get("addresses") or []
        return next((str(a["address"]) for a in addresses if a.get("type") == "InternalIP"), "")

    async def register(self, taken_cidrs: list[str]) -> Object:
        """Create the Node (or adopt the one a previous run made), then post its status."""
        try:
            existing: Object | None = await self.client.get(NODES, self.name)
        except ApiError as err:
            if not err.not_found:
                raise
            existing = None
        if existing is None:
            cidr = free_pod_cidr(taken_cidrs)
            try:
                self.node = await self.client.create(NODES, self.spec.to_object(cidr))
            except ApiError as err:
                if not err.already_exists:
                    raise
                existing = await self.client.get(NODES, self.name)
        if existing is not None:
            labels = (existing.get("metadata") or {}).get("labels") or {}
            if labels.get(SIMULATED_LABEL) != "true" or not (existing.get("spec") or {}).get("podCIDR"):
                raise NodeTaken(f"node {self.name} exists and is not a simulated node: choose other names")
            self.node = existing
        await self.post_status()
        await self.renew()
        return self.node

    async def post_status(self) -> None:
        """The node's capacity, addresses and conditions with a fresh heartbeat."""
        at = datetime.now(UTC)
        for condition in (self.node.get("status") or {}).get("conditions") or []:
            self._transitions.setdefault(condition.get("type", ""), condition.get("lastTransitionTime", ""))
        status = {**self.spec.status(self.pod_cidr), "conditions": node_conditions(self._transitions, at)}
        self.node = await self.client.patch(
            NODES, self.name, {"status": status}, patch_type="strategic", subresource="status"
        )
        for condition in status["conditions"]:
            self._transitions.setdefault(condition["type"], condition["lastTransitionTime"])

    async def renew(self) -> None:
        """Renew the node's Lease (created, owned by the Node, when there is none)."""
        spec = {
            "holderIdentity": self.name,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": micro_time(datetime.now(UTC)),
        }
        if self.lease is not None:
            try:
                self.lease = await self.client.replace(LEASES, {**self.lease, "spec": spec}, LEASE_NAMESPACE)
                return
            except ApiError as err:
                if not (err.conflict or err.not_found):
                    raise
                self.lease = None  # someone else wrote it, or it was deleted: take it again
        owner = {
            "apiVersion": "v1",
            "kind": "Node",
            "name": self.name,
            "uid": (self.node.get("metadata") or {}).get("uid", ""),
        }
        lease = {"metadata": {"name": self.name, "ownerReferences": [owner]}, "spec": spec}
        try:
            self.lease = await self.client.create(LEASES, lease, LEASE_NAMESPACE)
        except ApiError as err:
            if not err.already_exists:
                raise
            current = await self.client.get(LEASES, self.name, LEASE_NAMESPACE)
            self.lease = await self.client.replace(LEASES, {**current, "spec": spec}, LEASE_NAMESPACE)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._beat(), name=f"node {self.name} heartbeat")

    async def _beat(self) -> None:
        loop = asyncio.get_running_loop()
        next_status = loop.time() + self.status_interval
        while True:
            await asyncio.sleep(self.renew_interval)
            try:
                await self.renew()
                if loop.time() >= next_status:
                    next_status = loop.time() + self.status_interval
                    await self.post_status()
            except Exception as exc:  # the API server may be away a while: beat again later
                log.warning("node %s: heartbeat failed: %s", self.name, exc)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def remove(self) -> None:
        """Stop the heartbeat and delete the Node (its Lease goes with it: the Node owns it)."""
        await self.stop()
        try:
            await self.client.delete(NODES, self.name)
        except ApiError as err:
            if not err.not_found:
                raise
