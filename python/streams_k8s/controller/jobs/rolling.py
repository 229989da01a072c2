"""An edit recorded in ``status.upgrade`` brought about (steps 2 to 4 of `jobs.upgrading`), level
by level: the children are compared with the target's each time, so a controller killed anywhere
resumes from what it finds.

PEs whose change is disruptive (their pod is replaced: new code, new pod settings, suspended or
resumed) go at most ``spec.maxUnavailable`` at a time; other PE changes (restart policies) at once.
Before the first disruptive change the consistent regions are prepared per ``spec.upgradeMode``
(`controller.checkpoints`): with ``checkpoint-first`` every region checkpoints (drains then held)
and the upgrade waits for it, however long (a checkpoint that fails stops the upgrade, nothing
replaced); the regions of replaced PEs are told how to start (reset to that or the last checkpoint,
or clean for ``stateless``); ``status.upgrade.checkpoint`` records that this was done.

An edit that is not Running within the target's ``submissionTimeOutInSeconds`` is rolled back when
``spec.rollback`` (the default) and a last stable spec exist: the last stable spec is applied the
same way (phase RollingBack, then RolledBack; a Warning Event names what failed). A rollback that
does not reach Running in time either stops in Failed, saying why: it never loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from streams_k8s.api.contract import (
    CONTENT_ID_ANNOTATION,
    JOB_LABEL,
    PE_LABEL,
    POD_TEMPLATE_ANNOTATION,
    SVC_LABEL,
    SVC_PE,
)
from streams_k8s.api.job import Job, JobPhase, JobState, UpgradeMode, UpgradeRecord
from streams_k8s.api.processing_element import ProcessingElementSpec
from streams_k8s.app.plan import Plan
from streams_k8s.controller.checkpoints import (
    checkpoint_outcome,
    release_hold,
    request_checkpoint,
    request_start,
    upgrade_mode,
)
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.children.pod import pod_template_hash
from streams_k8s.controller.jobs import widths as widths_module
from streams_k8s.controller.jobs.base import KeptPlan, status_written, utc_now
from streams_k8s.controller.jobs.counts import pod_ready
from streams_k8s.controller.jobs.health import (
    APPLIED,
    EDIT_REFUSED,
    SPEC_APPLIED,
    UPGRADE_TIMED_OUT,
    WAITING_FOR_CHECKPOINT,
)
from streams_k8s.controller.jobs.resizing import ResizingJobs
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.kinds import PARALLEL_REGIONS, PES
from streams_k8s.controller.planning import SubmissionFailure
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.kinds import CONFIGMAPS, SERVICES
from streams_k8s.k8s.objects import Object, ObjectKey, meta


@dataclass(frozen=True, slots=True)
class Target:
    """The plan of an edit being applied."""

    job: Job
    planned: KeptPlan
    digest: str
    running: Plan  # the plan the edit starts from: the applied spec's at the widths that run


def batch_size(job: Job, pes: int) -> int:
    return job.spec.max_unavailable or max(1, pes // 4)


def _comparable(spec: dict[str, object]) -> dict[str, object]:
    """A PE spec without what the user sets on the PE itself (its own restart nonce)."""
    return {k: v for k, v in spec.items() if k != "restartNonce"}


def _disruptive(current: ProcessingElementSpec, wanted: ProcessingElementSpec) -> bool:
    """Does the change replace or remove the PE's pod?"""
    return (
        current.content_id != wanted.content_id
        or current.suspended != wanted.suspended
        or pod_template_hash(current)
        != pod_template_hash(wanted.model_copy(update={"restart_nonce": current.restart_nonce}))
    )


