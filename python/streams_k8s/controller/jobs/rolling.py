"""An edit recorded in ``status.upgrade`` brought about (steps 2 to 4 of `jobs.upgrading`), level
by level: the children are compared with the target's each time, so a controller killed anywhere
resumes from what it finds.

PEs whose change is disruptive (their pod is replaced: new code, new pod settings, suspended or
resumed) go at most ``spec.maxUnavailable`` at a time; other PE changes (restart policies) at once.
Before the first disruptive change the consistent regions are prepared per ``spec.upgradeMode``
(`controller.checkpoints`): with ``checkpoint-first`` every region checkpoints (drains then held)
and the upgrade waits for it, however long (past ``checkpointTimeoutSeconds`` it says so:
SpecApplied CheckpointOverdue; a checkpoint that fails stops the upgrade, nothing replaced, the
hold released); the regions of replaced PEs are told how to start (reset to that or the last
checkpoint, or clean for ``stateless``); ``status.upgrade.checkpoint`` records that this was done.
Exports, Imports and regions are compared with the applied spec's at the widths that run (a
rollback's with the undone edit's, made again from ``status.upgrade.undone``: what that edit wrote
is put back): what the user, the runtime or the coordinator set on one the edit leaves as it was
is kept.
"""

from __future__ import annotations

from typing import Any

from streams_k8s.api.contract import (
    JOB_LABEL,
    PE_LABEL,
    SVC_LABEL,
    SVC_PE,
    pe_id_of,
    pe_service_name,
)
from streams_k8s.api.job import Job, JobPhase, JobState, UpgradeMode, UpgradeRecord
from streams_k8s.controller.checkpoints import (
    CheckpointOutcome,
    checkpoint_outcome,
    release_hold,
    request_checkpoint,
    request_start,
)
from streams_k8s.controller.children.changes import status_only
from streams_k8s.controller.jobs import widths as widths_module
from streams_k8s.controller.jobs.base import KeptPlan, applied_job, status_written, utc_now
from streams_k8s.controller.jobs.health import (
    APPLIED,
    CHECKPOINT_OVERDUE,
    EDIT_REFUSED,
    SPEC_APPLIED,
    WAITING_FOR_CHECKPOINT,
)
from streams_k8s.controller.jobs.resizing import ResizingJobs
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.target import Target
from streams_k8s.controller.jobs.upgrade_diff import upgrade_mode
from streams_k8s.controller.kinds import (
    CONSISTENT_REGION_OPERATORS,
    CONSISTENT_REGIONS,
    HOSTPOOLS,
    PARALLEL_REGIONS,
    PES,
)
from streams_k8s.controller.planning import SubmissionFailure
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.informer import EventType
from streams_k8s.k8s.kinds import CONFIGMAPS, SERVICES
from streams_k8s.k8s.objects import Object, ObjectKey, meta

# Children of a plan's host pools and regions: an edit deletes those of what it drops.
_PLANNED_KINDS = (HOSTPOOLS, PARALLEL_REGIONS, CONSISTENT_REGION_OPERATORS, CONSISTENT_REGIONS)
# Those whose spec an edit writes where the target's differs from what runs (a ParallelRegion's is
# the width, which the commit writes).
_FOLLOWED_KINDS = (HOSTPOOLS, CONSISTENT_REGION_OPERATORS, CONSISTENT_REGIONS)
# What an edit records of its regions when its target has none: nothing to prepare before the
# first pod is replaced (written ahead with the rest of the record: `regions_prepared`).
NO_REGIONS = "no consistent regions"


