"""A submitted job kept as planned: deleted children recreated (PEs when restartable), PE Services
healed, width changes followed, and the PE/pod counts, PodsReady and the phase kept current.
"""

from __future__ import annotations

import logging
import time

from streams_k8s.api.contract import JOB_LABEL, pe_service_name
from streams_k8s.api.job import Job, JobPhase
from streams_k8s.app.plan import Plan
from streams_k8s.controller.bundles.fetch import BUNDLE_CHANGED
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.children.limits import REFUSED, refused
from streams_k8s.controller.children.services import service_update
from streams_k8s.controller.children.transport_secret import retire_config_map_transport
from streams_k8s.controller.jobs.base import BUNDLE_FETCHED, applied_job, status_written, utc_now
from streams_k8s.controller.jobs.health import PODS_READY, READY, with_health
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.upgrading import ROLL_POLL, UpgradingJobs
from streams_k8s.controller.kinds import PES
from streams_k8s.controller.pes.degraded import DEGRADED, degraded_condition
from streams_k8s.controller.planning import SubmissionFailure
from streams_k8s.k8s.conditions import parse_time, set_condition
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import SERVICES
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key

log = logging.getLogger(__name__)

# Phases the pod counts decide (the others belong to an edit, a suspension or a rollback).
_COUNTED = frozenset({JobPhase.SUBMITTED, JobPhase.RUNNING})


# Ready counts change with every PE coming up: while a job starts they are written at most this
# often (the move to Running is written at once), so a 1,000-PE job costs a few status writes, not
# one per PE, and the informer has caught up before the next conditional write.
COUNTS_INTERVAL = 1.0


class RunningJobs(UpgradingJobs):
    """Maintains submitted jobs."""

    async def _maintain(self, obj: Object, job: Job | None, status: JobStatusView) -> Requeue | None:
        """Apply an edit (`jobs.upgrading`); recreate deleted children of the applied spec; keep
        PE/pod counts, PodsReady and the phase current. ``job``: the spec as edited, None when
        it is not valid (the refusal is recorded)."""
        m = meta(obj)
        uid = str(m["uid"])
        generation = status.applied_generation or int(m.get("generation") or 1)
        running = applied_job(obj, status)
        changed_before = _reported_bundle_change(status)
        try:
            planned, obj, status = await self._plan(obj, running, status, generation, uid)
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
            ended = status.upgrade is not None  # unless it goes on, it ends in this pass
            if not ended and status.applied_generation != int(m.get("generation") or 1):
                # an edit is about to start: what ran until now may be due to become the last
                # stable spec (its next pass would have recorded it; the edit's rollback needs it)
                obj, status, _ = await self._record_stable(obj, status, running)
            obj, status, upgrading = await self._follow_edit(obj, job, status, planned, running)
            # the next pass keeps what now runs: a rollback commits the applied generation again,
            # whose PEs ``planned`` (made again after a restart) may number otherwise
            if upgrading or ended or status.applied_generation != generation:
                wait = await self._update_counts(obj, status)
                return wait or Requeue(ROLL_POLL)
            if changed_before:  # the submitted content is back: the warning no longer holds
                status = status.with_(message=submitted_message(len(planned.plan.pes)))
            obj, status, plan, children = await self._follow_widths(obj, running, planned, status)
            refusal = await self._keep_children(obj, plan, children)
            table = self.configmaps.store.get(object_key(obj))  # an earlier release's transport pair
            await retire_config_map_transport(self.client, table)
            if refusal is not None:  # the job runs on without it; say so once
                if status.message != refusal.message:
                    await self.recorder.record(obj, "Warning", refusal.reason, refusal.message)
                return await self._update_counts(obj, status.with_(message=refusal.message))
            obj, status, wait = await self._record_stable(obj, status, running)
            return await self._update_counts(obj, status) or wait
        return await self._update_counts(obj, status)

    async def _keep_children(
        self, obj: Object, plan: Plan, children: list[Desired]
    ) -> SubmissionFailure | None:
        """Recreate deleted children (PEs when restartable), adopt orphans, heal PE Services: of the
        children with an event since the last check (`children.changes`); a refusal is returned."""
        m = meta(obj)
        try:
            with self._child_changes.to_check(
                ObjectKey(str(m["namespace"]), str(m["name"])), children
            ) as pending:
                if not pending:
                    return None
                restartable = {pe_service_name(str(m["name"]), pe.id): pe.restartable for pe in plan.pes}
                recreated = await self._create_missing(
                    pending, lambda c: c.resource != PES or restartable.get(c.name, False)
                )
                if recreated:
                    await self.recorder.record(
                        obj, "Normal", "ChildrenRecreated", f"recreated {recreated} deleted objects"
                    )
                await self._correct_services(pending)
        except SubmissionFailure as failure:
            return failure
        return None

    async def _record_stable(
        self, obj: Object, status: JobStatusView, running: Job
    ) -> tuple[Object, JobStatusView, Requeue | None]:
        """The applied spec becomes the last stable one (what a rollback applies) once it has run
        with every PE pod ready for ``stableAfterSeconds``."""
        ready = status.condition(READY) or {}
        if (
            status.phase is not JobPhase.RUNNING
            or ready.get("status") != "True"
            or status.last_stable_generation == status.applied_generation
            or status.applied_spec is None
        ):
            return obj, status, None
        since = parse_time(ready.get("lastTransitionTime")) or utc_now()
        wait = running.spec.stable_after_seconds - (utc_now() - since).total_seconds()
        if wait > 0:
            return obj, status, Requeue(wait)
        status = status.with_(
            last_stable_spec=status.applied_spec,
            last_stable_generation=int(status.applied_generation or 1),
            last_stable_bundle_digest=str(status.bundle_digest),
        )
        written = await self._write_status(obj, status)
        return written, status_written(written, status), None

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

    async def _update_counts(self, obj: Object, status: JobStatusView) -> Requeue | None:
        m = meta(obj)
        namespace, name = str(m.get("namespace")), str(m.get("name"))
        key = ObjectKey(namespace, name)
        expected = status.processing_elements or len(
            self.pes.store.select_by_labels({JOB_LABEL: name}, namespace)
        )
        ready_pes, ready_pods = self._counts.pes_running(key), self._counts.pods_ready(key)
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
        set_condition(
            conditions, DEGRADED, *degraded_condition(self._counts.pes_stopped(key)), m.get("generation")
        )
        phase = JobPhase.RUNNING if all_ready else JobPhase.SUBMITTED
        if status.phase is not None and status.phase not in _COUNTED:
            phase = status.phase
        wanted = status.with_(
            conditions=conditions, phase=phase, processing_elements_ready=ready_pes, pods_ready=ready_pods
        )
        wanted = with_health(wanted, int(m.get("generation") or 1))
        if wanted == JobStatusView.of(obj):
            return None
        uid = str(m.get("uid"))
        wait = self._counts_written.get(uid, -COUNTS_INTERVAL) + COUNTS_INTERVAL - time.monotonic()
        if phase == status.phase and wait > 0:
            return Requeue(wait)
        await self._write_status(obj, wanted)  # the Running Event: `controller.milestones`
        if self._cached(obj):
            self._counts_written[uid] = time.monotonic()
        return None


def submitted_message(pes: int) -> str:
    return f"{pes} PEs submitted"


def _reported_bundle_change(status: JobStatusView) -> bool:
    fetched = status.condition(BUNDLE_FETCHED)
    return fetched is not None and fetched.get("reason") == BUNDLE_CHANGED
