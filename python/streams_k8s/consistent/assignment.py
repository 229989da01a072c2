"""Which jobs a coordinator pod runs: the assignment source of the Kubernetes coordinator.

In dedicated mode a pod runs exactly one job (``SingleJob``). In shared mode the jobs of a
namespace share the pods of one coordinator StatefulSet, placed by the vreplica scheduler
(``streams_k8s.consistent.pool``): each job's ConsistentRegionOperator is a vpod, each of its
consistent regions a vreplica, and the placements are in the operator's ``status.placements``.

``PlacedJobs`` reads those placements. A job runs on exactly one pod — its *runner*, the pod
holding most of its vreplicas, ties to the lowest ordinal — because the PE runtime reaches its
coordinator at one address per job (``streams-<job>-consistentregion-api``) and the board a PE
polls holds all its regions, so one pod must drive them all. Most of the job's regions are
there already, so the rule moves the least work when a pod goes; and every pod computes it
from the same status, so all agree without talking to each other. The scheduler's placements
are then the pool's accounting (pod capacity, autoscaling, eviction) and the runner the
execution: a job split over pods (only when no pod had room for it whole) is driven from its
runner, which runs more regions than its placements say by the job's regions placed elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Protocol

from streams_k8s.api.consistent_region import VReplicaPlacement
from streams_k8s.k8s.objects import Object, ObjectKey, meta

Changed = Callable[[], None]
_ORDINAL = re.compile(r"-(\d+)$")


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


def _ordinal(pod: str) -> tuple[int, str]:
    """A StatefulSet pod's ordinal for ordering (names without one sort after, by name)."""
    match = _ORDINAL.search(pod)
    return (int(match.group(1)), pod) if match else (1 << 62, pod)


def runner_of(placements: Iterable[VReplicaPlacement]) -> str | None:
    """The pod that runs a job: most of its vreplicas, ties to the lowest ordinal; None unplaced."""
    held: dict[str, int] = {}
    for placement in placements:
        held[placement.pod_name] = held.get(placement.pod_name, 0) + placement.vreplicas
    return min(held, key=lambda pod: (-held[pod], _ordinal(pod)), default=None)


def _job_and_runner(operator: Object) -> tuple[ObjectKey | None, str | None]:
    spec, status = operator.get("spec") or {}, operator.get("status") or {}
    name = spec.get("jobName")
    job = ObjectKey(meta(operator).get("namespace") or "", name) if isinstance(name, str) and name else None
    if spec.get("mode") != "shared" or meta(operator).get("deletionTimestamp"):
        return job, None
    placements = []
    for raw in status.get("placements") or ():
        try:
            placements.append(VReplicaPlacement.model_validate(raw))
        except ValueError:  # a hand-edited entry: the scheduler rewrites it, skip it meanwhile
            continue
    return job, runner_of(placements)


class PlacedJobs:
    """Shared mode: the jobs whose runner (from their ConsistentRegionOperator's placements) is
    this pod. Feed it the operators with ``observe`` (an informer handler does)."""

    def __init__(self, pod_name: str) -> None:
        self.pod_name = pod_name
        self._runners: dict[ObjectKey, str] = {}
        self._listeners: list[Changed] = []

    def runner(self, job: ObjectKey) -> str | None:
        return self._runners.get(job)

    def observe(self, old: Object | None, new: Object | None) -> None:
        """A ConsistentRegionOperator was added, changed or deleted."""
        job, runner = _job_and_runner(new) if new is not None else (None, None)
        if new is None and old is not None:
            job, _ = _job_and_runner(old)
        if job is None:
            return
        before = self._runners.get(job)
        if runner is None:
            self._runners.pop(job, None)
        else:
            self._runners[job] = runner
        if (before == self.pod_name) != (runner == self.pod_name):
            for changed in self._listeners:
                changed()

    def owns(self, job: ObjectKey) -> bool:
        return self._runners.get(job) == self.pod_name

    def subscribe(self, changed: Changed) -> None:
        self._listeners.append(changed)
