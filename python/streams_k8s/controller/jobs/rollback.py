"""An edit not Running within its target's ``submissionTimeOutInSeconds``: rolled back when
``spec.rollback`` (the default) and a last stable spec exist (the last stable spec written ahead
as the next record: phase RollingBack, then RolledBack); a rollback that does not reach Running
in time either stops in Failed, saying why (it never loops); without a rollback the edit goes on,
Stalled saying so (UpgradeTimedOut).
"""

from __future__ import annotations

from streams_k8s.api.job import JobPhase, UndoneEdit, UpgradeRecord
from streams_k8s.controller.jobs.change_steps import phase_during
from streams_k8s.controller.jobs.edit_notes import EditNotes
from streams_k8s.controller.jobs.edit_regions import EditRegions, edit_nonce
from streams_k8s.controller.jobs.edit_targets import EditTargets
from streams_k8s.controller.jobs.health import ROLLED_BACK, SPEC_APPLIED, UPGRADE_TIMED_OUT
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.status_writes import applied_job, status_written, utc_now, write_status
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.objects import Object, meta


class Rollback:
    """What an edit that timed out comes to (see the module docs; `jobs.change_steps` decides which)."""

    def __init__(
        self,
        client: KubeClient,
        recorder: EventRecorder,
        notes: EditNotes,
        regions: EditRegions,
        targets: EditTargets,
    ) -> None:
        self.client, self.recorder, self.notes = client, recorder, notes
        self.regions, self.targets = regions, targets

    async def fail(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord
    ) -> tuple[Object, JobStatusView]:
        """The rollback ``record`` is not Running in time: the job stops in Failed, saying why."""
        message = _late(record)
        conditions = status.conditions
        generation = int(meta(obj).get("generation") or 1)
        set_condition(conditions, SPEC_APPLIED, "False", "RollbackFailed", message, generation)
        status = status.with_(phase=JobPhase.FAILED, upgrade=None, message=message, conditions=conditions)
        written = await write_status(self.client, obj, status)
        self.targets.forget(str(meta(obj)["uid"]))
        await self.recorder.record(written, "Warning", "RollbackFailed", message)
        return written, status_written(written, status)

    async def start(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, untouched: set[int]
    ) -> tuple[Object, JobStatusView]:
        """The edit ``record`` is not Running in time: roll back to the last stable spec.
        ``untouched``: the PEs the edit has not patched yet."""
        # a checkpoint-first edit may have held the drains: the rollback does not need it
        await self.regions.release_hold(applied_job(obj, status), edit_nonce(str(meta(obj)["name"]), record))
        obj, status = await self._start(obj, status, record, untouched)
        note = f"{_late(record)}: applying the last stable spec"
        await self.recorder.record(obj, "Warning", "RollingBack", note)
        return obj, status

    async def go_on_late(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord
    ) -> tuple[Object, JobStatusView]:
        """The edit ``record`` is not Running in time and may not roll back: it goes on, Stalled
        saying so."""
        return await self.notes.note(
            obj, status, UPGRADE_TIMED_OUT, f"{_late(record)}; no rollback: it goes on"
        )

    async def _start(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, untouched: set[int]
    ) -> tuple[Object, JobStatusView]:
        """Write ahead a rollback: the last stable spec becomes the target; the PEs the undone edit
        replaced (all of its but ``untouched``) are replaced back."""
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
        status = status.with_(phase=phase_during(rollback), upgrade=rollback, conditions=conditions)
        written = await write_status(self.client, obj, status)
        return written, status_written(written, status)


def _above(record: UpgradeRecord) -> int | None:
    """The id a rollback of ``record``'s edit gives the first PE it has no id for: above every
    id that edit used, so none is given to other operators than it had."""
    if record.next_pe_id is None:
        return None
    return max([record.next_pe_id, *(i + 1 for i in record.added)])


def _late(record: UpgradeRecord) -> str:
    timeout = int(record.spec.get("submissionTimeOutInSeconds") or 300)
    what = "the rollback" if record.rollback else f"generation {record.target_generation}"
    return f"{what} did not reach Running within submissionTimeOutInSeconds={timeout}"
