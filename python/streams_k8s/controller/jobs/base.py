"""The job controller's state and what every part of it uses: its caches, the plans it keeps per
Job, status writes, a failed attempt's record and the deletion of a job's children.

`JobController` (`jobs.controller`) is assembled in layers, one concept each: this base, the
plan and its children in the cluster (`jobs.planned`), width changes (`jobs.resizing`), a
submitted job kept as planned (`jobs.running`) and the submission itself (`jobs.controller`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from streams_k8s.api.consistent_region import CoordinatorMode
from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    JOB_LABEL,
    PE_LABEL,
)
from streams_k8s.api.job import Job, JobPhase
from streams_k8s.app.plan import Plan
from streams_k8s.controller.bundles.fetch import BundleFetcher
from streams_k8s.controller.children.changes import ChildChanges
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.children.transport_secret import (
    config_map_transport,
    live_secret,
    rendered_transport,
    secret_transport,
)
from streams_k8s.controller.jobs.counts import JobCounts
from streams_k8s.controller.jobs.health import with_health
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.kinds import (
    CONSISTENT_REGION_OPERATORS,
    CONSISTENT_REGIONS,
    EXPORTS,
    HOSTPOOLS,
    IMPORTS,
    JOBS,
    PARALLEL_REGIONS,
    PES,
)
from streams_k8s.controller.planning import SubmissionFailure
from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.conditions import format_time, set_condition
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.kinds import CONFIGMAPS, NODES, PODS, SERVICES
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, merge_patch_to, meta, object_key

VALID, BUNDLE_FETCHED, PLANNED = "Valid", "BundleFetched", "Planned"


SUBMITTED = "Submitted"  # the condition a submission that timed out sets False


# Automatic retries of failures that can go away on their own (see the module docs).
RETRY_FIRST_DELAY = 10.0


RETRY_MAX_DELAY = 300.0


# How soon to look again while a clean slate is being deleted.
CLEANUP_POLL = 0.5


@dataclass(slots=True)
class KeptPlan:
    """A job's plan and children, kept while its spec generation and job id stay the same."""

    generation: int
    job_id: int
    plan: Plan
    children: list[Desired]
    resized: dict[tuple[tuple[str, int], ...], tuple[Plan, list[Desired]]] = field(default_factory=dict)

    @property
    def base_widths(self) -> dict[str, int]:
        return {r.alias: r.width for r in self.plan.parallel_regions}

    @property
    def transport(self) -> tuple[str, str] | None:
        """The job's transport certificate and key (kept across re-plans), if it has them."""
        return rendered_transport(self.children)


def utc_now() -> datetime:
    return datetime.now(UTC)


def retry_backoff(first_delay: float, attempts: int) -> float:
    """Seconds to wait before the retry that follows ``attempts`` failed attempts."""
    return float(min(first_delay * 2 ** (attempts - 1), RETRY_MAX_DELAY))


def status_written(obj: Object, before: JobStatusView) -> JobStatusView:
    """The status a write answered with (the API server's), else the one written."""
    return JobStatusView(obj.get("status") or before.raw)


