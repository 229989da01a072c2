"""The job controller: a Job becomes its children (see `children.desired`), and its status tells how far.

Phases: Submitting → Submitted (every child exists) → Running (every PE pod ready), or Failed;
Deleting once the Job is being deleted (owner references then remove every child).
Conditions: Valid, BundleFetched, Planned, PodsReady; an Event marks each milestone and failure.

The status is a write-ahead log. Before anything is created the status records the job id, the
submission start, the sha256 of the bundle (`bundleDigest`) and the node count fusion uses
(`plannedNodes`); every status write carries the resourceVersion it was computed from, so a stale
cache never overwrites newer facts. A controller killed anywhere re-plans the same PEs from the
recorded facts and creates what is missing (names are deterministic, AlreadyExists is success): no
duplicates, no orphans, no second id. A re-plan uses exactly the recorded bundle content, from the
content-addressed cache without fetching whatever the pull policy; a replica that lacks it fetches
it and checks the digest. Content that changed since submission is never planned from: a
submitted job keeps its children, does not restore deleted ones and says so (BundleChanged Event,
status message, BundleFetched=False); a job still submitting fails and retries (below).

A failed submission is recorded as phase Failed first, then every child is deleted with Foreground
propagation; a new attempt starts from a clean slate once the last child is gone, keeps the job
id, counts itself in `submissionAttempts` and fetches the bundle afresh (per its pull policy).
Failures that can go away without a change to the Job are retried automatically, after
`retry_delay` (10 s) doubling per attempt up to `RETRY_MAX_DELAY` (5 min); `nextAttempt` records
when, so a restarted controller keeps the schedule, and a SubmissionRetrying Event marks each retry:

- a bundle fetch failing transiently (connection error, 5xx, 429) after the fetcher's own retries;
- a bundle's Secret or CA ConfigMap that does not exist: it is often applied with the Job, in any
  order;
- a bundle whose content changed while the job was submitting: a clean slate takes the new one;
- `submissionTimeOutInSeconds` passed: API errors and a slow API server are passing conditions;
- placement on nodes that are not there: a pool needing more matching nodes than the cluster has,
  `host(name or IP)` no node has, a named node not schedulable (nodes come, go and get labels).

Everything else needs a new spec or bundle, so the Job stays Failed until its spec changes: an
invalid spec (Valid=False), a bundle that does not exist, is refused (4xx, TLS) or is not a bundle,
planning errors of the application itself (fusion, topology, a pool index it lacks, a sized
pool used with a larger index), a plan whose objects the cluster would not accept (checked before
anything is written: `children.limits`, Planned=False PlanTooLarge) and an object the API server
refuses all the same (400, 413, 422: Submitted=False ObjectRefused). A spec change starts over at
attempt 1.

Once submitted, a deleted ConfigMap, Service, HostPool, ParallelRegion, Export, Import,
ConsistentRegion(Operator) is recreated; a deleted PE is recreated when it is restartable. Spec
edits after submission are not applied (status message and a SpecChangeIgnored Event say so); a
failed Job, or one still submitting, starts over with them from a clean slate.
A ParallelRegion's width edits are: the job is re-fused and only what changed is updated (`jobs.widths`);
PE Services are kept selecting their PE's pods with the planned ports (`service_update`).

What is kept in memory for a Job (its plan, the time of its last count write) is dropped once the
Job is gone from the cache (`retained` counts it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from streams_k8s.api.job import Job, JobPhase
from streams_k8s.controller.jobs.base import (
    BUNDLE_FETCHED,
    CLEANUP_POLL,
    PLANNED,
    SUBMITTED,
    VALID,
    status_written,
    utc_now,
)
from streams_k8s.controller.jobs.job_ids import allocate_job_id
from streams_k8s.controller.jobs.running import RunningJobs, submitted_message
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.kinds import JOBS
from streams_k8s.controller.planning import SubmissionFailure, validate_job
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.objects import Object, ObjectKey, meta

# Phases of a submitted job: its children exist and are kept.
_RUNNING = frozenset(
    {
        JobPhase.SUBMITTED,
        JobPhase.RUNNING,
        JobPhase.UPGRADING,
        JobPhase.SUSPENDING,
        JobPhase.SUSPENDED,
        JobPhase.ROLLING_BACK,
        JobPhase.ROLLED_BACK,
    }
)


def _failed_reason(status: JobStatusView) -> str:
    """The reason of the condition a failed attempt set False."""
    for type_ in (BUNDLE_FETCHED, PLANNED, SUBMITTED):
        found = status.condition(type_)
        if found is not None and found.get("status") == "False":
            return str(found.get("reason"))
    return "a failure"


class JobController(RunningJobs):
    """Reconciles Jobs: validation, the phases of a submission and its retries (see the module docs)."""

    async def reconcile(self, key: ObjectKey) -> Requeue | None:
        obj = self.jobs.store.get(key)
        if obj is None:
            return None  # gone: owner references removed its children
        m = meta(obj)
        uid, generation = str(m.get("uid")), int(m.get("generation") or 1)
        status = JobStatusView.of(obj)
        if m.get("deletionTimestamp"):
            self._forget(uid)
            if status.phase != JobPhase.DELETING:
                await self._write_status(obj, status.with_(phase=JobPhase.DELETING))
            return None
        phase = status.phase
        try:
            job = validate_job(obj)
        except SubmissionFailure as failure:
            if phase in _RUNNING and status.id is not None and status.applied_spec is not None:
                obj, status = await self._refuse_edit(obj, status, failure)  # it keeps running
                return await self._maintain(obj, None, status)
            if phase == JobPhase.FAILED and status.observed_generation == generation:
                return await self._clean(obj, uid)
            await self._fail(obj, status, failure, generation)
            return await self._clean(obj, uid)

        edited = status.observed_generation not in (None, generation)
        if phase == JobPhase.FAILED or (phase == JobPhase.SUBMITTING and edited):
            retry = not edited  # an automatic retry; else a new spec starts over
            next_attempt = status.next_attempt
            if retry and next_attempt is None:
                return await self._clean(obj, uid)  # stays failed; finishes a cleanup cut short
            if (wait := await self._clean(obj, uid)) is not None:
                return wait  # the new attempt starts once the old children are gone
            attempt = 1
            if retry and next_attempt is not None:
                due = (next_attempt - utc_now()).total_seconds()
                if due > 0:
                    return Requeue(due)
                attempt = (status.submission_attempts or 1) + 1
            obj = await self._write_status(obj, self._restart(status, generation, attempt))
            if retry:
                note = f"attempt {attempt}: starting again from a clean slate after {_failed_reason(status)}"
                await self.recorder.record(obj, "Normal", "SubmissionRetrying", note)
            status, phase = JobStatusView.of(obj), JobPhase.SUBMITTING
        if phase in _RUNNING and status.id is not None:
            return await self._maintain(obj, job, status)
        return await self._submit(obj, job, status, generation)

    def _restart(self, status: JobStatusView, generation: int, attempt: int) -> JobStatusView:
        """A new attempt (retry or edited spec): keep the id, forget the rest (null deletes in a patch)."""
        conditions: list[dict[str, Any]] = []
        set_condition(conditions, VALID, "True", "Validated", "the spec is valid", generation)
        fresh = status.cleared().with_(
            phase=JobPhase.SUBMITTING,
            conditions=conditions,
            observed_generation=generation,
            submission_started=utc_now(),
            submission_attempts=attempt,
            generation_id=0,
        )
        return fresh if status.id is None else fresh.with_(id=status.id)

    async def _submit(self, obj: Object, job: Job, status: JobStatusView, generation: int) -> Requeue | None:
        uid = str(meta(obj)["uid"])
        if status.id is None:
            obj, status = await self._record_intent(obj, job, generation)
        started = status.submission_started or utc_now()
        remaining = job.spec.submission_time_out_in_seconds - (utc_now() - started).total_seconds()
        try:
            async with asyncio.timeout(max(remaining, 0.0)):
                return await self._submit_within(obj, job, status, generation, uid)
        except TimeoutError:
            failure = SubmissionFailure(
                SUBMITTED,
                "SubmissionTimedOut",
                f"submission did not finish within submissionTimeOutInSeconds="
                f"{job.spec.submission_time_out_in_seconds}",
                retryable=True,
            )
            fresh = self.jobs.store.get(ObjectKey(str(job.metadata.namespace), str(job.metadata.name))) or obj
            await self._fail(fresh, status_written(fresh, status), failure, generation)
            return await self._clean(fresh, uid)
        except SubmissionFailure as failure:
            await self._fail(obj, status, failure, generation)
            return await self._clean(obj, uid)

    async def _record_intent(self, obj: Object, job: Job, generation: int) -> tuple[Object, JobStatusView]:
        """Write-ahead: the job id and the start of the submission, before anything is made."""
        namespace = str(job.metadata.namespace)
        fresh = await self.client.get(JOBS, str(job.metadata.name), namespace)  # never trust a stale id
        status = JobStatusView.of(fresh)
        if status.id is not None:
            return fresh, status
        taken = [i for j in self.jobs.store.select(namespace) if (i := JobStatusView.of(j).id) is not None]
        job_id = await allocate_job_id(self.client, namespace, taken)
        status = status.with_(
            phase=JobPhase.SUBMITTING,
            id=job_id,
            generation_id=0,
            observed_generation=generation,
            submission_started=utc_now(),
            submission_attempts=status.submission_attempts or 1,
        )
        conditions = status.conditions
        set_condition(conditions, VALID, "True", "Validated", "the spec is valid", generation)
        status = status.with_(conditions=conditions)
        written = await self._write_status(fresh, status)  # its Event: `controller.milestones`
        return written, status_written(written, status)

    async def _submit_within(
        self, obj: Object, job: Job, status: JobStatusView, generation: int, uid: str
    ) -> Requeue | None:
        planned, obj, status = await self._plan(obj, job, status, generation, uid)
        if any(meta(child).get("deletionTimestamp") for child in self._owned(obj, uid)):
            return Requeue(CLEANUP_POLL)  # children of an earlier attempt are still going away
        await self._create_missing(planned.children, lambda child: True)
        status = status.with_(
            phase=JobPhase.SUBMITTED,
            message=submitted_message(len(planned.plan.pes)),
            applied_generation=generation,
            applied_spec=job.spec.to_wire(),
        )
        obj = await self._write_status(obj, status)  # its Event: `controller.milestones`
        return await self._maintain(obj, job, status_written(obj, status))