def batch_size(job: Job, pes: int) -> int:
    return job.spec.max_unavailable or max(1, pes // 4)


class RollingJobs(ResizingJobs):
    """Brings a job's children to a recorded edit (see the module docs)."""

    _targets: dict[str, tuple[int, Target]]  # by Job uid: the edit applied (`base` makes it)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pes.add_handler(self._on_pe)
        self.pods.add_handler(self._on_pod)

    def _on_pe(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        """A PE of a job being edited changed (not its status alone): its target looks at it again."""
        obj = new if new is not None else old
        if obj is not None and not (old is not None and new is not None and status_only(old, new)):
            self._note(obj, str(meta(obj).get("name")))

    def _on_pod(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        """A PE pod of a job being edited changed: its target looks at that PE again."""
        obj = new if new is not None else old
        labels = (meta(obj).get("labels") or {}) if obj is not None else {}
        if obj is not None and labels.get(SVC_LABEL) == SVC_PE and PE_LABEL in labels and JOB_LABEL in labels:
            self._note(obj, pe_service_name(str(labels[JOB_LABEL]), str(labels[PE_LABEL])))

    def _note(self, child: Object, pe: str) -> None:
        m = meta(child)
        job_name = (m.get("labels") or {}).get(JOB_LABEL)  # set on the pods and PEs noted
        job = (
            self.jobs.store.get(ObjectKey(str(m.get("namespace") or ""), str(job_name))) if job_name else None
        )
        kept = self._targets.get(str(meta(job).get("uid"))) if job is not None else None
        if kept is not None:
            kept[1].note(pe)

    async def _recorded_target(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, applied: KeptPlan
    ) -> Target:
        raise NotImplementedError  # `jobs.upgrading`

    async def _timed_out(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, untouched: set[int]
    ) -> tuple[Object, JobStatusView, bool]:
        raise NotImplementedError  # `jobs.upgrading`

    async def _undone_target(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, applied: KeptPlan
    ) -> Target | None:
        raise NotImplementedError  # `jobs.upgrading`

    async def _note_edit(
        self, obj: Object, status: JobStatusView, reason: str, message: str
    ) -> tuple[Object, JobStatusView]:
        """SpecApplied=False with this reason, for the spec's generation (written when it changes)."""
        generation = int(meta(obj).get("generation") or 1)
        conditions = status.conditions
        if not set_condition(conditions, SPEC_APPLIED, "False", reason, message, generation):
            return obj, status
        status = status.with_(conditions=conditions, observed_generation=generation)
        written = await self._write_status(obj, status)
        return written, status_written(written, status)

    async def _refuse_edit(
        self, obj: Object, status: JobStatusView, failure: SubmissionFailure
    ) -> tuple[Object, JobStatusView]:
        message = (
            f"generation {meta(obj).get('generation')} is not applied: {failure.reason}: {failure.message}"
        )
        message += f"; the job keeps running generation {status.applied_generation}"
        written, status = await self._note_edit(obj, status, EDIT_REFUSED, message)
        if written is not obj:
            await self.recorder.record(written, "Warning", "EditRefused", message)
        return written, status

    async def _roll(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, applied: KeptPlan
    ) -> tuple[Object, JobStatusView]:
        """Steps 2 to 4 (idempotent): bring the children to the target, a batch of PEs at a time."""
        try:
            target = await self._recorded_target(obj, status, record, applied)
        except SubmissionFailure as failure:  # the recorded content is gone: the edit cannot finish
            return await self._abandon(obj, status, failure)
        namespace, name = str(meta(obj)["namespace"]), str(meta(obj)["name"])
        wanted = target.wanted
        await self._follow_target(obj, status, applied, target)
        quiet, disruptive, content, in_flight = target.survey(
            self.pes.store, self.pods.store, namespace, name
        )
        pes = (self.pes.store.get(ObjectKey(namespace, n)) for n in (*quiet, *disruptive))
        live = {str(meta(pe)["name"]): pe for pe in pes if pe is not None}  # those patched
        await widths_module.patch_pes(self.client, wanted, namespace, quiet, content, live)
        if (in_flight or disruptive) and _overdue(record, target):
            untouched = {pe_id_of(n) for n in disruptive}
            obj, status, stop = await self._timed_out(obj, status, record, untouched)
            if stop:
                return obj, status
        if disruptive and record.checkpoint is None:
            obj, status, record, ready = await self._prepare_regions(obj, status, record, target, disruptive)
            if not ready:
                return obj, status
        batch = disruptive[: max(batch_size(target.job, len(target.pes)) - in_flight, 0)]
        await widths_module.patch_pes(self.client, wanted, namespace, batch, content, live)
        if quiet or disruptive or in_flight:
            return obj, status
        return await self._commit(obj, status, record, target)

    async def _follow_target(
        self, obj: Object, status: JobStatusView, applied: KeptPlan, target: Target
    ) -> None:
        """Step 2 (idempotent): the name table, the target's new children, the removal of what it
        drops (PEs, and the host pools and regions of a plan change), Exports, Imports, regions and
        their coordinator following. Done in full once per target (and after a restart); later
        passes check the name table and the children with an event since (one deleted meanwhile is
        created again: `children.changes`)."""
        m = meta(obj)
        namespace, name = str(m["namespace"]), str(m["name"])
        wanted = target.wanted
        table = self.configmaps.store.get(ObjectKey(namespace, name))
        if not widths_module.name_table_written(table, wanted[(CONFIGMAPS, name)]):
            await widths_module.write_name_table(self.client, wanted, namespace, name)
        with self._child_changes.to_check(ObjectKey(namespace, name), target.planned.children) as pending:
            await self._create_missing(pending, lambda c: True)
            if not target.followed:
                await self._drop_and_follow(obj, status, applied, target)
        target.followed = True

    async def _drop_and_follow(
        self, obj: Object, status: JobStatusView, applied: KeptPlan, target: Target
    ) -> None:
        """Step 2's removal of what the target drops, and Exports, Imports and regions following."""
        m = meta(obj)
        namespace, name = str(m["namespace"]), str(m["name"])
        wanted = target.wanted
        live = self.pes.store.select_by_labels({JOB_LABEL: name}, namespace)
        for pe_name in sorted({str(meta(pe)["name"]) for pe in live} - {pe.name for pe in target.pes}):
            for resource in (PES, SERVICES, CONFIGMAPS):
                await self.client.delete_if_present(resource, pe_name, namespace)
        for resource in _PLANNED_KINDS:
            for child in self.children[resource].store.select_by_labels({JOB_LABEL: name}, namespace):
                if (resource, child_name := str(meta(child)["name"])) not in wanted:
                    await self.client.delete_if_present(resource, child_name, namespace)
        record = status.upgrade
        undone = await self._undone_target(obj, status, record, applied) if record is not None else None
        if undone is not None:  # a rollback: what the undone edit wrote is put back
            running = undone.wanted
        else:  # what runs: the applied spec's children at the widths its regions run at
            _, running_children = self._children_at(
                applied_job(obj, status),
                str(m["uid"]),
                applied,
                self._running_widths(obj, applied),
                status.generation_id or 0,
            )
            running = {(d.resource, d.name): d for d in running_children}
        await widths_module.follow_ports(self.client, wanted, namespace, name, running)
        await widths_module.follow_regions(self.client, wanted, namespace, running, _FOLLOWED_KINDS)

    async def _prepare_regions(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, target: Target, disruptive: list[str]
    ) -> tuple[Object, JobStatusView, UpgradeRecord, bool]:
        """Before the first pod is replaced: checkpoint first (checkpoint-first, waiting for it) and
        tell the regions of the replaced PEs how to start. (obj, status, record, go on?)"""
        namespace, name = str(meta(obj)["namespace"]), str(meta(obj)["name"])
        planned = _planned_regions(target)
        regions = [  # not those the edit drops (being deleted)
            r
            for r in self.consistent_regions.store.select_by_labels({JOB_LABEL: name}, namespace)
            if meta(r)["name"] in planned
        ]
        note = NO_REGIONS
        if regions:
            mode = upgrade_mode(target.job.spec, True)
            nonce = edit_nonce(name, record)
            suspending = target.job.spec.state is JobState.SUSPENDED
            resuming = (status.applied_spec or {}).get("state") == JobState.SUSPENDED.value
            note = (
                f"{mode.value}: regions told to {'start clean' if mode is UpgradeMode.STATELESS else 'reset'}"
            )
            if mode is UpgradeMode.CHECKPOINT_FIRST and not resuming:
                await request_checkpoint(self.client, target.job, nonce, hold=True, regions=regions)
                outcome = checkpoint_outcome(regions, nonce)
                if outcome.failed:
                    failure = SubmissionFailure(SPEC_APPLIED, "CheckpointFailed", outcome.summary())
                    obj, status = await self._abandon(obj, status, failure)
                    return obj, status, record, False
                if not outcome.complete:
                    obj, status = await self._checkpoint_pending(obj, status, record, target, outcome)
                    return obj, status, record, False
                note = outcome.summary()
            if not suspending:
                pes = None if resuming else {pe_id_of(n) for n in disruptive}
                told = [
                    r
                    for r in regions
                    if pes is None or pes & set((r.get("spec") or {}).get("pesInRegion") or ())
                ]
                await request_start(self.client, target.job, mode, nonce, pes, regions=regions)
                if any(
                    ((r.get("status") or {}).get("startRequest") or {}).get("nonce") != nonce for r in told
                ):
                    # the coordinator must hold the request before a PE goes, or it may miss the restart
                    waiting = f"{len(told)} consistent regions taking on how to start"
                    obj, status = await self._note_edit(obj, status, WAITING_FOR_CHECKPOINT, waiting)
                    return obj, status, record, False
        record = record.model_copy(update={"checkpoint": note})
        written = await self._write_status(obj, status.with_(upgrade=record))
        return written, status_written(written, status.with_(upgrade=record)), record, True

    async def _checkpoint_pending(
        self,
        obj: Object,
        status: JobStatusView,
        record: UpgradeRecord,
        target: Target,
        outcome: CheckpointOutcome,
    ) -> tuple[Object, JobStatusView]:
        """The checkpoint-first checkpoint is not complete: wait. Past ``checkpointTimeoutSeconds``
        the edit still waits (nothing replaced, never stateless), and says so: SpecApplied
        CheckpointOverdue (Stalled) and a Warning Event."""
        timeout = target.job.spec.checkpoint_timeout_seconds
        if not outcome.overdue(
            utc_now().timestamp() * 1000, timeout, since_ms=record.started.timestamp() * 1000
        ):
            return await self._note_edit(obj, status, WAITING_FOR_CHECKPOINT, outcome.summary())
        message = (
            f"the checkpoint is not complete after checkpointTimeoutSeconds={timeout}: nothing is "
            f"replaced until it is (never a stateless upgrade); {outcome.summary()}"
        )
        overdue_before = (status.condition(SPEC_APPLIED) or {}).get("reason") == CHECKPOINT_OVERDUE
        written, status = await self._note_edit(obj, status, CHECKPOINT_OVERDUE, message)
        if not overdue_before:
            await self.recorder.record(written, "Warning", CHECKPOINT_OVERDUE, message)
        return written, status

    async def _release_hold(self, job: Job, nonce: str | None) -> None:
        """Periodic drains go on where a checkpoint request held them (``nonce``'s, or any; a hold
        the user set stays). ``job``: a valid spec (the last edit may not be)."""
        labels, namespace = {JOB_LABEL: str(job.metadata.name)}, str(job.metadata.namespace)
        regions = self.consistent_regions.store.select_by_labels(labels, namespace)
        await release_hold(self.client, job, nonce=nonce, regions=regions)

    async def _commit(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, target: Target
    ) -> tuple[Object, JobStatusView]:
        """Step 4: the target is what runs."""
        generation = record.target_generation
        suspended = target.job.spec.state is JobState.SUSPENDED
        conditions = status.conditions
        phase = JobPhase.SUSPENDED if suspended else JobPhase.RUNNING
        if record.rollback:
            phase = JobPhase.ROLLED_BACK
        else:
            set_condition(
                conditions, SPEC_APPLIED, "True", APPLIED, f"generation {generation} runs", generation
            )
        status = status.with_(
            phase=phase,
            upgrade=None,
            applied_generation=generation,
            applied_spec=record.spec,
            bundle_digest=record.bundle_digest,
            generation_id=record.generation_id,
            processing_elements=len(target.planned.plan.pes),
            conditions=conditions,
        )
        mode = upgrade_mode(target.job.spec, bool(target.planned.plan.consistent_regions))
        if not suspended and mode is UpgradeMode.CHECKPOINT_FIRST:
            await self._release_hold(target.job, None)
        await self._apply_widths(obj, target.planned.plan)
        written = await self._write_status(obj, status)
        uid = str(meta(obj)["uid"])
        self._targets.pop(uid, None)
        self._counts_written.pop(uid, None)  # the counts of what now runs: written next, at once
        # What runs is checked in full next (PE Services healed to the target's ports, ...): the
        # edit checked its children only for what it needed.
        self._child_changes.forget(ObjectKey(str(meta(obj)["namespace"]), str(meta(obj)["name"])))
        if self._cached(obj):
            self._planned[uid] = target.planned
        what = "rolled back to" if record.rollback else "runs"
        note = (
            f"generation {generation} {what} ({len(record.replaced)} PEs replaced, "
            f"{len(record.added)} added, {len(record.removed)} removed)"
        )
        await self.recorder.record(
            written, "Normal", "RolledBack" if record.rollback else "UpgradeSucceeded", note
        )
        return written, status_written(written, status)

    async def _abandon(
        self, obj: Object, status: JobStatusView, failure: SubmissionFailure
    ) -> tuple[Object, JobStatusView]:
        """The recorded edit cannot go on: stop it where it is and say so."""
        record = status.upgrade
        status = status.with_(upgrade=None, phase=JobPhase.RUNNING)
        if record is not None and (status.applied_spec or {}).get("state") != JobState.SUSPENDED.value:
            await self._release_hold(applied_job(obj, status), edit_nonce(str(meta(obj)["name"]), record))
        written = await self._write_status(obj, status)
        self._targets.pop(str(meta(obj)["uid"]), None)
        return await self._refuse_edit(written, status_written(written, status), failure)


def _planned_regions(target: Target) -> set[str]:
    return {c.name for c in target.planned.children if c.resource == CONSISTENT_REGIONS}


def regions_prepared(target: Target) -> str | None:
    """The record's ``checkpoint`` when the edit starts: set when the target has no regions to
    prepare (one status write fewer before the first pod goes), else left to `_prepare_regions`."""
    return None if _planned_regions(target) else NO_REGIONS


def edit_nonce(job: str, record: UpgradeRecord) -> str:
    """The checkpoint and start requests of an edit."""
    return f"{job}-g{record.target_generation}-{int(record.started.timestamp())}"


def _overdue(record: UpgradeRecord, target: Target) -> bool:
    limit = target.job.spec.submission_time_out_in_seconds
    return (utc_now() - record.started).total_seconds() > limit
