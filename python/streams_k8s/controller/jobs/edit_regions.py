"""A rollout's consistent regions prepared before its first pod is replaced, per the target's
``spec.upgradeMode`` (`jobs.checkpoints`): with ``checkpoint-first`` every region checkpoints
(drains then held) and the edit waits for it, however long (past ``checkpointTimeoutSeconds`` it
says so: SpecApplied CheckpointOverdue and a Warning Event; a checkpoint that fails stops the
edit, nothing replaced); the regions of replaced PEs are told how to start (reset to that or the
last checkpoint, or clean for ``stateless``), and the rollout waits until each holds the request.
``status.upgrade.checkpoint`` records that this was done.
"""

from __future__ import annotations

from streams_k8s.api.contract import JOB_LABEL, pe_id_of
from streams_k8s.api.job import Job, JobState, UpgradeMode, UpgradeRecord
from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.controller.jobs.checkpoints import (
    CheckpointOutcome,
    checkpoint_outcome,
    release_hold,
    request_checkpoint,
    request_start,
)
from streams_k8s.controller.jobs.edit_notes import EditNotes
from streams_k8s.controller.jobs.health import CHECKPOINT_OVERDUE, SPEC_APPLIED, WAITING_FOR_CHECKPOINT
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.status_writes import status_written, utc_now, write_status
from streams_k8s.controller.jobs.target import Target
from streams_k8s.controller.jobs.upgrade_diff import upgrade_mode
from streams_k8s.controller.kinds import CONSISTENT_REGIONS
from streams_k8s.controller.planning import JobFailure
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.objects import Object, meta

# What an edit records of its regions when its target has none: nothing to prepare before the
# first pod is replaced (written ahead with the rest of the record: `regions_prepared`).
NO_REGIONS = "no consistent regions"


def planned_regions(target: Target) -> set[str]:
    return {c.name for c in target.planned.children if c.resource == CONSISTENT_REGIONS}


def regions_prepared(target: Target) -> str | None:
    """The record's ``checkpoint`` when the edit starts: set when the target has no regions to
    prepare (one status write fewer before the first pod goes), else left to `EditRegions.prepare`."""
    return None if planned_regions(target) else NO_REGIONS


def edit_nonce(job: str, record: UpgradeRecord) -> str:
    """The checkpoint and start requests of an edit."""
    return f"{job}-g{record.target_generation}-{int(record.started.timestamp())}"


class EditRegions:
    """Prepares a rollout's consistent regions (see the module docs)."""

    def __init__(
        self, client: KubeClient, caches: JobCaches, recorder: EventRecorder, notes: EditNotes
    ) -> None:
        self.client, self.caches, self.recorder, self.notes = client, caches, recorder, notes

    async def prepare(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, target: Target, disruptive: list[str]
    ) -> tuple[Object, JobStatusView, UpgradeRecord, bool]:
        """Before the first pod is replaced: checkpoint first (checkpoint-first, waiting for it) and
        tell the regions of the replaced PEs how to start. (obj, status, record, go on?);
        `JobFailure` (CheckpointFailed) when the checkpoint failed."""
        planned = planned_regions(target)
        # not those the edit drops (being deleted)
        regions = [
            r for r in self.caches.labelled(self.caches.consistent_regions, obj) if meta(r)["name"] in planned
        ]
        note = NO_REGIONS
        if regions:
            mode = upgrade_mode(target.job.spec, True)
            nonce = edit_nonce(str(meta(obj)["name"]), record)
            suspending = target.job.spec.state is JobState.SUSPENDED
            resuming = (status.applied_spec or {}).get("state") == JobState.SUSPENDED.value
            note = (
                f"{mode.value}: regions told to {'start clean' if mode is UpgradeMode.STATELESS else 'reset'}"
            )
            if mode is UpgradeMode.CHECKPOINT_FIRST and not resuming:
                await request_checkpoint(self.client, target.job, nonce, hold=True, regions=regions)
                outcome = checkpoint_outcome(regions, nonce)
                if outcome.failed:
                    raise JobFailure(SPEC_APPLIED, "CheckpointFailed", outcome.summary())
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
                    obj, status = await self.notes.note(obj, status, WAITING_FOR_CHECKPOINT, waiting)
                    return obj, status, record, False
        record = record.model_copy(update={"checkpoint": note})
        written = await write_status(self.client, obj, status.with_(upgrade=record))
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
            return await self.notes.note(obj, status, WAITING_FOR_CHECKPOINT, outcome.summary())
        message = (
            f"the checkpoint is not complete after checkpointTimeoutSeconds={timeout}: nothing is "
            f"replaced until it is (never a stateless upgrade); {outcome.summary()}"
        )
        overdue_before = (status.condition(SPEC_APPLIED) or {}).get("reason") == CHECKPOINT_OVERDUE
        written, status = await self.notes.note(obj, status, CHECKPOINT_OVERDUE, message)
        if not overdue_before:
            await self.recorder.record(written, "Warning", CHECKPOINT_OVERDUE, message)
        return written, status

    async def release_hold(self, job: Job, nonce: str | None) -> None:
        """Periodic drains go on where a checkpoint request held them (``nonce``'s, or any; a hold
        the user set stays). ``job``: a valid spec (the last edit may not be)."""
        labels, namespace = {JOB_LABEL: str(job.metadata.name)}, str(job.metadata.namespace)
        regions = self.caches.consistent_regions.store.select_by_labels(labels, namespace)
        await release_hold(self.client, job, nonce=nonce, regions=regions)
