"""A Job submitted: its id and start written ahead, its plan made and recorded, its children
created; a failed attempt recorded (phase Failed) and, when the cause can go away on its own,
retried after `retry_backoff` (see `jobs.controller` for which failures are retried).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from streams_k8s.api.job import Job, JobPhase
from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.controller.jobs.cleanup import CLEANUP_POLL, Cleanup
from streams_k8s.controller.jobs.health import SUBMITTED, VALID
from streams_k8s.controller.jobs.job_ids import allocate_job_id
from streams_k8s.controller.jobs.keeping import ChildKeeper
from streams_k8s.controller.jobs.plans import Planner
from streams_k8s.controller.jobs.status import JobStatusView, submitted_message
from streams_k8s.controller.jobs.status_writes import status_written, utc_now, write_status
from streams_k8s.controller.kinds import JOBS
from streams_k8s.controller.planning import JobFailure
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.conditions import format_time, set_condition
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.objects import Object, ObjectKey, meta

# Automatic retries of failures that can go away on their own (see `jobs.controller`).
RETRY_FIRST_DELAY = 10.0


RETRY_MAX_DELAY = 300.0


def retry_backoff(first_delay: float, attempts: int) -> float:
    """Seconds to wait before the retry that follows ``attempts`` failed attempts."""
    return float(min(first_delay * 2 ** (attempts - 1), RETRY_MAX_DELAY))


@dataclass(frozen=True, slots=True)
class Submitted:
    """Every child of the job exists: it is kept from now on (`jobs.running`)."""

    obj: Object
    status: JobStatusView


class Submission:
    """Submits Jobs and records failed attempts (see the module docs)."""

    def __init__(
        self,
        client: KubeClient,
        caches: JobCaches,
        parts: tuple[Planner, ChildKeeper, Cleanup],
        retry_delay: float,
    ) -> None:
        self.client, self.caches = client, caches
        self.planner, self.keeper, self.cleanup = parts
        self.retry_delay = retry_delay  # before the first automatic retry; doubles per attempt

    async def submit(
        self, obj: Object, job: Job, status: JobStatusView, generation: int
    ) -> Submitted | Requeue | None:
        """One pass of a submission: Submitted once every child exists, else when to look again."""
        uid = str(meta(obj)["uid"])
        if status.id is None:
            obj, status = await self._record_intent(obj, job, generation)
        started = status.submission_started or utc_now()
        remaining = job.spec.submission_time_out_in_seconds - (utc_now() - started).total_seconds()
        try:
            async with asyncio.timeout(max(remaining, 0.0)):
                return await self._submit_within(obj, job, status, generation, uid)
        except TimeoutError:
            failure = JobFailure(
                SUBMITTED,
                "SubmissionTimedOut",
                f"submission did not finish within submissionTimeOutInSeconds="
                f"{job.spec.submission_time_out_in_seconds}",
                retryable=True,
            )
            fresh = (
                self.caches.jobs.store.get(ObjectKey(str(job.metadata.namespace), str(job.metadata.name)))
                or obj
            )
            await self.fail(fresh, status_written(fresh, status), failure, generation)
            return await self.cleanup.clean(fresh, uid)
        except JobFailure as failure:
            await self.fail(obj, status, failure, generation)
            return await self.cleanup.clean(obj, uid)

    async def _record_intent(self, obj: Object, job: Job, generation: int) -> tuple[Object, JobStatusView]:
        """Write-ahead: the job id and the start of the submission, before anything is made."""
        namespace = str(job.metadata.namespace)
        fresh = await self.client.get(JOBS, str(job.metadata.name), namespace)  # never trust a stale id
        status = JobStatusView.of(fresh)
        if status.id is not None:
            return fresh, status
        taken = [
            i for j in self.caches.jobs.store.select(namespace) if (i := JobStatusView.of(j).id) is not None
        ]
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
        written = await write_status(self.client, fresh, status)  # its Event: `jobs.milestones`
        return written, status_written(written, status)

    async def _submit_within(
        self, obj: Object, job: Job, status: JobStatusView, generation: int, uid: str
    ) -> Submitted | Requeue:
        planned, obj, status = await self.planner.plan(obj, job, status, generation, uid)
        if self.cleanup.going(obj, uid):
            return Requeue(CLEANUP_POLL)  # children of an earlier attempt are still going away
        await self.keeper.create_missing(planned.children, lambda child: True)
        status = status.with_(
            phase=JobPhase.SUBMITTED,
            message=submitted_message(len(planned.plan.pes)),
            applied_generation=generation,
            applied_spec=job.spec.to_wire(),
        )
        obj = await write_status(self.client, obj, status)  # its Event: `jobs.milestones`
        return Submitted(obj, status_written(obj, status))

    def restart(self, status: JobStatusView, generation: int, attempt: int) -> JobStatusView:
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

    async def fail(self, obj: Object, status: JobStatusView, failure: JobFailure, generation: int) -> None:
        """Record a failed attempt (phase Failed, the failure's condition False, when the next
        attempt is due if it is retried); the plan is made afresh next time."""
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
        await write_status(self.client, obj, status)  # its Event: `jobs.milestones`
        self.planner.forget(str(meta(obj).get("uid")))
