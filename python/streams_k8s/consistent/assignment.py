"""Which jobs a coordinator pod runs: the assignment source of the Kubernetes coordinator.

In dedicated mode a pod runs exactly one job (``SingleJob``). In shared mode the jobs of many
namespaces share the pods of one coordinator StatefulSet; in the vreplica scheduler's terms each
job is a vpod and each of its regions a vreplica. A job's regions stay together on one pod,
because the PE runtime reaches its coordinator at one address per job
(``streams-<job>-consistentregion-api``), and the board a PE polls holds all of its regions.

``RendezvousPool`` places jobs without any shared state: every pod sees the same Ready pods of
the StatefulSet and gives each job to the pod with the highest hash of (pod, job), so all pods
agree, a lost pod's jobs spread over the survivors and the other jobs stay where they are. A
scheduler-driven source (placements written by the vreplica scheduler's adapter) plugs in
through the same ``Assignment`` protocol.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Protocol

from streams_k8s.k8s.objects import Object, ObjectKey, meta

Changed = Callable[[], None]


class Assignment(Protocol):
    """The jobs (``ObjectKey(namespace, job)``) this pod runs, and word when that changes."""

    def owns(self, job: ObjectKey) -> bool: ...

    def subscribe(self, changed: Changed) -> None:
        """Call ``changed`` whenever ``owns`` may answer differently."""


class SingleJob:
    """Dedicated mode: this pod runs one job."""

    def __init__(self, namespace: str, job: str) -> None:
        self.job = ObjectKey(namespace, job)

    def owns(self, job: ObjectKey) -> bool:
        return job == self.job

    def subscribe(self, changed: Changed) -> None:
        """The assignment never changes."""


def _score(pod: str, job: ObjectKey) -> bytes:
    return hashlib.sha256(f"{pod}\0{job.namespace}\0{job.name}".encode()).digest()


def owner_of(job: ObjectKey, pods: Iterable[str]) -> str | None:
    """The pod that runs ``job`` among ``pods`` (highest rendezvous score); None without pods."""
    return max(pods, key=lambda pod: _score(pod, job), default=None)


def _is_ready(pod: Object) -> bool:
    if meta(pod).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class RendezvousPool:
    """Shared mode without a scheduler: jobs placed by rendezvous hashing over the Ready pods
    of the pool. Feed it the pool's pods with ``observe`` (an informer handler does)."""

    def __init__(self, pod_name: str) -> None:
        self.pod_name = pod_name
        self._pods: dict[str, bool] = {}
        self._listeners: list[Changed] = []

    @property
    def members(self) -> list[str]:
        """The Ready pods of the pool, sorted. This pod counts only once it is Ready itself, as
        the others see it: a pod that is starting, or terminating, runs nothing, so two pods
        never both believe they run a job for longer than their watches lag."""
        return sorted(name for name, ready in self._pods.items() if ready)

    def observe(self, old: Object | None, new: Object | None) -> None:
        """A pool pod was added, changed or deleted."""
        before = self.members
        if new is None:
            if old is not None:
                self._pods.pop(str(meta(old).get("name")), None)
        else:
            self._pods[str(meta(new).get("name"))] = _is_ready(new)
        if self.members != before:
            for changed in self._listeners:
                changed()

    def owns(self, job: ObjectKey) -> bool:
        return owner_of(job, self.members) == self.pod_name

    def subscribe(self, changed: Changed) -> None:
        self._listeners.append(changed)
