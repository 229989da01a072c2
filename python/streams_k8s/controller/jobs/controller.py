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
`retry_delay` (10 s) doubling per attempt up to `RETRY_MAX_DELAY` (5 min, `jobs.submission`);
`nextAttempt` records when, so a restarted controller keeps the schedule, and a SubmissionRetrying
Event marks each retry:

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
ConsistentRegion(Operator) is recreated; a deleted PE is recreated when it is restartable; PE
Services are kept selecting their PE's pods with the planned ports (`jobs.keeping`). An edit of
a submitted job's spec is applied: re-planned, written ahead in ``status.upgrade`` and rolled out
replacing only the PEs it changes (`jobs.rollout`), rolled back when it does not reach Running in
time (`jobs.rollback`); an edit that is not valid is refused and the job keeps running its applied
spec. A failed Job, or one still submitting, starts over with an edited spec from a clean slate.
A ParallelRegion's width edits are applied too, as changes of the job like an edit: re-fused at
the new widths, written ahead in ``status.upgrade`` and rolled out the same way (`jobs.resizing`).

`JobController.reconcile` is the dispatcher; the work is done by collaborators, each given the
client, the caches (`jobs.caches`) and the recorder: `Submission` (the submission and its
retries), `Planner` (the plan, kept per Job), `ChildKeeper` (children created and kept),
`Cleanup` (a clean slate), `RunningJobs` (a submitted job's pass), `Rollout` with `EditTargets`,
`TargetFollower`, `EditRegions`, `EditNotes` and `Rollback` (every change: edits, width changes,
suspend/resume, rollbacks), `Resizer` (the widths wanted and reported) and `CountWriter`
(counts and phase). What they keep in memory for a Job (its plan, an edit's target, the time of
its last count write, the children to check) is dropped once the Job is gone from the cache
(`retained` counts it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from streams_k8s.api.consistent_region import CoordinatorMode
from streams_k8s.api.job import JobPhase
from streams_k8s.app.plan import Plan
from streams_k8s.controller.bundles.fetch import BundleFetcher
from streams_k8s.controller.jobs.caches import JobCaches, job_of
from streams_k8s.controller.jobs.cleanup import Cleanup
from streams_k8s.controller.jobs.count_writes import CountWriter
from streams_k8s.controller.jobs.edit_notes import EditNotes
from streams_k8s.controller.jobs.edit_regions import EditRegions
from streams_k8s.controller.jobs.edit_targets import EditTargets
from streams_k8s.controller.jobs.health import BUNDLE_FETCHED, PLANNED, SUBMITTED
from streams_k8s.controller.jobs.keeping import ChildKeeper
from streams_k8s.controller.jobs.plans import Planner
from streams_k8s.controller.jobs.resizing import Resizer
from streams_k8s.controller.jobs.rollback import Rollback
from streams_k8s.controller.jobs.rollout import Rollout
from streams_k8s.controller.jobs.running import RunningJobs
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.status_writes import utc_now, write_status
from streams_k8s.controller.jobs.submission import RETRY_FIRST_DELAY, Submission, Submitted
from streams_k8s.controller.planning import JobFailure, validate_job
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key

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


class JobController:
    """Reconciles Jobs: validation, then the submission or the running job's pass (see the module docs)."""

    def __init__(
        self,
        manager: Manager,
        fetcher_factory: Callable[[], Awaitable[BundleFetcher]],
        coordinator_mode: CoordinatorMode = CoordinatorMode.DEDICATED,
        retry_delay: float = RETRY_FIRST_DELAY,
    ) -> None:
        client = manager.client
        self.client = client
        self.caches = caches = JobCaches(manager)
        self.recorder = recorder = manager.event_recorder("streams-job-controller")
        self.planner = Planner(client, caches, recorder, fetcher_factory, coordinator_mode)
        self.keeper = ChildKeeper(client, caches, recorder)
        self.cleanup = Cleanup(client, caches)
        self.counts = CountWriter(client, caches)
        resizer = Resizer(client, caches, recorder, self.planner)
        self.targets = EditTargets(caches, self.planner)
        notes = EditNotes(client, recorder)
        regions = EditRegions(client, caches, recorder, notes)
        rollback = Rollback(client, recorder, notes, regions, self.targets)
        parts = (self.planner, self.keeper, resizer, self.counts)
        rollout = Rollout(client, caches, recorder, parts, (self.targets, notes, regions, rollback))
        self.notes = notes
        self.running = RunningJobs(client, caches, recorder, parts, rollout)
        self.submission = Submission(client, caches, (self.planner, self.keeper, self.cleanup), retry_delay)
        caches.jobs.add_handler(self._forget_deleted)
        self.controller = manager.controller("jobs", self.reconcile, workers=4)
        self.controller.watch(caches.jobs)
        for informer in (*caches.children.values(), caches.pods):
            self.controller.watch(informer, job_of)

    async def reconcile(self, key: ObjectKey) -> Requeue | None:
        """Converge one Job: deleted, not valid, failed or edited while submitting, submitting, or
        submitted (its pass: `jobs.running`)."""
        obj = self.caches.jobs.store.get(key)
        if obj is None:
            return None  # gone: owner references removed its children
        m = meta(obj)
        uid, generation = str(m.get("uid")), int(m.get("generation") or 1)
        status = JobStatusView.of(obj)
        if m.get("deletionTimestamp"):
            self._forget(uid)
            if status.phase != JobPhase.DELETING:
                await write_status(self.client, obj, status.with_(phase=JobPhase.DELETING))
            return None
        phase = status.phase
        try:
            job = validate_job(obj)
        except JobFailure as failure:
            if phase in _RUNNING and status.id is not None and status.applied_spec is not None:
                obj, status = await self.notes.refuse(obj, status, failure)  # it keeps running
                return await self.running.maintain(obj, None, status)
            if phase == JobPhase.FAILED and status.observed_generation == generation:
                return await self.cleanup.clean(obj, uid)
            await self.submission.fail(obj, status, failure, generation)
            return await self.cleanup.clean(obj, uid)

        edited = status.observed_generation not in (None, generation)
        if phase == JobPhase.FAILED or (phase == JobPhase.SUBMITTING and edited):
            restarted = await self._start_over(obj, status, generation, edited)
            if not isinstance(restarted, dict):
                return restarted
            obj, status, phase = restarted, JobStatusView.of(restarted), JobPhase.SUBMITTING
        if phase in _RUNNING and status.id is not None:
            return await self.running.maintain(obj, job, status)
        submitted = await self.submission.submit(obj, job, status, generation)
        if isinstance(submitted, Submitted):
            return await self.running.maintain(submitted.obj, job, submitted.status)
        return submitted

    async def _start_over(
        self, obj: Object, status: JobStatusView, generation: int, edited: bool
    ) -> Object | Requeue | None:
        """A failed attempt retried when due, or an edited spec started over, from a clean slate:
        the Job as written for the new attempt, else when to look again (None: it stays failed)."""
        uid = str(meta(obj).get("uid"))
        retry = not edited  # an automatic retry; else a new spec starts over
        next_attempt = status.next_attempt
        if retry and next_attempt is None:
            return await self.cleanup.clean(obj, uid)  # stays failed; finishes a cleanup cut short
        if (wait := await self.cleanup.clean(obj, uid)) is not None:
            return wait  # the new attempt starts once the old children are gone
        attempt = 1
        if retry and next_attempt is not None:
            due = (next_attempt - utc_now()).total_seconds()
            if due > 0:
                return Requeue(due)
            attempt = (status.submission_attempts or 1) + 1
        obj = await write_status(self.client, obj, self.submission.restart(status, generation, attempt))
        if retry:
            note = f"attempt {attempt}: starting again from a clean slate after {_failed_reason(status)}"
            await self.recorder.record(obj, "Normal", "SubmissionRetrying", note)
        return obj

    def _forget_deleted(self, kind: str, old: Object | None, new: Object | None) -> None:
        """A Job gone from the cache (its deletion finished) takes what is kept for it along."""
        if kind == "delete" and old is not None:
            self._forget(str(meta(old).get("uid")))
            self.keeper.changes.forget(object_key(old))

    def _forget(self, uid: str) -> None:
        self.planner.forget(uid)
        self.targets.forget(uid)
        self.counts.forget(uid)

    def plan_of(self, key: ObjectKey) -> Plan | None:
        """The Job's plan as this replica last kept it (`Planner.plan_of`): what the flow reading
        maps PE metrics to operators by."""
        return self.planner.plan_of(key)

    def retained(self) -> dict[str, int]:
        """Entries kept per Job, by cache (none once every Job is gone)."""
        return {
            "plans": self.planner.retained(),
            "edits": self.targets.retained(),
            "child-changes": len(self.keeper.changes),
            **self.counts.retained(),
        }
