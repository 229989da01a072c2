"""The job controller: a Job becomes its children (see `submission`), and its status tells how far.

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
anything is written: `child_limits`, Planned=False PlanTooLarge) and an object the API server
refuses all the same (400, 413, 422: Submitted=False ObjectRefused). A spec change starts over at
attempt 1.

Once submitted, a deleted ConfigMap, Service, HostPool, ParallelRegion, Export, Import,
ConsistentRegion(Operator) is recreated; a deleted PE is recreated when it is restartable. Spec
edits after submission are not applied (status message and a SpecChangeIgnored Event say so); a
failed Job, or one still submitting, starts over with them from a clean slate.
A ParallelRegion's width edits are: the job is re-fused and only what changed is updated (`widths`);
PE Services are kept selecting their PE's pods with the planned ports (`service_update`).

What is kept in memory for a Job (its plan, the time of its last count write) is dropped once the
Job is gone from the cache (`retained` counts it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from streams_k8s.api.consistent_region import CoordinatorMode
from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    JOB_LABEL,
    PE_LABEL,
    SVC_LABEL,
    SVC_PE,
    TRANSPORT_CERT_KEY,
    TRANSPORT_KEY_KEY,
    name_table_stamp,
    pe_service_name,
)
from streams_k8s.api.job import Job, JobPhase
from streams_k8s.app.fusion import FusionConstraintError
from streams_k8s.app.plan import Plan, plan_at_widths
from streams_k8s.app.submission import SubmissionError
from streams_k8s.app.topology import TopologyError
from streams_k8s.controller import widths as widths_module
from streams_k8s.controller.bundles import BUNDLE_CHANGED, BundleChanged, BundleError, BundleFetcher
from streams_k8s.controller.certificates import transport_certificate
from streams_k8s.controller.child_limits import REFUSED, check_children, refused
from streams_k8s.controller.job_ids import allocate_job_id
from streams_k8s.controller.job_status import JobStatusView
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
from streams_k8s.controller.placement import NodeInfo
from streams_k8s.controller.submission import (
    Desired,
    SubmissionFailure,
    check_placement,
    desired_objects,
    needs_transport_certificate,
    plan_job,
    read_application,
    service_update,
    validate_job,
)
from streams_k8s.controller.widths import widths_of
from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.conditions import format_time, set_condition
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.kinds import CONFIGMAPS, NODES, PODS, SERVICES
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta

log = logging.getLogger(__name__)

VALID, BUNDLE_FETCHED, PLANNED, PODS_READY = "Valid", "BundleFetched", "Planned", "PodsReady"
SUBMITTED = "Submitted"  # the condition a submission that timed out sets False
# Automatic retries of failures that can go away on their own (see the module docs).
RETRY_FIRST_DELAY = 10.0
RETRY_MAX_DELAY = 300.0
# Bundle failures that clear without a change to the Job: besides transient fetch errors, objects
# the bundle source refers to that may be applied after the Job.
_BUNDLE_REFERENCES_MISSING = frozenset({"SecretNotFound", "CertificateAuthorityNotFound"})
# Children created concurrently by one submission (the client's QPS bucket still applies).
CREATE_CONCURRENCY = 16
SPEC_CHANGE_IGNORED = "spec changes after submission are not applied: delete and re-create the Job"
# How soon to look again while a clean slate is being deleted.
CLEANUP_POLL = 0.5
# Ready counts change with every PE coming up: while a job starts they are written at most this
# often (the move to Running is written at once), so a 1,000-PE job costs a few status writes, not
# one per PE, and the informer has caught up before the next conditional write.
COUNTS_INTERVAL = 1.0
CHILD_KINDS: tuple[Resource, ...] = (
    CONFIGMAPS,
    SERVICES,
    HOSTPOOLS,
    EXPORTS,
    IMPORTS,
    PARALLEL_REGIONS,
    CONSISTENT_REGION_OPERATORS,
    CONSISTENT_REGIONS,
    PES,
)


@dataclass(slots=True)
class _Planned:
    """A job's plan and children, kept while its spec generation and job id stay the same."""

    generation: int
    job_id: int
    plan: Plan
    children: list[Desired]
    resized: dict[tuple[tuple[str, int], ...], tuple[Plan, list[Desired]]] = field(default_factory=dict)

    @property
    def base_widths(self) -> dict[str, int]:
        return {r.alias: r.width for r in self.plan.parallel_regions}