class RollingJobs(ResizingJobs):
    """Brings a job's children to a recorded edit (see the module docs)."""

    _targets: dict[str, tuple[int, Target]]  # by Job uid: the edit applied (`base` makes it)

    async def _recorded_target(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, applied: KeptPlan
    ) -> Target:
        raise NotImplementedError  # `jobs.upgrading`

    async def _start_rollback(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord
    ) -> tuple[Object, JobStatusView]:
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
        m = meta(obj)
        namespace, name = str(m["namespace"]), str(m["name"])
        wanted = {(d.resource, d.name): d for d in target.planned.children}
        table = self.configmaps.store.get(ObjectKey(namespace, name))
        if table is None or table.get("data") != wanted[(CONFIGMAPS, name)].body["data"]:
            await widths_module.write_name_table(self.client, wanted, namespace, name)
        await self._create_missing(target.planned.children, lambda c: True)
        live = {
            str(meta(pe)["name"]): pe for pe in self.pes.store.select_by_labels({JOB_LABEL: name}, namespace)
        }
        for pe_name in sorted(set(live) - {n for r, n in wanted if r == PES}):
            for resource in (PES, SERVICES, CONFIGMAPS):
                await self.client.delete_if_present(resource, pe_name, namespace)
        running = {(d.resource, d.name): d for d in applied.children}
        await widths_module.follow_ports(self.client, wanted, namespace, name, running)
        await widths_module.follow_regions(self.client, wanted, namespace, running)
        quiet: list[str] = []
        disruptive: list[str] = []
        content: set[str] = set()  # PEs whose code changes: their ConfigMap first
        in_flight = 0
        for child in sorted(_pes_of(target), key=lambda c: int(c.body["spec"]["id"])):
            pe_name = child.name
            spec = ProcessingElementSpec.model_validate(child.body["spec"])
            current = live.get(pe_name)
            if current is None:
                in_flight += 1  # being created
            elif _comparable(current["spec"]) != child.body["spec"]:
                now = ProcessingElementSpec.model_validate(current["spec"])
                (disruptive if _disruptive(now, spec) else quiet).append(pe_name)
                if now.content_id != spec.content_id:
                    content.add(pe_name)
            elif not self._settled(namespace, name, spec):
                in_flight += 1
        for pe_name in quiet:
            await widths_module.patch_pe(self.client, wanted, namespace, pe_name, pe_name in content)
        if (in_flight or disruptive) and _overdue(record, target):
            obj, status, stop = await self._timed_out(obj, status, record)
            if stop:
                return obj, status
        if disruptive and record.checkpoint is None:
            obj, status, record, ready = await self._prepare_regions(obj, status, record, target, disruptive)
            if not ready:
                return obj, status
        for pe_name in disruptive[: max(batch_size(target.job, len(live)) - in_flight, 0)]:
            await widths_module.patch_pe(self.client, wanted, namespace, pe_name, pe_name in content)
        if quiet or disruptive or in_flight:
            return obj, status
        return await self._commit(obj, status, record, target)

    def _settled(self, namespace: str, job: str, spec: ProcessingElementSpec) -> bool:
        """The PE is as its spec says: no pod while suspended, else a ready pod with its content and
        settings."""
        template = pod_template_hash(spec)
        pods = self.pods.store.select_by_labels(
            {JOB_LABEL: job, SVC_LABEL: SVC_PE, PE_LABEL: str(spec.id)}, namespace
        )
        if spec.suspended:
            return not pods
        for pod in pods:
            annotations = meta(pod).get("annotations") or {}
            if (
                annotations.get(CONTENT_ID_ANNOTATION) == spec.content_id
                and annotations.get(POD_TEMPLATE_ANNOTATION, template) == template
                and pod_ready(pod)
            ):
                return True
        return False

    async def _prepare_regions(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, target: Target, disruptive: list[str]
    ) -> tuple[Object, JobStatusView, UpgradeRecord, bool]:
        """Before the first pod is replaced: checkpoint first (checkpoint-first, waiting for it) and
        tell the regions of the replaced PEs how to start. (obj, status, record, go on?)"""
        namespace, name = str(meta(obj)["namespace"]), str(meta(obj)["name"])
        regions = self.consistent_regions.store.select_by_labels({JOB_LABEL: name}, namespace)
        note = "no consistent regions"
        if regions:
            mode = upgrade_mode(target.job.spec, True)
            nonce = f"{name}-g{record.target_generation}-{int(record.started.timestamp())}"
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
                    obj, status = await self._note_edit(
                        obj, status, WAITING_FOR_CHECKPOINT, outcome.summary()
                    )
                    return obj, status, record, False
                note = outcome.summary()
            if not suspending:
                pes = None if resuming else {int(n.rsplit("-", 1)[1]) for n in disruptive}
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
        if (
            not suspended
            and upgrade_mode(target.job.spec, bool(target.planned.plan.consistent_regions))
            is UpgradeMode.CHECKPOINT_FIRST
        ):
            m = meta(obj)
            labels, namespace = {JOB_LABEL: str(m["name"])}, str(m["namespace"])
            regions = self.consistent_regions.store.select_by_labels(labels, namespace)
            await release_hold(self.client, target.job, regions=regions)
        await self._apply_widths(obj, target)
        written = await self._write_status(obj, status)
        uid = str(meta(obj)["uid"])
        self._targets.pop(uid, None)
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

    async def _apply_widths(self, obj: Object, target: Target) -> None:
        """The job's ParallelRegions say the widths the target runs at: a resize the edit kept, or
        the width the edit itself gave a region (its spec follows, so it is not resized back)."""
        labels, namespace = {JOB_LABEL: str(meta(obj)["name"])}, str(meta(obj)["namespace"])
        widths = {r.alias: r.width for r in target.planned.plan.parallel_regions}
        for region in self.parallel_regions.store.select_by_labels(labels, namespace):
            width = widths.get(str(region["spec"]["alias"]))
            if width is None or (region.get("status") or {}).get("width") == width:
                continue
            if region["spec"]["width"] != width:
                name = str(meta(region)["name"])
                region = await self.client.patch(
                    PARALLEL_REGIONS, name, {"spec": {"width": width}}, namespace
                )
            await widths_module.record_applied(self.client, region, width)

    async def _abandon(
        self, obj: Object, status: JobStatusView, failure: SubmissionFailure
    ) -> tuple[Object, JobStatusView]:
        """The recorded edit cannot go on: stop it where it is and say so."""
        status = status.with_(upgrade=None, phase=JobPhase.RUNNING)
        written = await self._write_status(obj, status)
        self._targets.pop(str(meta(obj)["uid"]), None)
        return await self._refuse_edit(written, status_written(written, status), failure)

    async def _timed_out(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord
    ) -> tuple[Object, JobStatusView, bool]:
        """The edit is not Running in time: roll back; a rollback stops in Failed; without a
        rollback the edit goes on, Stalled saying so. (obj, status, stop rolling this edit?)"""
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
            obj, status = await self._start_rollback(obj, status, record)
            await self.recorder.record(
                obj, "Warning", "RollingBack", f"{message}: applying the last stable spec"
            )
            return obj, status, True
        obj, status = await self._note_edit(
            obj, status, UPGRADE_TIMED_OUT, f"{message}; no rollback: it goes on"
        )
        return obj, status, False


def _pes_of(target: Target) -> list[Desired]:
    return [c for c in target.planned.children if c.resource == PES]


def _overdue(record: UpgradeRecord, target: Target) -> bool:
    limit = target.job.spec.submission_time_out_in_seconds
    return (utc_now() - record.started).total_seconds() > limit
