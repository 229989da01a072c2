"""Edits of a running job applied: re-plan, diff, write ahead, then replace only what changed.

A running job's children follow ``status.appliedSpec`` (generation ``status.appliedGeneration``).
When the spec's generation is another one, the edit is planned from the new spec (the bundle
content recorded when the bundle is the same, else fetched per its pull policy) and diffed
against the running plan: the applied spec's at the widths its ParallelRegions run at, which the
edit keeps unless it sets a region's width itself (`jobs.upgrade_diff.plan_edit`, `widths_set`). Then, in
this order:

1. write-ahead: ``status.upgrade`` records the target generation, its spec, its bundle digest,
   the job generation it becomes, the PEs kept / replaced / added / removed, and what a restart
   needs to plan the same target: the widths the regions ran at (the commit changes them) and
   the id of the first PE it adds (`upgrade_diff.resumed_ids`: a plan of the applied spec made
   again after a restart may number the PEs it started from otherwise); phase Upgrading,
   condition SpecApplied=False (Upgrading) and an UpgradeStarted Event with the summary;
2. the name table is rewritten, added PEs (ConfigMap, Service, PE) created, removed ones deleted,
   PEs whose changed settings steer only the controllers patched; Exports, Imports and
   ConsistentRegions follow;
3. replaced PEs get their ConfigMap and PE spec, at most ``spec.maxUnavailable`` at a time (a
   quarter of the job's PEs by default): the PE controller replaces each one's pod (launch count
   + 1), and the next ones go once those pods are ready with the new content and settings;
4. when every PE runs the target, ``appliedSpec``/``appliedGeneration``/``bundleDigest`` take the
   target's, ``upgrade`` is removed and SpecApplied=True; an UpgradeSucceeded Event.

A controller killed anywhere finds ``status.upgrade``, plans the same target from it and goes on:
every step is idempotent, and a PE's ConfigMap is written before its spec, so no pod ever starts
with one PE's old content and new settings or the reverse. An edit made while another is applied
waits for it. An edit that cannot be applied (invalid, unplannable, unplaceable, objects the
cluster would not accept) changes nothing that runs: SpecApplied=False (EditRefused), Stalled and
a Warning Event say why, and the job keeps running its applied spec until the next edit. The
annotation ``streams.ibm.com/pause-reconciliation: "true"`` holds edits back (SpecApplied=False,
ReconciliationPaused) so several can be staged and applied at once.

An edit that is not Running within the target's ``submissionTimeOutInSeconds`` is rolled back when
``spec.rollback`` (the default) and a last stable spec exist: the last stable spec is applied the
same way (phase RollingBack, then RolledBack; a Warning Event names what failed; its record
carries the widths and ids the undone edit started from and the ids it removed, so a restart gives
back the same PEs, and the undone edit itself, so the Exports, Imports and regions it wrote are put
back). A rollback that does not reach Running in time either stops in Failed, saying
why: it never loops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from streams_k8s.api.contract import (
    name_table_stamp,
)
from streams_k8s.api.job import Job, JobPhase, JobSpec, JobState, UndoneEdit, UpgradeRecord
from streams_k8s.app.plan import plan_at_widths
from streams_k8s.controller.bundles.fetch import BundleError, FetchedBundle
from streams_k8s.controller.children.certificates import needs_transport_certificate, transport_certificate
from streams_k8s.controller.children.desired import Rendered, desired_objects
from streams_k8s.controller.children.limits import check_children
from streams_k8s.controller.jobs.base import KeptPlan, applied_job, status_written, utc_now
from streams_k8s.controller.jobs.health import (
    EDIT_REFUSED,
    PAUSED,
    ROLLED_BACK,
    SPEC_APPLIED,
    UPGRADE_TIMED_OUT,
    UPGRADING,
)
from streams_k8s.controller.jobs.planned import bundle_failure, schedulable_nodes
from streams_k8s.controller.jobs.rolling import RollingJobs, edit_nonce, regions_prepared
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.target import Target
from streams_k8s.controller.jobs.upgrade_diff import (
    UpgradeDiff,
    given_back,
    pe_operators,
    plan_edit,
    resumed_ids,
    upgrade_diff,
)
from streams_k8s.controller.planning import SubmissionFailure, check_placement, read_application
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.objects import Object, meta

log = logging.getLogger(__name__)

PAUSE_ANNOTATION = "streams.ibm.com/pause-reconciliation"

# SpecApplied reasons that settle an edit's generation: it is not tried again until the next edit.
FINAL = frozenset({EDIT_REFUSED, ROLLED_BACK, "RollbackFailed"})

# How soon to look again while replaced pods come up (their events also bring the job back).
ROLL_POLL = 1.0


def paused(obj: Object) -> bool:
    return (meta(obj).get("annotations") or {}).get(PAUSE_ANNOTATION) == "true"


class UpgradingJobs(RollingJobs):
    """Applies edits of a running job (see the module docs)."""

    async def _follow_edit(
        self, obj: Object, job: Job | None, status: JobStatusView, applied: KeptPlan, running: Job
    ) -> tuple[Object, JobStatusView, bool]:
        """Start or continue applying an edit; (obj, status, whether an upgrade is under way).

        ``job`` is the edited spec (None when it is not valid: that refusal is already recorded)."""
        generation = int(meta(obj).get("generation") or 1)
        record = status.upgrade
        if record is None:
            if job is None or status.applied_generation == generation:
                return obj, status, False
            if paused(obj):
                return *await self._note_edit(obj, status, PAUSED, "reconciliation is paused"), False
            refused = status.condition(SPEC_APPLIED) or {}
            if refused.get("reason") in FINAL and refused.get("observedGeneration") == generation:
                return obj, status, False  # this generation will not run: the next edit may
            try:
                target = await self._plan_target(obj, job, status, applied, running)
            except SubmissionFailure as failure:
                return *await self._refuse_edit(obj, status, failure), False
            obj, status = await self._start(obj, status, running, applied, target)
            record = status.upgrade
            assert record is not None
        obj, status = await self._roll(obj, status, record, applied)
        return obj, status, status.upgrade is not None

    async def _plan_target(
        self, obj: Object, job: Job, status: JobStatusView, applied: KeptPlan, running: Job
    ) -> Target:
        """The edit's plan (nothing is written if it cannot be made, placed or accepted)."""
        namespace = str(job.metadata.namespace)
        fetcher = await self._bundle_fetcher()
        try:
            if running.spec.bundle == job.spec.bundle and status.bundle_digest:
                fetched = await fetcher.fetch_pinned(namespace, job.spec.bundle, status.bundle_digest)
            else:
                fetched = await fetcher.fetch(namespace, job.spec.bundle)
        except BundleError as err:
            raise bundle_failure(err) from None
        generation = int(meta(obj).get("generation") or 1)
        generation_id = (status.generation_id or 0) + 1
        return await asyncio.to_thread(
            self._build_target,
            job,
            str(meta(obj)["uid"]),
            fetched,
            (generation, generation_id),
            status,
            applied,
            (self._running_widths(obj, applied), None),
        )

    def _build_target(
        self,
        job: Job,
        uid: str,
        fetched: FetchedBundle,
        generations: tuple[int, int],
        status: JobStatusView,
        applied: KeptPlan,
        start: tuple[dict[str, int], Mapping[int, Sequence[str]] | None],
    ) -> Target:
        """Plan, place, render and check the edit's children (CPU-bound: runs in a thread).
        ``generations``: the spec generation and the job generation it becomes; ``start``: the
        widths the job's parallel regions ran at when the edit started, and the PE ids it keeps
        (None: those of the plan that runs)."""
        generation, generation_id = generations
        widths, ids = start
        path = str(fetched.path)
        app = read_application(path, job.spec.bundle.name)
        running = plan_at_widths(applied.plan, widths)
        applied_spec = JobSpec.model_validate(status.applied_spec or job.spec.to_wire())
        plan = plan_edit(
            job,
            app,
            job_id=int(status.id or 0),
            nodes=status.planned_nodes,
            running=running,
            applied=applied_spec,
            ids=ids,
        )
        check_placement(job, plan, schedulable_nodes(self.nodes.store.select()))
        transport = applied.transport
        if transport is None and needs_transport_certificate(job):
            transport = transport_certificate(job.spec.transport_certificate_validity_in_days)
        children = desired_objects(
            job,
            uid,
            plan,
            generation=generation_id,
            stamp=name_table_stamp(utc_now()),
            transport=transport if needs_transport_certificate(job) else None,
            coordinator_mode=self.coordinator_mode,
            # what runs, when the applied spec says what it was rendered from
            earlier=Rendered(applied_spec, applied.plan, applied.children) if status.applied_spec else None,
        )
        check_children(children, checked=applied.children)
        return Target(job, KeptPlan(generation, int(status.id or 0), plan, children), fetched.digest, running)

    async def _start(
        self, obj: Object, status: JobStatusView, running: Job, applied: KeptPlan, target: Target
    ) -> tuple[Object, JobStatusView]:
        """Step 1, the write-ahead record."""
        generation = int(meta(obj).get("generation") or 1)
        # In a thread, as the plan: an edit of the PE template builds, compares and hashes every
        # PE's spec twice.
        diff = await asyncio.to_thread(upgrade_diff, running, target.running, target.job, target.planned.plan)
        record = UpgradeRecord(
            target_generation=generation,
            spec=target.job.spec.to_wire(),
            bundle_digest=target.digest,
            generation_id=(status.generation_id or 0) + 1,
            started=utc_now(),
            kept=diff.kept,
            replaced=sorted(diff.replaced),
            added=diff.added,
            removed=diff.removed,
            widths={r.alias: r.width for r in target.running.parallel_regions},
            next_pe_id=max((pe.id for pe in target.running.pes), default=-1) + 1,
            checkpoint=regions_prepared(target),
        )
        conditions = status.conditions
        set_condition(conditions, SPEC_APPLIED, "False", UPGRADING, diff.summary(), generation)
        phase = JobPhase.SUSPENDING if target.job.spec.state is JobState.SUSPENDED else JobPhase.UPGRADING
        status = status.with_(
            phase=phase, upgrade=record, observed_generation=generation, conditions=conditions
        )
        written = await self._write_status(obj, status)
        self._targets[str(meta(obj)["uid"])] = (generation, target)
        await self.recorder.record(written, "Normal", "UpgradeStarted", _started_note(generation, diff))
        return written, status_written(written, status)

    async def _recorded_target(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, applied: KeptPlan
    ) -> Target:
        uid = str(meta(obj)["uid"])
        kept = self._targets.get(uid)
        if kept is not None and kept[0] == record.target_generation:
            return kept[1]
        job = Job.from_wire({**obj, "spec": record.spec})
        widths = self._started_widths(obj, record, applied)
        ids = None
        if record.next_pe_id is not None:
            live = self._live_ids(job, uid)
            ids = resumed_ids(live, record.next_pe_id)
            if record.rollback:  # the PEs the undone edit removed come back with their ids
                started = await asyncio.to_thread(plan_at_widths, applied.plan, widths)
                ids.update(given_back(pe_operators(started), live, record.added))
        target = await self._plan_recorded(
            obj, status, record, applied, job, record.bundle_digest, (widths, ids)
        )
        if self._cached(obj):
            self._targets[uid] = (record.target_generation, target)
        return target

    async def _undone_target(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, applied: KeptPlan
    ) -> Target | None:
        """The plan of the edit the rollback ``record`` undoes, made again: what the Exports,
        Imports and regions were written from (None when it cannot be made again)."""
        if record.undone is None:
            return None
        job = Job.from_wire({**obj, "spec": record.undone.spec})
        try:
            widths = self._started_widths(obj, record, applied)
            digest = record.undone.bundle_digest
            return await self._plan_recorded(obj, status, record, applied, job, digest, (widths, None))
        except SubmissionFailure as failure:
            log.warning("job %s: the undone edit cannot be planned again: %s", meta(obj).get("name"), failure)
            return None

    async def _plan_recorded(
        self,
        obj: Object,
        status: JobStatusView,
        record: UpgradeRecord,
        applied: KeptPlan,
        job: Job,
        digest: str,
        start: tuple[dict[str, int], Mapping[int, Sequence[str]] | None],
    ) -> Target:
        """``job``'s plan from the bundle content ``digest``, as the job generation ``record``'s
        edit makes (`SubmissionFailure` when the content is gone or the plan cannot be made);
        ``start``: the widths and PE ids, as `_build_target` takes them."""
        try:
            fetched = await (await self._bundle_fetcher()).fetch_pinned(
                str(job.metadata.namespace), job.spec.bundle, digest
            )
        except BundleError as err:
            raise bundle_failure(err) from None
        generations = (record.target_generation, record.generation_id)
        return await asyncio.to_thread(
            self._build_target, job, str(meta(obj)["uid"]), fetched, generations, status, applied, start
        )

    def _started_widths(self, obj: Object, record: UpgradeRecord, applied: KeptPlan) -> dict[str, int]:
        """The widths the job's regions ran at when ``record``'s edit started (a restart may find
        other widths, and PEs the edit made)."""
        return self._running_widths(obj, applied) if record.widths is None else record.widths

    async def _start_rollback(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, untouched: set[int]
    ) -> tuple[Object, JobStatusView]:
        """Write ahead a rollback: the last stable spec becomes the target (`jobs.rolling`); the
        PEs the undone edit replaced (all of its but ``untouched``) are replaced back."""
        generation = int(meta(obj).get("generation") or 1)
        rollback = UpgradeRecord(
            target_generation=status.last_stable_generation or status.applied_generation or 1,
            spec=status.last_stable_spec or {},
            bundle_digest=str(status.last_stable_bundle_digest or status.bundle_digest),
            generation_id=record.generation_id + 1,
            started=utc_now(),
            rollback=True,
            replaced=[i for i in record.replaced if i not in untouched],
            # what the undone edit started from and changed, so a restart plans the same PEs
            added=record.removed,
            removed=record.added,
            widths=record.widths,
            next_pe_id=_above(record),
            undone=UndoneEdit(spec=record.spec, bundle_digest=record.bundle_digest),
        )
        conditions = status.conditions
        message = f"generation {record.target_generation} did not reach Running: rolling back"
        set_condition(conditions, SPEC_APPLIED, "False", ROLLED_BACK, message, generation)
        status = status.with_(phase=JobPhase.ROLLING_BACK, upgrade=rollback, conditions=conditions)
        written = await self._write_status(obj, status)
        return written, status_written(written, status)

    async def _timed_out(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, untouched: set[int]
    ) -> tuple[Object, JobStatusView, bool]:
        """The edit is not Running in time: roll back; a rollback stops in Failed; without a
        rollback the edit goes on, Stalled saying so. (obj, status, stop rolling this edit?)
        ``untouched``: the PEs the edit has not patched yet."""
        timeout = int(record.spec.get("submissionTimeOutInSeconds") or 300)
        what = "the rollback" if record.rollback else f"generation {record.target_generation}"
        message = f"{what} did not reach Running within submissionTimeOutInSeconds={timeout}"
        if record.rollback:
            conditions = status.conditions
            generation = int(meta(obj).get("generation") or 1)
            set_condition(conditions, SPEC_APPLIED, "False", "RollbackFailed", message, generation)
            status = status.with_(phase=JobPhase.FAILED, upgrade=None, message=message, conditions=conditions)
            written = await self._write_status(obj, status)
            self._targets.pop(str(meta(obj)["uid"]), None)
            await self.recorder.record(written, "Warning", "RollbackFailed", message)
            return written, status_written(written, status), True
        if record.spec.get("rollback", True) and status.last_stable_spec:
            # a checkpoint-first edit may have held the drains: the rollback does not need it
            await self._release_hold(applied_job(obj, status), edit_nonce(str(meta(obj)["name"]), record))
            obj, status = await self._start_rollback(obj, status, record, untouched)
            await self.recorder.record(
                obj, "Warning", "RollingBack", f"{message}: applying the last stable spec"
            )
            return obj, status, True
        obj, status = await self._note_edit(
            obj, status, UPGRADE_TIMED_OUT, f"{message}; no rollback: it goes on"
        )
        return obj, status, False


def _started_note(generation: int, diff: UpgradeDiff) -> str:
    replaced = ", ".join(f"{i} ({'/'.join(diff.replaced[i])})" for i in sorted(diff.replaced))
    return f"applying generation {generation}: {diff.summary()}" + (
        f"; replaced: {replaced}" if replaced else ""
    )


def _above(record: UpgradeRecord) -> int | None:
    """The id a rollback of ``record``'s edit gives the first PE it has no id for: above every
    id that edit used, so none is given to other operators than it had."""
    if record.next_pe_id is None:
        return None
    return max([record.next_pe_id, *(i + 1 for i in record.added)])