class JobControllerBase:
    """The caches, clients and per-Job memory of the job controller (see the module docs)."""

    def __init__(
        self,
        manager: Manager,
        fetcher_factory: Callable[[], Awaitable[BundleFetcher]],
        coordinator_mode: CoordinatorMode = CoordinatorMode.DEDICATED,
        retry_delay: float = RETRY_FIRST_DELAY,
    ) -> None:
        self.client = manager.client
        self.coordinator_mode = coordinator_mode
        self.retry_delay = retry_delay  # before the first automatic retry; doubles per attempt
        self.jobs = manager.informer(JOBS)
        self.pes = manager.informer(PES)
        self.hostpools = manager.informer(HOSTPOOLS)
        self.configmaps = manager.informer(CONFIGMAPS, label_selector=f"{APP_LABEL}={APP_VALUE}")
        self.services = manager.informer(SERVICES, label_selector=f"{APP_LABEL}={APP_VALUE}")
        self.pods = manager.informer(PODS, label_selector=f"{APP_LABEL}={APP_VALUE}")
        self.parallel_regions = manager.informer(PARALLEL_REGIONS)
        self.consistent_regions = manager.informer(CONSISTENT_REGIONS)
        self.cros = manager.informer(CONSISTENT_REGION_OPERATORS)
        self.exports = manager.informer(EXPORTS)
        self.imports = manager.informer(IMPORTS)
        self.nodes = manager.informer(NODES)
        self.children: dict[Resource, Informer] = {
            CONFIGMAPS: self.configmaps,
            SERVICES: self.services,
            HOSTPOOLS: self.hostpools,
            EXPORTS: self.exports,
            IMPORTS: self.imports,
            PARALLEL_REGIONS: self.parallel_regions,
            CONSISTENT_REGION_OPERATORS: self.cros,
            CONSISTENT_REGIONS: self.consistent_regions,
            PES: self.pes,
        }
        self.recorder: EventRecorder = manager.event_recorder("streams-job-controller")
        self._fetcher_factory = fetcher_factory
        self._fetcher: BundleFetcher | None = None
        # Per Job, dropped when it goes (`retained` counts them).
        self._planned: dict[str, KeptPlan] = {}  # by Job uid
        self._counts_written: dict[str, float] = {}  # by Job uid: monotonic time of the last count write
        self._targets: dict[str, tuple[int, Any]] = {}  # by Job uid: (generation, plan) of an edit applied
        self._child_changes = ChildChanges(self.jobs, self.children)  # by Job key, dropped when it goes
        self._counts = JobCounts(self.pes, self.pods)
        self.jobs.add_handler(self._forget_deleted)
        self.controller = manager.controller("jobs", self.reconcile, workers=4)
        self.controller.watch(self.jobs)
        for informer in self.children.values():
            self.controller.watch(informer, self._job_of)
        self.controller.watch(self.pods, self._job_of)
        for informer in (*self.children.values(), self.pods):  # "the X of job J" on every reconcile
            informer.store.index_label(JOB_LABEL)
        self.pods.store.index_label(PE_LABEL)  # "the pod of PE N", for each PE of a rolling edit

    async def reconcile(self, key: ObjectKey) -> Requeue | None:
        """Converge one Job (`jobs.controller.JobController`)."""
        raise NotImplementedError

    def _forget_deleted(self, kind: str, old: Object | None, new: Object | None) -> None:
        """A Job gone from the cache (its deletion finished) takes its plan and children with it."""
        if kind == "delete" and old is not None:
            self._forget(str(meta(old).get("uid")))
            self._child_changes.forget(object_key(old))

    def _forget(self, uid: str) -> None:
        self._planned.pop(uid, None)
        self._targets.pop(uid, None)
        self._counts_written.pop(uid, None)

    def _cached(self, obj: Object) -> bool:
        """The cache still holds this Job (the same incarnation): what is kept for it will be dropped."""
        m = meta(obj)
        current = self.jobs.store.get(ObjectKey(str(m.get("namespace")), str(m.get("name"))))
        return current is not None and meta(current).get("uid") == m.get("uid")

    async def _live_transport(self, namespace: str, job: str) -> tuple[str, str] | None:
        """The transport certificate the job's PEs use now (its Secret's, read by name: no cache
        of Secrets; else the name table's, as an earlier release wrote it), if any: a re-plan keeps
        it rather than making another."""
        secret = await live_secret(self.client, namespace, job)
        table = self.configmaps.store.get(ObjectKey(namespace, job))
        return secret_transport(secret) or config_map_transport(table)

    def plan_of(self, key: ObjectKey) -> Plan | None:
        """The Job's plan as this replica last kept it (at the spec's widths); None if it has none."""
        job = self.jobs.store.get(key)
        kept = self._planned.get(str(meta(job).get("uid"))) if job is not None else None
        return kept.plan if kept is not None else None

    def retained(self) -> dict[str, int]:
        """Entries kept per Job, by cache (none once every Job is gone)."""
        return {
            "plans": len(self._planned),
            "count-writes": len(self._counts_written),
            "edits": len(self._targets),
            "child-changes": len(self._child_changes),
            "counted": self._counts.retained(),
        }

    @staticmethod
    def _job_of(obj: Object) -> list[ObjectKey]:
        job = (meta(obj).get("labels") or {}).get(JOB_LABEL)
        return [ObjectKey(meta(obj).get("namespace") or "", job)] if job else []

    async def _bundle_fetcher(self) -> BundleFetcher:
        if self._fetcher is None:
            self._fetcher = await self._fetcher_factory()
        return self._fetcher

    async def _fail(
        self, obj: Object, status: JobStatusView, failure: SubmissionFailure, generation: int
    ) -> None:
        same_spec = status.observed_generation == generation
        attempts = (status.submission_attempts or 1) if same_spec else 1
        next_attempt, message = None, failure.message
        if failure.retryable:
            next_attempt = utc_now() + timedelta(seconds=retry_backoff(self.retry_delay, attempts))
            message = f"{message}; attempt {attempts + 1} at {format_time(next_attempt)}"
        conditions = status.conditions
        set_condition(conditions, failure.condition, "False", failure.reason, message, generation)
        status = status.with_(
            phase=JobPhase.FAILED,
            message=f"{failure.reason}: {message}",
            observed_generation=generation,
            conditions=conditions,
            submission_attempts=attempts,
            next_attempt=next_attempt,
        )
        await self._write_status(obj, status)  # its Event: `controller.milestones`
        self._planned.pop(str(meta(obj).get("uid")), None)

    def _owned(self, obj: Object, uid: str) -> list[Object]:
        m = meta(obj)
        found: list[Object] = []
        for informer in self.children.values():
            for child in informer.store.select_by_labels(
                {JOB_LABEL: str(m.get("name"))}, str(m.get("namespace"))
            ):
                if any(ref.get("uid") == uid for ref in meta(child).get("ownerReferences") or ()):
                    found.append(child)
        return found

    async def _clean(self, obj: Object, uid: str) -> Requeue | None:
        """Delete every child of this Job (Foreground); Requeue until none is left."""
        m = meta(obj)
        namespace, name = str(m.get("namespace")), str(m.get("name"))
        remaining = 0
        for resource, informer in self.children.items():
            for child in informer.store.select_by_labels({JOB_LABEL: name}, namespace):
                cm = meta(child)
                if not any(ref.get("uid") == uid for ref in cm.get("ownerReferences") or ()):
                    continue
                remaining += 1
                if cm.get("deletionTimestamp"):
                    continue
                try:
                    await self.client.delete(
                        resource, str(cm["name"]), namespace, propagation="Foreground", uid=cm.get("uid")
                    )
                except ApiError as err:
                    if not (err.not_found or err.conflict):
                        raise
        return Requeue(CLEANUP_POLL) if remaining else None

    async def _write_status(self, obj: Object, status: JobStatusView) -> Object:
        """Merge-patch the status, conditional on the resourceVersion it was computed from (what
        the new status lacks is removed: an applied spec without a field the last one had)."""
        m = meta(obj)
        status = with_health(status, int(m.get("generation") or 1))
        wanted = merge_patch_to(obj.get("status") or {}, status.raw)
        patch = {"metadata": {"resourceVersion": m.get("resourceVersion")}, "status": wanted}
        return await self.client.patch(JOBS, str(m["name"]), patch, str(m["namespace"]), subresource="status")


def applied_job(obj: Object, status: JobStatusView) -> Job:
    """The Job as its children follow it: its metadata with the applied spec."""
    return Job.from_wire({**obj, "spec": status.applied_spec or obj.get("spec")})
