"""A submitted job kept as planned, one pass at a time: a change (an edit, a width change) started
or stepped (`jobs.rollout`), else deleted children recreated at the widths that run
(`jobs.keeping`, `jobs.resizing`), the last stable spec recorded, and the PE/pod counts, PodsReady
and the phase kept current (`jobs.count_writes`).
"""

from __future__ import annotations

import logging

from streams_k8s.api.job import Job, JobPhase
from streams_k8s.controller.bundles.fetch import BUNDLE_CHANGED
from streams_k8s.controller.children.transport_secret import retire_config_map_transport
from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.controller.jobs.count_writes import CountWriter
from streams_k8s.controller.jobs.health import BUNDLE_FETCHED, READY
from streams_k8s.controller.jobs.keeping import ChildKeeper
from streams_k8s.controller.jobs.plans import Planner
from streams_k8s.controller.jobs.resizing import Resizer
from streams_k8s.controller.jobs.rollout import ROLL_POLL, Rollout
from streams_k8s.controller.jobs.status import JobStatusView, submitted_message
from streams_k8s.controller.jobs.status_writes import applied_job, status_written, utc_now, write_status
from streams_k8s.controller.planning import JobFailure
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.conditions import parse_time, set_condition
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.objects import Object, meta, object_key

log = logging.getLogger(__name__)


class RunningJobs:
    """Maintains submitted jobs (see the module docs)."""

    def __init__(
        self,
        client: KubeClient,
        caches: JobCaches,
        recorder: EventRecorder,
        parts: tuple[Planner, ChildKeeper, Resizer, CountWriter],
        rollout: Rollout,
    ) -> None:
        self.client, self.caches, self.recorder = client, caches, recorder
        self.planner, self.keeper, self.resizer, self.counts = parts
        self.rollout = rollout

    async def maintain(self, obj: Object, job: Job | None, status: JobStatusView) -> Requeue | None:
        """One pass over a submitted job. ``job``: the spec as edited, None when it is not valid
        (the refusal is recorded)."""
        m = meta(obj)
        generation = status.applied_generation or int(m.get("generation") or 1)
        running = applied_job(obj, status)
        changed_before = _reported_bundle_change(status)
        try:
            planned, obj, status = await self.planner.plan(obj, running, status, generation, str(m["uid"]))
        except JobFailure as failure:
            if failure.reason == BUNDLE_CHANGED:
                return await self._bundle_changed(obj, status, failure, generation)
            log.warning(
                "job %s/%s cannot be re-planned to restore its children: %s",
                m.get("namespace"),
                m.get("name"),
                failure,
            )
            return await self.counts.update(obj, status)
        ended = status.upgrade is not None  # unless it goes on, it ends in this pass
        if not ended and status.applied_generation != int(m.get("generation") or 1):
            # an edit is about to start: what ran until now may be due to become the last
            # stable spec (its next pass would have recorded it; the edit's rollback needs it)
            obj, status, _ = await self._record_stable(obj, status, running)
        obj, status, upgrading = await self.rollout.follow(obj, job, status, planned, running)
        # the next pass keeps what now runs: a rollback commits the applied generation again,
        # whose PEs ``planned`` (made again after a restart) may number otherwise
        if upgrading or ended or status.applied_generation != generation:
            wait = await self.counts.update(obj, status)
            return wait or Requeue(ROLL_POLL)
        if changed_before:  # the submitted content is back: the warning no longer holds
            status = status.with_(message=submitted_message(len(planned.plan.pes)))
        plan, children = await self.resizer.running(obj, running, planned, status)
        refusal = await self.keeper.keep(obj, plan, children)
        table = self.caches.configmaps.store.get(object_key(obj))  # an earlier release's transport pair
        await retire_config_map_transport(self.client, table)
        if refusal is not None:  # the job runs on without it; say so once
            if status.message != refusal.message:
                await self.recorder.record(obj, "Warning", refusal.reason, refusal.message)
            return await self.counts.update(obj, status.with_(message=refusal.message))
        obj, status, wait = await self._record_stable(obj, status, running)
        return await self.counts.update(obj, status) or wait

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
        written = await write_status(self.client, obj, status)
        return written, status_written(written, status), None

    async def _bundle_changed(
        self, obj: Object, status: JobStatusView, failure: JobFailure, generation: int
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
        return await self.counts.update(obj, status.with_(conditions=conditions, message=message))


def _reported_bundle_change(status: JobStatusView) -> bool:
    fetched = status.condition(BUNDLE_FETCHED)
    return fetched is not None and fetched.get("reason") == BUNDLE_CHANGED
