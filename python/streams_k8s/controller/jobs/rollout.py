"""Changes of a running job applied: re-plan, diff, write ahead, then replace only what changed.

A running job's children follow ``status.appliedSpec`` (generation ``status.appliedGeneration``).
When the spec's generation is another one, the edit is planned from the new spec (the bundle
content recorded when the bundle is the same, else fetched per its pull policy: `jobs.edit_targets`)
and diffed against the running plan: the applied spec's at the widths its ParallelRegions run at,
which the edit keeps unless it sets a region's width itself (`jobs.upgrade_diff.plan_edit`,
`widths_set`). Then, in this order:

1. write-ahead: ``status.upgrade`` records the target generation, its spec, its bundle digest,
   the job generation it becomes, the PEs kept / replaced / added / removed, and what a restart
   needs to plan the same target: the widths the regions ran at (the commit changes them) and
   the id of the first PE it adds (`upgrade_diff.resumed_ids`: a plan of the applied spec made
   again after a restart may number the PEs it started from otherwise); phase Upgrading (or
   Suspending), condition SpecApplied=False (Upgrading) and an UpgradeStarted Event with the summary;
2. added PEs (ConfigMap, Service, PE) created and PEs whose changed settings steer only the
   controllers patched, at once with 3's first batch when there are no regions to prepare (what
   the diff renders anew goes first); then the name table rewritten, removed PEs deleted,
   Exports, Imports and ConsistentRegions following (`jobs.following`);
3. before the first pod is replaced the consistent regions are prepared (`jobs.edit_regions`);
   replaced PEs get their ConfigMap and PE spec, at most ``spec.maxUnavailable`` at a time (a
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
ReconciliationPaused) so several can be staged and applied at once. An edit not Running in time is
rolled back (`jobs.rollback`).

A width change (a ParallelRegion's ``spec.width``: `jobs.resizing`) is such a change too: its
record carries the target widths (``targetWidths``) and the applied spec; step 2 and 3 as above
(every changed PE at once unless ``maxUnavailable`` is set), the commit writes the job generation
then the regions' widths. One whose children the API server refuses goes back to the widths it
started from, as a change of its own.

Which step a pass takes (start an edit or a width change, pause, prepare the regions, replace a
batch, wait, commit, roll back, fail) is decided by the pure `jobs.change_steps.decide` from the
state the record names and what the pass observed; `Rollout` performs it.
"""

from __future__ import annotations

import asyncio

from streams_k8s.api.contract import pe_id_of
from streams_k8s.api.job import Job, JobPhase, JobState, UpgradeMode, UpgradeRecord
from streams_k8s.controller.jobs import child_writes
from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.controller.jobs.change_steps import Action, Observed, decide, phase_after, phase_during
from streams_k8s.controller.jobs.count_writes import CountWriter
from streams_k8s.controller.jobs.edit_notes import EditNotes
from streams_k8s.controller.jobs.edit_regions import NO_REGIONS, EditRegions, edit_nonce, regions_prepared
from streams_k8s.controller.jobs.edit_targets import EditTargets
from streams_k8s.controller.jobs.following import TargetFollower
from streams_k8s.controller.jobs.health import (
    APPLIED,
    EDIT_REFUSED,
    PAUSED,
    ROLLED_BACK,
    SPEC_APPLIED,
    UPGRADING,
)
from streams_k8s.controller.jobs.keeping import ChildKeeper
from streams_k8s.controller.jobs.plans import KeptPlan, Planner
from streams_k8s.controller.jobs.resizing import Resizer
from streams_k8s.controller.jobs.rollback import Rollback
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.status_writes import applied_job, status_written, utc_now, write_status
from streams_k8s.controller.jobs.target import Target
from streams_k8s.controller.jobs.upgrade_diff import UpgradeDiff, upgrade_diff, upgrade_mode
from streams_k8s.controller.jobs.widths import width_change_note
from streams_k8s.controller.planning import JobFailure
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.objects import Object, ObjectKey, meta

PAUSE_ANNOTATION = "streams.ibm.com/pause-reconciliation"

# SpecApplied reasons that settle an edit's generation: it is not tried again until the next edit.
FINAL = frozenset({EDIT_REFUSED, ROLLED_BACK, "RollbackFailed"})

# How soon to look again while replaced pods come up (their events also bring the job back).
ROLL_POLL = 1.0


