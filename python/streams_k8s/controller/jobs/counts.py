"""What a job's status counts of its PEs and pods, kept current from their events.

The job's status says how many PE pods are ready, how many PEs run, and which are stopped. Counted
afresh on each reconcile, that was a pass over the job's pods and PEs each time: while a 10,000-PE
job starts, each pod event reconciles the job, and the passes made the operator's CPU per PE grow
with the job. Each object's contribution is remembered by its key, so an event replaces exactly
what that object counted before, whatever the event carries as the old state.
"""

from __future__ import annotations

from collections.abc import Collection

from streams_k8s.api.contract import JOB_LABEL, PE_LABEL, SVC_LABEL, SVC_PE
from streams_k8s.controller.pes.lifecycle import DELETED
from streams_k8s.k8s.informer import EventType, Informer
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key


def pod_ready(pod: Object) -> bool:
    """The pod runs and is Ready (and is not going away)."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or meta(pod).get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())


def _job_key(obj: Object) -> ObjectKey | None:
    m = meta(obj)
    job = (m.get("labels") or {}).get(JOB_LABEL)
    return ObjectKey(m.get("namespace") or "", str(job)) if job else None


class JobCounts:
    def __init__(self, pes: Informer, pods: Informer) -> None:
        # by Job key: PE label -> its ready pods (two launches of one PE briefly both ready count once)
        self._ready: dict[ObjectKey, dict[str | None, int]] = {}
        self._running: dict[ObjectKey, set[ObjectKey]] = {}  # PEs connected and not stopped
        self._stopped: dict[ObjectKey, dict[ObjectKey, Object]] = {}  # PEs whose pod was deleted for good
        self._pods: dict[ObjectKey, tuple[ObjectKey, str | None]] = {}  # ready pod -> (job, PE label)
        self._pes: dict[ObjectKey, ObjectKey] = {}  # PE running or stopped -> its job
        pods.add_handler(self._on_pod)
        pes.add_handler(self._on_pe)
        for pod in pods.store.select():  # caches filled already
            self._on_pod("add", None, pod)
        for pe in pes.store.select():
            self._on_pe("add", None, pe)

    def pods_ready(self, job: ObjectKey) -> int:
        """PEs with a ready pod."""
        return len(self._ready.get(job, ()))

    def ready_pes(self, job: ObjectKey) -> Collection[str | None]:
        """The PE labels (ids) of the job's PEs with a ready pod."""
        return self._ready.get(job, {}).keys()

    def pes_running(self, job: ObjectKey) -> int:
        """PEs connected and not stopped (a stopped PE's last connectivity report is stale)."""
        return len(self._running.get(job, ()))

    def pes_stopped(self, job: ObjectKey) -> list[Object]:
        return list(self._stopped.get(job, {}).values())

    def retained(self) -> int:
        return len(self._pods) + len(self._pes)

    def _on_pod(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        key = object_key(new if new is not None else old or {})
        counted = self._pods.pop(key, None)
        if counted is not None:
            job, pe = counted
            ready = self._ready[job]
            ready[pe] -= 1
            if not ready[pe]:
                del ready[pe]
                if not ready:
                    del self._ready[job]
        if new is None or not pod_ready(new):
            return
        labels = meta(new).get("labels") or {}
        job_key = _job_key(new)
        if job_key is None or labels.get(SVC_LABEL) != SVC_PE:
            return
        pe_label = labels.get(PE_LABEL)
        ready = self._ready.setdefault(job_key, {})
        ready[pe_label] = ready.get(pe_label, 0) + 1
        self._pods[key] = (job_key, pe_label)

    def _on_pe(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        key = object_key(new if new is not None else old or {})
        job = self._pes.pop(key, None)
        if job is not None:
            running, stopped = self._running.get(job, set()), self._stopped.get(job, {})
            running.discard(key)
            stopped.pop(key, None)
            if not running:
                self._running.pop(job, None)
            if not stopped:
                self._stopped.pop(job, None)
        job = _job_key(new) if new is not None else None
        if new is None or job is None:
            return
        status = new.get("status") or {}
        if status.get("phase") == DELETED:
            self._stopped.setdefault(job, {})[key] = new
        elif status.get("connectivity") == "Full":
            self._running.setdefault(job, set()).add(key)
        else:
            return
        self._pes[key] = job
