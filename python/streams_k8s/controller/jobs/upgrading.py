"""Edits of a running job applied: re-plan, diff, write ahead, then replace only what changed.

A running job's children follow ``status.appliedSpec`` (generation ``status.appliedGeneration``).
When the spec's generation is another one, the edit is planned from the new spec (the bundle
content recorded when the bundle is the same, else fetched per its pull policy) and diffed
against the running plan (`jobs.upgrade_diff`). Then, in this order:

1. write-ahead: ``status.upgrade`` records the target generation, its spec, its bundle digest,
   the job generation it becomes and the PEs kept / replaced / added / removed; phase Upgrading,
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
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from streams_k8s.api.contract import (
    CONTENT_ID_ANNOTATION,
    JOB_LABEL,
    PE_LABEL,
    POD_TEMPLATE_ANNOTATION,
    SVC_LABEL,
    SVC_PE,
    name_table_stamp,
    pe_service_name,
)
from streams_k8s.api.job import Job, JobPhase, UpgradeRecord
from streams_k8s.api.processing_element import ProcessingElementSpec
from streams_k8s.controller.bundles.fetch import BundleError, FetchedBundle
from streams_k8s.controller.children.certificates import needs_transport_certificate, transport_certificate
from streams_k8s.controller.children.desired import Desired, desired_objects
from streams_k8s.controller.children.limits import check_children
from streams_k8s.controller.children.pod import pod_template_hash
from streams_k8s.controller.jobs import widths as widths_module
from streams_k8s.controller.jobs.base import KeptPlan, pod_ready, status_written, utc_now
from streams_k8s.controller.jobs.health import APPLIED, EDIT_REFUSED, PAUSED, SPEC_APPLIED, UPGRADING
from streams_k8s.controller.jobs.planned import bundle_failure, schedulable_nodes
from streams_k8s.controller.jobs.resizing import ResizingJobs
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.upgrade_diff import UpgradeDiff, upgrade_diff
from streams_k8s.controller.kinds import PES
from streams_k8s.controller.planning import SubmissionFailure, check_placement, plan_job, read_application
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.kinds import CONFIGMAPS, SERVICES
from streams_k8s.k8s.objects import Object, ObjectKey, meta

PAUSE_ANNOTATION = "streams.ibm.com/pause-reconciliation"

# How soon to look again while replaced pods come up (their events also bring the job back).
ROLL_POLL = 1.0


@dataclass(frozen=True, slots=True)
class Target:
    """The plan of an edit being applied, and what it changes."""

    job: Job
    planned: KeptPlan
    digest: str


def applied_job(obj: Object, status: JobStatusView) -> Job:
    """The Job as its children follow it: its metadata with the applied spec."""
    return Job.from_wire({**obj, "spec": status.applied_spec or obj.get("spec")})


def paused(obj: Object) -> bool:
    return (meta(obj).get("annotations") or {}).get(PAUSE_ANNOTATION) == "true"


def batch_size(job: Job, pes: int) -> int:
    return job.spec.max_unavailable or max(1, pes // 4)


class UpgradingJobs(ResizingJobs):
    """Applies edits of a running job (see the module docs)."""

    _targets: dict[str, tuple[int, Target]]  # by Job uid: the edit applied (`base` makes it)

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
            refused = status.condition(SPEC_APPLIED)
            if (
                refused
                and refused.get("reason") == EDIT_REFUSED
                and refused.get("observedGeneration") == generation
            ):
                return obj, status, False
            try:
                target = await self._plan_target(obj, job, status, applied, running)
            except SubmissionFailure as failure:
                return *await self._refuse_edit(obj, status, failure), False
            obj, status = await self._start(obj, status, running, applied, target)
            record = status.upgrade
            assert record is not None
        obj, status = await self._roll(obj, status, record, applied)
        return obj, status, status.upgrade is not None

    async def _note_edit(
        self, obj: Object, status: JobStatusView, reason: str, message: str
    ) -> tuple[Object, JobStatusView]:
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
        )

    def _build_target(
        self,
        job: Job,
        uid: str,
        fetched: FetchedBundle,
        generations: tuple[int, int],
        status: JobStatusView,
        applied: KeptPlan,
    ) -> Target:
        """Plan, place, render and check the edit's children (CPU-bound: runs in a thread).
        ``generations``: the spec generation and the job generation it becomes."""
        generation, generation_id = generations
        path = str(fetched.path)
        app = read_application(path, job.spec.bundle.name)
        plan = plan_job(
            job, app, job_id=int(status.id or 0), nodes=status.planned_nodes, ids_from=applied.plan
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
        )
        check_children(children)
        return Target(job, KeptPlan(generation, int(status.id or 0), plan, children), fetched.digest)

    async def _start(
        self, obj: Object, status: JobStatusView, running: Job, applied: KeptPlan, target: Target
    ) -> tuple[Object, JobStatusView]:
        """Step 1, the write-ahead record."""
        generation = int(meta(obj).get("generation") or 1)
        diff = upgrade_diff(running, applied.plan, target.job, target.planned.plan)
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
        )
        conditions = status.conditions
        set_condition(conditions, SPEC_APPLIED, "False", UPGRADING, diff.summary(), generation)
        status = status.with_(
            phase=JobPhase.UPGRADING, upgrade=record, observed_generation=generation, conditions=conditions
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
        fetcher = await self._bundle_fetcher()
        try:
            fetched = await fetcher.fetch_pinned(
                str(job.metadata.namespace), job.spec.bundle, record.bundle_digest
            )
        except BundleError as err:
            raise bundle_failure(err) from None
        generations = (record.target_generation, record.generation_id)
        target = await asyncio.to_thread(self._build_target, job, uid, fetched, generations, status, applied)
        if self._cached(obj):
            self._targets[uid] = (record.target_generation, target)
        return target

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
        await widths_module.write_name_table(self.client, wanted, namespace, name)
        await self._create_missing(
            target.planned.children, lambda c: c.resource != PES or _pe_id(c) in record.added
        )
        for pe_id in record.removed:
            for resource in (PES, SERVICES, CONFIGMAPS):
                await self.client.delete_if_present(resource, pe_service_name(name, pe_id), namespace)
        await widths_module.follow_ports(self.client, wanted, namespace, name)
        await widths_module.follow_regions(self.client, wanted, namespace)
        specs = {d.name: d.body["spec"] for d in target.planned.children if d.resource == PES}
        pending, in_flight = [], 0
        for pe_name, spec in sorted(specs.items()):
            current = self.pes.store.get(ObjectKey(namespace, pe_name))
            if current is None:
                in_flight += 1  # being created (added) or recreated
            elif current.get("spec") != spec:
                pending.append(pe_name)
            elif not self._runs(namespace, name, ProcessingElementSpec.model_validate(spec)):
                in_flight += 1
        for pe_name in pending[: max(batch_size(target.job, len(specs)) - in_flight, 0)]:
            await widths_module.patch_pe(self.client, wanted, namespace, pe_name)
        if pending or in_flight:
            return obj, status
        return await self._commit(obj, status, record, target)

    def _runs(self, namespace: str, job: str, spec: ProcessingElementSpec) -> bool:
        """A ready pod of this PE runs its content with its settings."""
        template = pod_template_hash(spec)
        for pod in self.pods.store.select_by_labels(
            {JOB_LABEL: job, SVC_LABEL: SVC_PE, PE_LABEL: str(spec.id)}, namespace
        ):
            annotations = meta(pod).get("annotations") or {}
            if (
                annotations.get(CONTENT_ID_ANNOTATION) == spec.content_id
                and annotations.get(POD_TEMPLATE_ANNOTATION, template) == template
                and pod_ready(pod)
            ):
                return True
        return False

    async def _commit(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, target: Target
    ) -> tuple[Object, JobStatusView]:
        """Step 4: the target is what runs."""
        generation = record.target_generation
        conditions = status.conditions
        set_condition(conditions, SPEC_APPLIED, "True", APPLIED, f"generation {generation} runs", generation)
        status = status.with_(
            phase=JobPhase.RUNNING,
            upgrade=None,
            applied_generation=generation,
            applied_spec=record.spec,
            bundle_digest=record.bundle_digest,
            generation_id=record.generation_id,
            processing_elements=len(target.planned.plan.pes),
            conditions=conditions,
        )
        written = await self._write_status(obj, status)
        uid = str(meta(obj)["uid"])
        self._targets.pop(uid, None)
        if self._cached(obj):
            self._planned[uid] = target.planned
        note = (
            f"generation {generation} runs ({len(record.replaced)} PEs replaced, {len(record.added)} added, "
            f"{len(record.removed)} removed)"
        )
        await self.recorder.record(written, "Normal", "UpgradeSucceeded", note)
        return written, status_written(written, status)

    async def _abandon(
        self, obj: Object, status: JobStatusView, failure: SubmissionFailure
    ) -> tuple[Object, JobStatusView]:
        """The recorded edit can no longer be planned: stop it where it is and say so."""
        status = status.with_(upgrade=None, phase=JobPhase.RUNNING)
        written = await self._write_status(obj, status)
        self._targets.pop(str(meta(obj)["uid"]), None)
        return await self._refuse_edit(written, status_written(written, status), failure)


def _pe_id(child: Desired) -> int:
    return int(child.body["spec"]["id"])


def _started_note(generation: int, diff: UpgradeDiff) -> str:
    replaced = ", ".join(f"{i} ({'/'.join(diff.replaced[i])})" for i in sorted(diff.replaced))
    return f"applying generation {generation}: {diff.summary()}" + (
        f"; replaced: {replaced}" if replaced else ""
    )