def paused(obj: Object) -> bool:
    return (meta(obj).get("annotations") or {}).get(PAUSE_ANNOTATION) == "true"


def batch_size(job: Job, pes: int, resize: bool = False) -> int:
    """``maxUnavailable``; else a quarter of the PEs for an edit, all of them for a width change
    (time-sensitive, an autoscaler's: every changed PE at once, as before it was a change)."""
    return job.spec.max_unavailable or (pes if resize else max(1, pes // 4))


class Rollout:
    """Applies the changes of a running job (see the module docs)."""

    def __init__(
        self,
        client: KubeClient,
        caches: JobCaches,
        recorder: EventRecorder,
        parts: tuple[Planner, ChildKeeper, Resizer, CountWriter],
        edits: tuple[EditTargets, EditNotes, EditRegions, Rollback],
    ) -> None:
        self.client, self.caches, self.recorder = client, caches, recorder
        self.planner, self.keeper, self.resizer, self.counts = parts
        self.targets, self.notes, self.regions, self.rollback = edits
        self.following = TargetFollower(client, caches, self.keeper, self.planner, self.targets)

    async def follow(
        self, obj: Object, job: Job | None, status: JobStatusView, applied: KeptPlan, running: Job
    ) -> tuple[Object, JobStatusView, bool]:
        """Start or continue a change (an edit, a width change); (obj, status, whether one is under way).

        ``job`` is the edited spec (None when it is not valid: that refusal is already recorded)."""
        generation = int(meta(obj).get("generation") or 1)
        record = status.upgrade
        note = ""  # an edit's UpgradeStarted Event, once it has started
        if record is None:
            settled = status.condition(SPEC_APPLIED) or {}
            wanted = self.resizer.wanted(obj, applied)
            observed = Observed(
                edited=status.applied_generation != generation,
                valid=job is not None,
                paused=paused(obj),
                settled=settled.get("reason") in FINAL and settled.get("observedGeneration") == generation,
                resized=wanted is not None,
            )
            step = decide(None, observed)
            if step.action is Action.PAUSE:
                return *await self.notes.note(obj, status, PAUSED, "reconciliation is paused"), False
            if step.action is Action.RESIZE and wanted is not None:
                generation_id = wanted.pending or (status.generation_id or 0) + 1
                widths = (wanted.running, wanted.target)
                try:
                    target = self.targets.resized(obj, running, status, applied, widths, generation_id)
                except JobFailure as failure:
                    await self.resizer.refuse(obj, wanted.region, failure.message)
                    return obj, status, False
                obj, status, _ = await self._start(obj, status, running, target, (generation_id, widths[1]))
                await self.resizer.started(wanted, generation_id)
            elif step.action is Action.START and job is not None:
                try:
                    target = await self.targets.plan(obj, job, status, applied, running)
                except JobFailure as failure:
                    return *await self.notes.refuse(obj, status, failure), False
                obj, status, note = await self._start(obj, status, running, target)
            else:
                return obj, status, False
            record = status.upgrade
            assert record is not None
        # the Event goes alongside the first writes, not a round trip before them
        started = self.recorder.record(obj, "Normal", "UpgradeStarted", note) if note else asyncio.sleep(0)
        (obj, status), _ = await asyncio.gather(self._roll(obj, status, record, applied), started)
        return obj, status, status.upgrade is not None

    async def _start(
        self,
        obj: Object,
        status: JobStatusView,
        running: Job,
        target: Target,
        resize: tuple[int, dict[str, int]] | None = None,
    ) -> tuple[Object, JobStatusView, str]:
        """Step 1, the write-ahead record: of an edit, or of a width change (``resize``: the job
        generation it becomes and its target widths); and the note of an edit's UpgradeStarted."""
        generation = int(meta(obj).get("generation") or 1)
        # In a thread, as the plan: an edit of the PE template builds, compares and hashes every
        # PE's spec twice.
        diff = await asyncio.to_thread(upgrade_diff, running, target.running, target.job, target.planned.plan)
        record = UpgradeRecord(
            target_generation=generation if resize is None else int(status.applied_generation or generation),
            spec=target.job.spec.to_wire(),
            bundle_digest=target.digest,
            generation_id=(status.generation_id or 0) + 1 if resize is None else resize[0],
            started=utc_now(),
            kept=diff.pes.kept,
            replaced=sorted(diff.pes.replaced),
            added=diff.pes.added,
            removed=diff.pes.removed,
            widths={r.alias: r.width for r in target.running.parallel_regions},
            next_pe_id=max((pe.id for pe in target.running.pes), default=-1) + 1 if resize is None else None,
            # a width change prepares its regions only where the job sets how (upgradeMode)
            checkpoint=regions_prepared(target)
            if resize is None or target.job.spec.upgrade_mode
            else NO_REGIONS,
            target_widths=None if resize is None else resize[1],
        )
        if resize is not None:  # the spec's generation and SpecApplied stay: it is not an edit
            status = status.with_(phase=phase_during(record), upgrade=record)
        else:
            conditions = status.conditions
            set_condition(conditions, SPEC_APPLIED, "False", UPGRADING, diff.summary(), generation)
            status = status.with_(
                phase=phase_during(record),
                upgrade=record,
                observed_generation=generation,
                conditions=conditions,
            )
        written = await write_status(self.client, obj, status)
        self.targets.keep(obj, record, target)
        if resize is not None:
            target.leave(record.kept)
            return written, status_written(written, status), ""
        target.defer(record.kept)
        return written, status_written(written, status), _started_note(generation, diff)

    async def _roll(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, applied: KeptPlan
    ) -> tuple[Object, JobStatusView]:
        """Steps 2 to 4 (idempotent): bring the children to the target, a batch of PEs at a time.
        A width change whose children the API server refuses goes back."""
        try:
            return await self._roll_target(obj, status, record, applied)
        except (JobFailure, child_writes.ChildRefused) as err:
            if record.target_widths is None or record.refused is not None:
                raise
            failure = err.failure if isinstance(err, child_writes.ChildRefused) else err
            return await self._go_back(obj, status, record, failure)

    async def _roll_target(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, applied: KeptPlan
    ) -> tuple[Object, JobStatusView]:
        try:
            target = await self.targets.recorded(obj, status, record, applied)
        except JobFailure as failure:  # the recorded content is gone: the edit cannot finish
            if record.target_widths is not None:
                raise  # a width change that cannot be planned again goes back (`_roll`)
            return await self._abandon(obj, status, failure)
        namespace, name = str(meta(obj)["namespace"]), str(meta(obj)["name"])
        ready_pes = self.counts.counts.ready_pes(ObjectKey(namespace, name))
        quiet, disruptive, content, in_flight = target.survey(
            self.caches.pes.store, self.caches.pods.store, namespace, name, ready_pes
        )
        pes = (self.caches.pes.store.get(ObjectKey(namespace, n)) for n in (*quiet, *disruptive))
        live = {str(meta(pe)["name"]): pe for pe in pes if pe is not None}  # those patched
        observed = Observed(
            quiet=len(quiet),
            disruptive=len(disruptive),
            in_flight=in_flight,
            batch_size=batch_size(target.job, len(target.pes), record.target_widths is not None),
            overdue=_overdue(record, target),
            may_roll_back=bool(
                record.target_widths is None and record.spec.get("rollback", True) and status.last_stable_spec
            ),
        )
        step = decide(record, observed)
        # What the diff renders anew goes first, at once: the new children, the PEs patched quietly
        # and, with no regions to prepare, the first batch replaced; then the rest of step 2.
        early = disruptive[: step.batch] if step.action is Action.REPLACE else []
        await child_writes.at_once(
            self.following.create(obj, target),
            _patch(self.client, target, namespace, [*quiet, *early], content, live),
        )
        await self.following.follow(obj, status, applied, target)
        if step.action is Action.FAIL:
            return await self.rollback.fail(obj, status, record)
        if step.action is Action.ROLL_BACK:
            return await self.rollback.start(obj, status, record, {pe_id_of(n) for n in disruptive})
        if step.late:
            obj, status = await self.rollback.go_on_late(obj, status, record)
        if step.action is Action.PREPARE_REGIONS:
            try:
                obj, status, record, ready = await self.regions.prepare(
                    obj, status, record, target, disruptive
                )
            except JobFailure as failure:  # the checkpoint failed: nothing replaced
                if record.target_widths is not None:
                    raise  # a width change goes back (`_roll`)
                return await self._abandon(obj, status, failure)
            if not ready:
                return obj, status
            step = decide(record, observed)  # prepared: the first batch goes now
        if step.action is Action.REPLACE and not early:
            await _patch(self.client, target, namespace, disruptive[: step.batch], content, live)
        if step.action is not Action.COMMIT:
            return obj, status
        return await self._commit(obj, status, record, target)

    async def _commit(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, target: Target
    ) -> tuple[Object, JobStatusView]:
        """Step 4: the target is what runs."""
        generation = record.target_generation
        suspended = target.job.spec.state is JobState.SUSPENDED
        resized = record.target_widths is not None
        conditions = status.conditions
        if not record.rollback and not resized:
            set_condition(
                conditions, SPEC_APPLIED, "True", APPLIED, f"generation {generation} runs", generation
            )
        status = status.with_(
            phase=phase_after(record),
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
            await self.regions.release_hold(target.job, None)
        if not resized:
            await self.resizer.apply_widths(obj, target.planned.plan)
        written = await write_status(self.client, obj, status)
        uid = str(meta(obj)["uid"])
        self.targets.forget(uid)
        self.counts.forget(uid)  # the counts of what now runs: written next, at once
        # What runs is checked in full next (PE Services healed to the target's ports, ...): the
        # edit checked its children only for what it needed.
        self.keeper.changes.forget(ObjectKey(str(meta(obj)["namespace"]), str(meta(obj)["name"])))
        if resized:  # the plan kept stays the spec's: every width is re-fused from it
            summary = upgrade_diff(target.job, target.running, target.job, target.planned.plan).summary()
            await self.resizer.committed(written, record, summary)
            return written, status_written(written, status)
        self.planner.keep(obj, target.planned)
        what = "rolled back to" if record.rollback else "runs"
        note = (
            f"generation {generation} {what} ({len(record.replaced)} PEs replaced, "
            f"{len(record.added)} added, {len(record.removed)} removed)"
        )
        await self.recorder.record(
            written, "Normal", "RolledBack" if record.rollback else "UpgradeSucceeded", note
        )
        return written, status_written(written, status)

    async def _go_back(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, failure: JobFailure
    ) -> tuple[Object, JobStatusView]:
        """The width change ``record`` cannot be applied: written ahead, the change back to the
        widths it started from, saying why (the regions say it once it is back)."""
        start, target = record.widths or {}, record.target_widths or {}
        back = record.model_copy(
            update={
                "widths": target,
                "target_widths": start,
                "generation_id": record.generation_id + 1,
                "started": utc_now(),
                "refused": f"{width_change_note(start, target)}: {failure.message}",
                "checkpoint": record.checkpoint or NO_REGIONS,  # its regions are told once
                "replaced": record.replaced,
                "added": record.removed,
                "removed": record.added,
            }
        )
        self.targets.forget(str(meta(obj)["uid"]))
        written = await write_status(self.client, obj, status.with_(upgrade=back))
        return written, status_written(written, status.with_(upgrade=back))

    async def _abandon(
        self, obj: Object, status: JobStatusView, failure: JobFailure
    ) -> tuple[Object, JobStatusView]:
        """The recorded edit cannot go on: stop it where it is and say so."""
        record = status.upgrade
        status = status.with_(upgrade=None, phase=JobPhase.RUNNING)
        if record is not None and (status.applied_spec or {}).get("state") != JobState.SUSPENDED.value:
            await self.regions.release_hold(
                applied_job(obj, status), edit_nonce(str(meta(obj)["name"]), record)
            )
        written = await write_status(self.client, obj, status)
        self.targets.forget(str(meta(obj)["uid"]))
        return await self.notes.refuse(written, status_written(written, status), failure)


def _started_note(generation: int, diff: UpgradeDiff) -> str:
    replaced = ", ".join(f"{i} ({'/'.join(why)})" for i, why in diff.pes.replaced.items())
    return f"applying generation {generation}: {diff.summary()}" + (
        f"; replaced: {replaced}" if replaced else ""
    )


async def _patch(
    client: KubeClient,
    target: Target,
    namespace: str,
    names: list[str],
    content: set[str],
    live: dict[str, Object],
) -> None:
    """The PEs ``names`` patched to the target (their ConfigMaps first where ``content`` changes)."""
    await child_writes.patch_pes(client, target.wanted, namespace, names, content, live)
    target.written(names, live)


def _overdue(record: UpgradeRecord, target: Target) -> bool:
    limit = target.job.spec.submission_time_out_in_seconds
    return (utc_now() - record.started).total_seconds() > limit
