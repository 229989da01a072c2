"""The plan of a change (`jobs.target.Target`): made when the change starts, made again from its
record (`status.upgrade`) after a restart, and kept per Job while the change is applied; each PE or
pod event of a job being changed is noted on its target (the next pass looks at that PE again).
An edit's is planned from its spec; a width change's is the applied spec's plan re-fused at its
target widths (`resized`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from streams_k8s.api.contract import JOB_LABEL, PE_LABEL, SVC_LABEL, SVC_PE, name_table_stamp, pe_service_name
from streams_k8s.api.job import Job, JobSpec, UpgradeRecord
from streams_k8s.app.plan import PLANNING_ERRORS, plan_at_widths
from streams_k8s.controller.bundles.fetch import BundleError, FetchedBundle
from streams_k8s.controller.children.certificates import needs_transport_certificate, transport_certificate
from streams_k8s.controller.children.changes import status_only
from streams_k8s.controller.children.desired import Rendered, desired_objects
from streams_k8s.controller.children.limits import check_children
from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.controller.jobs.health import PLANNED
from streams_k8s.controller.jobs.plans import KeptPlan, Planner, bundle_failure, schedulable_nodes
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.status_writes import utc_now
from streams_k8s.controller.jobs.target import Target
from streams_k8s.controller.jobs.upgrade_diff import given_back, pe_operators, plan_edit, resumed_ids
from streams_k8s.controller.jobs.widths import RESIZE_FAILED, width_change_note
from streams_k8s.controller.planning import JobFailure, check_placement, read_application
from streams_k8s.k8s.informer import EventType
from streams_k8s.k8s.objects import Object, ObjectKey, meta

log = logging.getLogger(__name__)


class EditTargets:
    """Plans edits and keeps the one applied per Job (see the module docs)."""

    def __init__(self, caches: JobCaches, planner: Planner) -> None:
        self.caches, self.planner = caches, planner
        # by Job uid: the change's (spec generation, job generation) and its plan
        self._targets: dict[str, tuple[tuple[int, int], Target]] = {}
        caches.pes.add_handler(self._on_pe)
        caches.pods.add_handler(self._on_pod)

    def keep(self, obj: Object, record: UpgradeRecord, target: Target) -> None:
        if self.caches.holds(obj):
            self._targets[str(meta(obj)["uid"])] = ((record.target_generation, record.generation_id), target)

    def forget(self, uid: str) -> None:
        self._targets.pop(uid, None)

    def retained(self) -> int:
        return len(self._targets)

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
        key = ObjectKey(str(m.get("namespace") or ""), str(job_name))
        job = self.caches.jobs.store.get(key) if job_name else None
        kept = self._targets.get(str(meta(job).get("uid"))) if job is not None else None
        if kept is not None:
            kept[1].note(pe)

    async def plan(
        self, obj: Object, job: Job, status: JobStatusView, applied: KeptPlan, running: Job
    ) -> Target:
        """The edit's plan (nothing is written if it cannot be made, placed or accepted)."""
        namespace = str(job.metadata.namespace)
        fetcher = await self.planner.fetcher()
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
            self._build,
            job,
            str(meta(obj)["uid"]),
            fetched,
            (generation, generation_id),
            status,
            applied,
            (self.planner.running_widths(obj, applied), None),
        )

    def _build(
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
        app = read_application(str(fetched.path), job.spec.bundle.name)
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
        check_placement(job, plan, schedulable_nodes(self.caches.nodes.store.select()))
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
            coordinator_mode=self.planner.coordinator_mode,
            # what runs, when the applied spec says what it was rendered from
            earlier=Rendered(applied_spec, applied.plan, applied.children) if status.applied_spec else None,
        )
        check_children(children, checked=applied.children)
        return Target(job, KeptPlan(generation, int(status.id or 0), plan, children), fetched.digest, running)

    async def recorded(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, applied: KeptPlan
    ) -> Target:
        """The target ``record`` says (kept, else planned again from the record)."""
        uid = str(meta(obj)["uid"])
        kept = self._targets.get(uid)
        if kept is not None and kept[0] == (record.target_generation, record.generation_id):
            return kept[1]
        job = Job.from_wire({**obj, "spec": record.spec})
        widths = self.started_widths(obj, record, applied)
        if record.target_widths is not None:
            target = self.resized(
                obj, job, status, applied, (widths, record.target_widths), record.generation_id
            )
            target.leave(record.kept)
            self.keep(obj, record, target)
            return target
        ids = None
        if record.next_pe_id is not None:
            live = self.caches.live_ids(str(job.metadata.namespace), str(job.metadata.name), uid)
            ids = resumed_ids(live, record.next_pe_id)
            if record.rollback:  # the PEs the undone edit removed come back with their ids
                started = await asyncio.to_thread(plan_at_widths, applied.plan, widths)
                ids.update(given_back(pe_operators(started), live, record.added))
        target = await self._plan_recorded(
            obj, status, record, applied, job, record.bundle_digest, (widths, ids)
        )
        self.keep(obj, record, target)
        return target

    def resized(
        self,
        obj: Object,
        job: Job,
        status: JobStatusView,
        applied: KeptPlan,
        widths: tuple[dict[str, int], dict[str, int]],
        generation_id: int,
    ) -> Target:
        """A width change's plan: the applied spec ``job`` from the ``widths`` it starts from to
        those it goes to, as job generation ``generation_id`` (`JobFailure` ResizeFailed when it
        cannot be planned, placed or accepted: nothing is written)."""
        start, wanted = widths
        what = width_change_note(start, wanted)
        try:
            running = plan_at_widths(applied.plan, start)
            plan, children = self.planner.children_at(
                job, str(meta(obj)["uid"]), applied, wanted, generation_id
            )
        except (*PLANNING_ERRORS, ValueError) as err:
            raise JobFailure(PLANNED, RESIZE_FAILED, f"{what}: {err}") from None
        check_placement(job, plan, schedulable_nodes(self.caches.nodes.store.select()))
        try:
            check_children(children, checked=applied.children)
        except JobFailure as failure:
            raise JobFailure(PLANNED, RESIZE_FAILED, f"{what}: {failure}") from None
        kept = KeptPlan(applied.generation, applied.job_id, plan, children)
        return Target(job, kept, str(status.bundle_digest), running)

    async def undone(
        self, obj: Object, status: JobStatusView, record: UpgradeRecord, applied: KeptPlan
    ) -> Target | None:
        """The plan of the edit the rollback ``record`` undoes, made again: what the Exports,
        Imports and regions were written from (None when it cannot be made again)."""
        if record.undone is None:
            return None
        job = Job.from_wire({**obj, "spec": record.undone.spec})
        try:
            widths = self.started_widths(obj, record, applied)
            digest = record.undone.bundle_digest
            return await self._plan_recorded(obj, status, record, applied, job, digest, (widths, None))
        except JobFailure as failure:
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
        edit makes (`JobFailure` when the content is gone or the plan cannot be made);
        ``start``: the widths and PE ids, as `_build` takes them."""
        try:
            fetched = await (await self.planner.fetcher()).fetch_pinned(
                str(job.metadata.namespace), job.spec.bundle, digest
            )
        except BundleError as err:
            raise bundle_failure(err) from None
        generations = (record.target_generation, record.generation_id)
        return await asyncio.to_thread(
            self._build, job, str(meta(obj)["uid"]), fetched, generations, status, applied, start
        )

    def started_widths(self, obj: Object, record: UpgradeRecord, applied: KeptPlan) -> dict[str, int]:
        """The widths the job's regions ran at when ``record``'s edit started (a restart may find
        other widths, and PEs the edit made)."""
        return self.planner.running_widths(obj, applied) if record.widths is None else record.widths