def schedulable_nodes(nodes: Iterable[Object]) -> list[NodeInfo]:
    """Nodes a PE pod could land on: not cordoned, not tainted against every pod."""
    infos = [NodeInfo.from_wire(n) for n in nodes]
    return [
        n
        for n in infos
        if not n.unschedulable and not any(t.effect in ("NoSchedule", "NoExecute") for t in n.taints)
    ]


def _now() -> datetime:
    return datetime.now(UTC)


def retry_backoff(first_delay: float, attempts: int) -> float:
    """Seconds to wait before the retry that follows ``attempts`` failed attempts."""
    return float(min(first_delay * 2 ** (attempts - 1), RETRY_MAX_DELAY))


def _bundle_failure(err: BundleError) -> SubmissionFailure:
    retryable = err.transient or isinstance(err, BundleChanged) or err.reason in _BUNDLE_REFERENCES_MISSING
    return SubmissionFailure(BUNDLE_FETCHED, err.reason, str(err), retryable)


def _failed_reason(status: JobStatusView) -> str:
    """The reason of the condition a failed attempt set False."""
    for type_ in (BUNDLE_FETCHED, PLANNED, SUBMITTED):
        found = status.condition(type_)
        if found is not None and found.get("status") == "False":
            return str(found.get("reason"))
    return "a failure"


