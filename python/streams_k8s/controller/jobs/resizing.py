"""Parallel-region width changes of a running job, driven from its ParallelRegions (steps in
`jobs.widths`): the plan and children at the widths applied, and one change at a time.
"""

from __future__ import annotations

from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.api.job import Job
from streams_k8s.app.plan import PLANNING_ERRORS, Plan
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.children.limits import check_children
from streams_k8s.controller.jobs import widths as widths_module
from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.controller.jobs.health import PLANNED
from streams_k8s.controller.jobs.plans import KeptPlan, Planner, schedulable_nodes
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.status_writes import status_written, write_status
from streams_k8s.controller.jobs.widths import widths_of
from streams_k8s.controller.kinds import PARALLEL_REGIONS
from streams_k8s.controller.planning import JobFailure, check_placement
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.objects import Object, meta


class Resizer:
    """Follows the widths of a job's ParallelRegions."""

    def __init__(
        self, client: KubeClient, caches: JobCaches, recorder: EventRecorder, planner: Planner
    ) -> None:
        self.client, self.caches, self.recorder, self.planner = client, caches, recorder, planner

    async def follow(
        self, obj: Object, job: Job, planned: KeptPlan, status: JobStatusView
    ) -> tuple[Object, JobStatusView, Plan, list[Desired]]:
        """Apply one pending width change, if any; the plan and children of the widths now applied."""
        m = meta(obj)
        namespace, name, uid = str(m["namespace"]), str(m["name"]), str(m["uid"])
        regions = self.caches.parallel_regions.store.select_by_labels({JOB_LABEL: name}, namespace)
        wanted, recorded = widths_of(regions)
        applied = widths_module.applied_widths(planned.base_widths, regions)
        generation = status.generation_id or 0
        for region in regions:
            alias = str(region["spec"]["alias"])
            if alias not in applied or wanted[alias] == recorded.get(alias) or widths_module.failed(region):
                continue
            if wanted[alias] == applied[alias]:  # first sight, or back where it runs: record it
                await widths_module.record_applied(self.client, region, applied[alias])
                continue
            try:
                obj, status, generation = await self._resize(
                    obj, job, planned, status, region, applied, wanted[alias]
                )
            except JobFailure as failure:
                await widths_module.record_failure(self.client, region, failure.message)
                await self.recorder.record(region, "Warning", "ResizeFailed", failure.message)
                await self.recorder.record(obj, "Warning", "ResizeFailed", failure.message)
                continue
            applied[alias] = wanted[alias]
            break
        plan, children = self.planner.children_at(job, uid, planned, applied, generation)
        return obj, status, plan, children

    async def _resize(
        self,
        obj: Object,
        job: Job,
        planned: KeptPlan,
        status: JobStatusView,
        region: Object,
        applied: dict[str, int],
        width: int,
    ) -> tuple[Object, JobStatusView, int]:
        """One region's change: plan it (nothing is written if it cannot be), then `jobs.widths` steps
        1 to 3."""
        alias = str(region["spec"]["alias"])
        pending = widths_module.pending_generation(region)
        generation = pending if pending is not None else (status.generation_id or 0) + 1
        uid = str(meta(obj)["uid"])
        try:
            running, running_children = self.planner.children_at(job, uid, planned, applied, generation)
            target, children = self.planner.children_at(
                job, uid, planned, {**applied, alias: width}, generation
            )
        except (*PLANNING_ERRORS, ValueError) as err:
            raise JobFailure(PLANNED, "ResizeFailed", f"{alias} to width {width}: {err}") from None
        check_placement(job, target, schedulable_nodes(self.caches.nodes.store.select()))
        try:
            check_children(children, checked=planned.children)
        except JobFailure as failure:
            raise JobFailure(PLANNED, "ResizeFailed", f"{alias} to width {width}: {failure}") from None
        if pending is None:
            region = await widths_module.record_intent(self.client, region, generation, width)
        if status.generation_id != generation:
            obj = await write_status(self.client, obj, status.with_(generation_id=generation))
            status = status_written(obj, status)
        change = widths_module.WidthChange(
            obj, region, running, target, children, generation, running_children
        )
        diff = change.diff
        try:
            await widths_module.apply(self.client, change)
        except widths_module.ChildRefused as err:
            # Back to the plan that runs (the same steps, the other way), then refuse the width.
            back = widths_module.WidthChange(
                obj, region, target, running, running_children, generation, children
            )
            await widths_module.apply(self.client, back)
            raise JobFailure(PLANNED, "ResizeFailed", f"{alias} to width {width}: {err.failure}") from None
        status = status.with_(processing_elements=len(target.pes))
        obj = await write_status(self.client, obj, status)
        await widths_module.record_applied(self.client, region, width)
        await self.recorder.record(
            obj,
            "Normal",
            "Resized",
            f"{alias} width {applied[alias]} → {width} (generation {generation}): {diff.summary()}",
        )
        return obj, status_written(obj, status), generation

    async def apply_widths(self, obj: Object, plan: Plan) -> None:
        """The job's ParallelRegions say the widths an edit's ``plan`` runs at: a resize the edit
        kept, or the width the edit itself gave a region (its spec follows: not resized back)."""
        labels, namespace = {JOB_LABEL: str(meta(obj)["name"])}, str(meta(obj)["namespace"])
        widths = {r.alias: r.width for r in plan.parallel_regions}
        for region in self.caches.parallel_regions.store.select_by_labels(labels, namespace):
            width = widths.get(str(region["spec"]["alias"]))
            if width is None or (region.get("status") or {}).get("width") == width:
                continue
            if region["spec"]["width"] != width:
                name = str(meta(region)["name"])
                region = await self.client.patch(
                    PARALLEL_REGIONS, name, {"spec": {"width": width}}, namespace
                )
            await widths_module.record_applied(self.client, region, width)
