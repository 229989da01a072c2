"""A running job's PE and pod counts, PodsReady, Degraded and its phase (Submitted until every PE
pod is ready, then Running) kept current in its status: written at once when the phase changes,
else at most every `COUNTS_INTERVAL`.
"""

from __future__ import annotations

import time

from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.api.job import JobPhase
from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.controller.jobs.counts import JobCounts
from streams_k8s.controller.jobs.health import PODS_READY, with_health
from streams_k8s.controller.jobs.status import JobStatusView, submitted_message
from streams_k8s.controller.jobs.status_writes import write_status
from streams_k8s.controller.pes.degraded import DEGRADED, degraded_condition
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.objects import Object, ObjectKey, meta

# Phases the pod counts decide (the others belong to an edit, a suspension or a rollback).
_COUNTED = frozenset({JobPhase.SUBMITTED, JobPhase.RUNNING})


# Ready counts change with every PE coming up: while a job starts they are written at most this
# often (the move to Running is written at once), so a 1,000-PE job costs a few status writes, not
# one per PE, and the informer has caught up before the next conditional write.
COUNTS_INTERVAL = 1.0


class CountWriter:
    """Keeps the counts in a job's status current (see the module docs)."""

    def __init__(self, client: KubeClient, caches: JobCaches) -> None:
        self.client, self.caches = client, caches
        self.counts = JobCounts(caches.pes, caches.pods)
        self._written: dict[str, float] = {}  # by Job uid: monotonic time of the last count write

    def forget(self, uid: str) -> None:
        """The next count write for this Job is not held back (what runs changed)."""
        self._written.pop(uid, None)

    def retained(self) -> dict[str, int]:
        return {"count-writes": len(self._written), "counted": self.counts.retained()}

    async def update(self, obj: Object, status: JobStatusView) -> Requeue | None:
        """Write ``status`` with the counts as they are (unless nothing changed, or the last count
        write is too recent: then when to look again)."""
        m = meta(obj)
        namespace, name = str(m.get("namespace")), str(m.get("name"))
        key = ObjectKey(namespace, name)
        expected = status.processing_elements or len(
            self.caches.pes.store.select_by_labels({JOB_LABEL: name}, namespace)
        )
        ready_pes, ready_pods = self.counts.pes_running(key), self.counts.pods_ready(key)
        conditions = status.conditions
        all_ready = expected > 0 and ready_pods >= expected
        set_condition(
            conditions,
            PODS_READY,
            "True" if all_ready else "False",
            "AllPodsReady" if all_ready else "PodsNotReady",
            f"{ready_pods}/{expected} PE pods ready",
            m.get("generation"),
        )
        set_condition(
            conditions, DEGRADED, *degraded_condition(self.counts.pes_stopped(key)), m.get("generation")
        )
        phase = JobPhase.RUNNING if all_ready else JobPhase.SUBMITTED
        if status.phase is not None and status.phase not in _COUNTED:
            phase = status.phase
        wanted = status.with_(
            conditions=conditions, phase=phase, processing_elements_ready=ready_pes, pods_ready=ready_pods
        )
        if phase == JobPhase.RUNNING and status.message == submitted_message(expected):
            wanted = wanted.with_(message=None)  # submitted is old news once it runs
        wanted = with_health(wanted, int(m.get("generation") or 1))
        if wanted == JobStatusView.of(obj):
            return None
        uid = str(m.get("uid"))
        wait = self._written.get(uid, -COUNTS_INTERVAL) + COUNTS_INTERVAL - time.monotonic()
        if phase == status.phase and wait > 0:
            return Requeue(wait)
        await write_status(self.client, obj, wanted)  # the Running Event: `controller.jobs.milestones`
        if self.caches.holds(obj):
            self._written[uid] = time.monotonic()
        return None