class JobController:
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
        self._planned: dict[str, _Planned] = {}  # by Job uid
        self._counts_written: dict[str, float] = {}  # by Job uid: monotonic time of the last count write
        self.jobs.add_handler(self._forget_deleted)
        self.controller = manager.controller("jobs", self.reconcile, workers=4)
        self.controller.watch(self.jobs)
        for informer in self.children.values():
            self.controller.watch(informer, self._job_of)
        self.controller.watch(self.pods, self._job_of)
        for informer in (*self.children.values(), self.pods):  # "the X of job J" on every reconcile
            informer.store.index_label(JOB_LABEL)

    def _forget_deleted(self, kind: str, old: Object | None, new: Object | None) -> None:
        """A Job gone from the cache (its deletion finished) takes its plan and children with it."""
        if kind == "delete" and old is not None:
            self._forget(str(meta(old).get("uid")))

    def _forget(self, uid: str) -> None:
        self._planned.pop(uid, None)
        self._counts_written.pop(uid, None)

    def _cached(self, obj: Object) -> bool:
        """The cache still holds this Job (the same incarnation): what is kept for it will be dropped."""
        m = meta(obj)
        current = self.jobs.store.get(ObjectKey(str(m.get("namespace")), str(m.get("name"))))
        return current is not None and meta(current).get("uid") == m.get("uid")

    def retained(self) -> dict[str, int]:
        """Entries kept per Job, by cache (none once every Job is gone)."""
        return {"plans": len(self._planned), "count-writes": len(self._counts_written)}

    @staticmethod
    def _job_of(obj: Object) -> list[ObjectKey]:
        job = (meta(obj).get("labels") or {}).get(JOB_LABEL)
        return [ObjectKey(meta(obj).get("namespace") or "", job)] if job else []

    async def _bundle_fetcher(self) -> BundleFetcher:
        if self._fetcher is None:
            self._fetcher = await self._fetcher_factory()
        return self._fetcher

    # --- reconcile ------------------------------------------------------------------------

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
                due = (next_attempt - _now()).total_seconds()
                if due > 0:
                    return Requeue(due)
                attempt = (status.submission_attempts or 1) + 1
            obj = await self._write_status(obj, self._restart(status, generation, attempt))
            if retry:
                note = f"attempt {attempt}: starting again from a clean slate after {_failed_reason(status)}"
                await self.recorder.record(obj, "Normal", "SubmissionRetrying", note)
            status, phase = JobStatusView.of(obj), JobPhase.SUBMITTING
        if phase in (JobPhase.SUBMITTED, JobPhase.RUNNING) and status.id is not None:
            return await self._maintain(obj, job, status)
        return await self._submit(obj, job, status, generation)

    # --- submission -----------------------------------------------------------------------

    def _restart(self, status: JobStatusView, generation: int, attempt: int) -> JobStatusView:
        """A new attempt (retry or edited spec): keep the id, forget the rest (null deletes in a patch)."""
        conditions: list[dict[str, Any]] = []
        set_condition(conditions, VALID, "True", "Validated", "the spec is valid", generation)
        fresh = status.cleared().with_(
            phase=JobPhase.SUBMITTING,
            conditions=conditions,
            observed_generation=generation,
            submission_started=_now(),
            submission_attempts=attempt,
            generation_id=0,
        )
        return fresh if status.id is None else fresh.with_(id=status.id)

    async def _submit(self, obj: Object, job: Job, status: JobStatusView, generation: int) -> Requeue | None:
        uid = str(meta(obj)["uid"])
        if status.id is None:
            obj, status = await self._record_intent(obj, job, generation)
        started = status.submission_started or _now()
        remaining = job.spec.submission_time_out_in_seconds - (_now() - started).total_seconds()
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
            await self._fail(fresh, _written(fresh, status), failure, generation)
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
            submission_started=_now(),
            submission_attempts=status.submission_attempts or 1,
        )
        conditions = status.conditions
        set_condition(conditions, VALID, "True", "Validated", "the spec is valid", generation)
        status = status.with_(conditions=conditions)
        written = await self._write_status(fresh, status)
        await self.recorder.record(written, "Normal", "SubmissionStarted", f"submitting as job id {job_id}")
        return written, _written(written, status)

    async def _submit_within(
        self, obj: Object, job: Job, status: JobStatusView, generation: int, uid: str
    ) -> Requeue | None:
        planned, obj, status = await self._plan(obj, job, status, generation, uid)
        if any(meta(child).get("deletionTimestamp") for child in self._owned(obj, uid)):
            return Requeue(CLEANUP_POLL)  # children of an earlier attempt are still going away
        await self._create_missing(planned.children, lambda child: True)
        status = status.with_(phase=JobPhase.SUBMITTED, message=_submitted_message(len(planned.plan.pes)))
        obj = await self._write_status(obj, status)
        await self.recorder.record(
            obj,
            "Normal",
            "SubmissionSucceeded",
            f"created {len(planned.children)} objects for {len(planned.plan.pes)} PEs",
        )
        return await self._maintain(obj, job, _written(obj, status))

    async def _plan(
        self, obj: Object, job: Job, status: JobStatusView, generation: int, uid: str
    ) -> tuple[_Planned, Object, JobStatusView]:
        """The job's plan (cached), recording BundleFetched, bundleDigest, Planned and plannedNodes
        on first use; later plans use the recorded bundle content."""
        job_id = int(status.id or 0)
        cached = self._planned.get(uid)
        if cached is not None and cached.generation == generation and cached.job_id == job_id:
            return cached, obj, status
        namespace = str(job.metadata.namespace)
        conditions = status.conditions
        fetcher = await self._bundle_fetcher()
        # The digest recorded for this spec; an edited spec (still submitting) fetches afresh.
        pinned = status.bundle_digest if status.observed_generation == generation else None
        try:
            if pinned is None:
                fetched = await fetcher.fetch(namespace, job.spec.bundle)
            else:
                fetched = await fetcher.fetch_pinned(namespace, job.spec.bundle, pinned)
        except BundleError as err:
            raise _bundle_failure(err) from None
        changed = set_condition(
            conditions,
            BUNDLE_FETCHED,
            "True",
            "Fetched",
            f"{job.spec.bundle.name} sha256:{fetched.digest[:12]}",
            generation,
        )
        nodes = schedulable_nodes(self.nodes.store.select())
        planned_nodes = status.planned_nodes or max(len(nodes), 1)
        planned = await asyncio.to_thread(
            self._build, job, uid, str(fetched.path), job_id, planned_nodes, nodes, generation
        )
        changed |= set_condition(
            conditions,
            PLANNED,
            "True",
            "Planned",
            "; ".join([f"{len(planned.plan.pes)} PEs", *planned.plan.notices]),
            generation,
        )
        if (
            changed
            or status.bundle_digest != fetched.digest
            or status.planned_nodes != planned_nodes
            or status.processing_elements != len(planned.plan.pes)
            or status.application_name != planned.plan.application_name
        ):
            status = status.with_(
                application_name=planned.plan.application_name,
                bundle_digest=fetched.digest,
                conditions=conditions,
                planned_nodes=planned_nodes,
                processing_elements=len(planned.plan.pes),
            )
            obj = await self._write_status(obj, status)
            status = _written(obj, status)
            if changed:
                note = f"{len(planned.plan.pes)} PEs planned on {planned_nodes} schedulable nodes"
                await self.recorder.record(obj, "Normal", "Planned", note)
        if self._cached(obj):  # not for a Job deleted while it was planned: nothing would drop it
            self._planned[uid] = planned
        return planned, obj, status

    def _build(
        self,
        job: Job,
        uid: str,
        bundle_path: str,
        job_id: int,
        planned_nodes: int,
        nodes: list[NodeInfo],
        generation: int,
    ) -> _Planned:
        """Parse, plan, check placement and render the children (CPU-bound: runs in a thread)."""
        app = read_application(bundle_path, job.spec.bundle.name)
        plan = plan_job(job, app, job_id=job_id, nodes=planned_nodes)
        check_placement(job, plan, nodes)
        transport = (
            transport_certificate(job.spec.transport_certificate_validity_in_days)
            if needs_transport_certificate(job)
            else None
        )
        stamp = name_table_stamp(_now())
        children = desired_objects(
            job,
            uid,
            plan,
            generation=0,
            stamp=stamp,
            transport=transport,
            coordinator_mode=self.coordinator_mode,
        )
        check_children(children)  # before anything is written
        return _Planned(generation, job_id, plan, children)

    async def _create_missing(self, children: list[Desired], wanted: Callable[[Desired], bool]) -> int:
        """Create every child the caches lack (in order, a bounded batch at a time); 409 is success.

        A child the API server refuses for what it is (400, 413, 422) raises `SubmissionFailure`
        (`child_limits.refused`): trying it again would be refused again."""
        missing = [c for c in children if self.children[c.resource].store.get(c.key) is None and wanted(c)]
        slots = asyncio.Semaphore(CREATE_CONCURRENCY)

        async def create(child: Desired) -> None:
            async with slots:
                try:
                    await self.client.create_if_absent(child.resource, child.body)
                except ApiError as err:
                    if err.status in REFUSED:
                        raise refused(child, err) from None
                    raise

        # Kinds in order (PEs last, once their prerequisites exist); within a kind, concurrently.
        for resource in dict.fromkeys(c.resource for c in missing):
            results = await asyncio.gather(
                *(create(c) for c in missing if c.resource == resource), return_exceptions=True
            )
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:  # a refusal first: retrying cannot help it, whatever else failed
                raise next((e for e in errors if isinstance(e, SubmissionFailure)), errors[0])
        return len(missing)

    # --- after submission -----------------------------------------------------------------

    async def _maintain(self, obj: Object, job: Job, status: JobStatusView) -> Requeue | None:
        """Recreate deleted children; keep PE/pod counts, PodsReady and the phase current."""
        m = meta(obj)
        uid, generation = str(m["uid"]), int(m.get("generation") or 1)
        if (status.observed_generation or generation) != generation:
            # The children follow the submitted spec; a re-plan from the edited one would mix two jobs.
            if status.message != SPEC_CHANGE_IGNORED:
                await self.recorder.record(obj, "Warning", "SpecChangeIgnored", SPEC_CHANGE_IGNORED)
            return await self._update_counts(obj, status.with_(message=SPEC_CHANGE_IGNORED))
        changed_before = _reported_bundle_change(status)
        try:
            planned, obj, status = await self._plan(obj, job, status, generation, uid)
        except SubmissionFailure as failure:
            if failure.reason == BUNDLE_CHANGED:
                return await self._bundle_changed(obj, status, failure, generation)
            log.warning(
                "job %s/%s cannot be re-planned to restore its children: %s",
                m.get("namespace"),
                m.get("name"),
                failure,
            )
            planned = None
        if planned is not None:
            if changed_before:  # the submitted content is back: the warning no longer holds
                status = status.with_(message=_submitted_message(len(planned.plan.pes)))
            obj, status, plan, children = await self._follow_widths(obj, job, planned, status)
            restartable = {pe_service_name(str(m["name"]), pe.id): pe.restartable for pe in plan.pes}
            try:
                recreated = await self._create_missing(
                    children, lambda c: c.resource != PES or restartable.get(c.name, False)
                )
            except SubmissionFailure as failure:  # the job runs on without it; say so once
                if status.message != failure.message:
                    await self.recorder.record(obj, "Warning", failure.reason, failure.message)
                return await self._update_counts(obj, status.with_(message=failure.message))
            if recreated:
                await self.recorder.record(
                    obj, "Normal", "ChildrenRecreated", f"recreated {recreated} deleted objects"
                )
            await self._correct_services(children)
        return await self._update_counts(obj, status)

    async def _correct_services(self, children: list[Desired]) -> None:
        """Give PE Services their planned selector and ports (`service_update`), conditionally on
        the version read, so a user port the REST API adds meanwhile is never lost: on a conflict
        the Service's own update event brings the job back here."""
        for child in children:
            if child.resource != SERVICES:
                continue
            current = self.services.store.get(child.key)
            if current is None or meta(current).get("deletionTimestamp"):
                continue
            if (patch := service_update(current, child.body)) is None:
                continue
            try:
                await self.client.patch(SERVICES, child.name, patch, child.key.namespace)
            except ApiError as err:
                if err.status in REFUSED:  # as refused the next time: say so, do not retry
                    log.warning("%s", refused(child, err))
                elif not (err.conflict or err.not_found):
                    raise

    async def _bundle_changed(
        self, obj: Object, status: JobStatusView, failure: SubmissionFailure, generation: int
    ) -> Requeue | None:
        """Keep the children of the submitted bundle; say once that deleted ones are not restored."""
        message = (
            f"{failure.message}: the job keeps running the submitted bundle but deleted children are not "
            f"restored; delete and re-create the Job to run the new one"
        )
        if status.message != message:
            await self.recorder.record(obj, "Warning", BUNDLE_CHANGED, message)
        conditions = status.conditions
        set_condition(conditions, BUNDLE_FETCHED, "False", BUNDLE_CHANGED, failure.message, generation)
        return await self._update_counts(obj, status.with_(conditions=conditions, message=message))

    # --- parallel-region widths (see `widths`) ---------------------------------------------

    def _children_at(
        self, job: Job, uid: str, planned: _Planned, widths: dict[str, int], generation: int
    ) -> tuple[Plan, list[Desired]]:
        if widths == planned.base_widths:
            return planned.plan, planned.children
        key = (*sorted(widths.items()), ("", generation))
        if key not in planned.resized:
            plan = plan_at_widths(planned.plan, widths)
            stamp = name_table_stamp(_now())
            table = planned.children[0].body["data"]  # the name table: keep the job's transport pair
            transport = (
                (table[TRANSPORT_CERT_KEY], table[TRANSPORT_KEY_KEY]) if TRANSPORT_CERT_KEY in table else None
            )
            children = desired_objects(
                job,
                uid,
                plan,
                generation=generation,
                stamp=stamp,
                transport=transport,
                coordinator_mode=self.coordinator_mode,
            )
            planned.resized = {key: (plan, children)}  # only the current widths are worth keeping
        return planned.resized[key]

    async def _follow_widths(
        self, obj: Object, job: Job, planned: _Planned, status: JobStatusView
    ) -> tuple[Object, JobStatusView, Plan, list[Desired]]:
        """Apply one pending width change, if any; the plan and children of the widths now applied."""
        m = meta(obj)
        namespace, name, uid = str(m["namespace"]), str(m["name"]), str(m["uid"])
        regions = self.parallel_regions.store.select_by_labels({JOB_LABEL: name}, namespace)
        wanted, recorded = widths_of(regions)
        applied = {a: recorded.get(a) or w for a, w in planned.base_widths.items()}
        generation = status.generation_id or 0
        for region in regions:
            alias = str(region["spec"]["alias"])
            if alias not in applied or wanted[alias] == recorded.get(alias) or widths_module.failed(region):
                continue
            if wanted[alias] == applied[alias]:  # first sight, or back where it runs: record it
                await widths_module.record_applied(self.client, region, applied[alias])
                continue
            try:
                obj, status, generation = await self._resize(
                    obj, job, planned, status, region, applied, wanted[alias]
                )
            except SubmissionFailure as failure:
                await widths_module.record_failure(self.client, region, failure.message)
                await self.recorder.record(region, "Warning", "ResizeFailed", failure.message)
                await self.recorder.record(obj, "Warning", "ResizeFailed", failure.message)
                continue
            applied[alias] = wanted[alias]
            break
        plan, children = self._children_at(job, uid, planned, applied, generation)
        return obj, status, plan, children

    async def _resize(
        self,
        obj: Object,
        job: Job,
        planned: _Planned,
        status: JobStatusView,
        region: Object,
        applied: dict[str, int],
        width: int,
    ) -> tuple[Object, JobStatusView, int]:
        """One region's change: plan it (nothing is written if it cannot be), then `widths` steps 1 to 3."""
        alias = str(region["spec"]["alias"])
        pending = widths_module.pending_generation(region)
        generation = pending if pending is not None else (status.generation_id or 0) + 1
        uid = str(meta(obj)["uid"])
        try:
            running, running_children = self._children_at(job, uid, planned, applied, generation)
            target, children = self._children_at(job, uid, planned, {**applied, alias: width}, generation)
        except (SubmissionError, TopologyError, FusionConstraintError, ValueError) as err:
            raise SubmissionFailure(PLANNED, "ResizeFailed", f"{alias} to width {width}: {err}") from None
        check_placement(job, target, schedulable_nodes(self.nodes.store.select()))
        try:
            check_children(children)
        except SubmissionFailure as failure:
            raise SubmissionFailure(PLANNED, "ResizeFailed", f"{alias} to width {width}: {failure}") from None
        if pending is None:
            region = await widths_module.record_intent(self.client, region, generation, width)
        if status.generation_id != generation:
            obj = await self._write_status(obj, status.with_(generation_id=generation))
            status = _written(obj, status)
        change = widths_module.WidthChange(obj, region, running, target, children, generation)
        diff = change.diff
        try:
            await widths_module.apply(self.client, change)
        except widths_module.ChildRefused as err:
            # Back to the plan that runs (the same steps, the other way), then refuse the width.
            back = widths_module.WidthChange(obj, region, target, running, running_children, generation)
            await widths_module.apply(self.client, back)
            raise SubmissionFailure(
                PLANNED, "ResizeFailed", f"{alias} to width {width}: {err.failure}"
            ) from None
        status = status.with_(processing_elements=len(target.pes))
        obj = await self._write_status(obj, status)
        await widths_module.record_applied(self.client, region, width)
        await self.recorder.record(
            obj,
            "Normal",
            "Resized",
            f"{alias} width {applied[alias]} → {width} (generation {generation}): {len(diff.changed)} PEs "
            f"changed, {len(diff.added)} added, {len(diff.removed)} removed, {len(diff.unchanged)} unchanged",
        )
        return obj, _written(obj, status), generation

    async def _update_counts(self, obj: Object, status: JobStatusView) -> Requeue | None:
        m = meta(obj)
        namespace, name = str(m.get("namespace")), str(m.get("name"))
        pes = self.pes.store.select_by_labels({JOB_LABEL: name}, namespace)
        pods = self.pods.store.select_by_labels({JOB_LABEL: name, SVC_LABEL: SVC_PE}, namespace)
        expected = status.processing_elements or len(pes)
        ready_pes = sum(1 for pe in pes if (pe.get("status") or {}).get("connectivity") == "Full")
        # PEs with a ready pod: two launches of one PE briefly both ready still count once
        ready_pods = len({meta(pod)["labels"].get(PE_LABEL) for pod in pods if _pod_ready(pod)})
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
        phase = JobPhase.RUNNING if all_ready else JobPhase.SUBMITTED
        wanted = status.with_(
            conditions=conditions, phase=phase, processing_elements_ready=ready_pes, pods_ready=ready_pods
        )
        if wanted == JobStatusView.of(obj):
            return None
        uid = str(m.get("uid"))
        wait = self._counts_written.get(uid, -COUNTS_INTERVAL) + COUNTS_INTERVAL - time.monotonic()
        if phase == status.phase and wait > 0:
            return Requeue(wait)
        written = await self._write_status(obj, wanted)
        if self._cached(obj):
            self._counts_written[uid] = time.monotonic()
        if phase != status.phase and phase == JobPhase.RUNNING:
            await self.recorder.record(written, "Normal", "Running", f"all {expected} PE pods are ready")
        return None

    # --- failure --------------------------------------------------------------------------

    async def _fail(
        self, obj: Object, status: JobStatusView, failure: SubmissionFailure, generation: int
    ) -> None:
        same_spec = status.observed_generation == generation
        attempts = (status.submission_attempts or 1) if same_spec else 1
        next_attempt, message = None, failure.message
        if failure.retryable:
            next_attempt = _now() + timedelta(seconds=retry_backoff(self.retry_delay, attempts))
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
        written = await self._write_status(obj, status)
        self._planned.pop(str(meta(obj).get("uid")), None)
        await self.recorder.record(written, "Warning", "SubmissionFailed", f"{failure.reason}: {message}")

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
        """Merge-patch the status, conditional on the resourceVersion it was computed from."""
        m = meta(obj)
        patch = {"metadata": {"resourceVersion": m.get("resourceVersion")}, "status": status.raw}
        return await self.client.patch(JOBS, str(m["name"]), patch, str(m["namespace"]), subresource="status")


def _submitted_message(pes: int) -> str:
    return f"{pes} PEs submitted"


def _written(obj: Object, before: JobStatusView) -> JobStatusView:
    """The status a write answered with (the API server's), else the one written."""
    return JobStatusView(obj.get("status") or before.raw)


def _reported_bundle_change(status: JobStatusView) -> bool:
    fetched = status.condition(BUNDLE_FETCHED)
    return fetched is not None and fetched.get("reason") == BUNDLE_CHANGED


def _pod_ready(pod: Object) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or meta(pod).get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
