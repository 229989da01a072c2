"""Parallel-region width changes of a running job, driven from its ParallelRegions (steps in
`jobs.widths`): the plan and children at the widths applied, and one change at a time.
"""

from __future__ import annotations

from streams_k8s.api.contract import JOB_LABEL, name_table_stamp
from streams_k8s.api.job import Job
from streams_k8s.app.plan import PLANNING_ERRORS, Plan, plan_at_widths
from streams_k8s.controller.children.desired import Desired, Rendered, desired_objects
from streams_k8s.controller.children.limits import check_children
from streams_k8s.controller.jobs import widths as widths_module
from streams_k8s.controller.jobs.base import PLANNED, KeptPlan, status_written, utc_now
from streams_k8s.controller.jobs.planned import PlannedJobs, schedulable_nodes
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.widths import widths_of
from streams_k8s.controller.kinds import PARALLEL_REGIONS
from streams_k8s.controller.planning import SubmissionFailure, check_placement
from streams_k8s.k8s.objects import Object, meta


class ResizingJobs(PlannedJobs):
    """Follows the widths of a job's ParallelRegions."""

    def _children_at(
        self, job: Job, uid: str, planned: KeptPlan, widths: dict[str, int], generation: int
    ) -> tuple[Plan, list[Desired]]:
        if widths == planned.base_widths:
            return planned.plan, planned.children
        key = (*sorted(widths.items()), ("", generation))
        if key not in planned.resized:
            plan = plan_at_widths(planned.plan, widths)
            stamp = name_table_stamp(utc_now())
            children = desired_objects(
                job,
                uid,
                plan,
                generation=generation,
                stamp=stamp,
                transport=planned.transport,
                coordinator_mode=self.coordinator_mode,
                earlier=Rendered(job.spec, planned.plan, planned.children),
            )
            planned.resized = {key: (plan, children)}  # only the current widths are worth keeping
        return planned.resized[key]

    def _running_widths(self, obj: Object, planned: KeptPlan) -> dict[str, int]:
        """The widths the job's parallel regions run at (resized or as planned)."""
        m = meta(obj)
        regions = self.parallel_regions.store.select_by_labels(
            {JOB_LABEL: str(m["name"])}, str(m["namespace"])
        )
        return widths_module.applied_widths(planned.base_widths, regions)

    async def _follow_widths(
        self, obj: Object, job: Job, planned: KeptPlan, status: JobStatusView
    ) -> tuple[Object, JobStatusView, Plan, list[Desired]]:
        """Apply one pending width change, if any; the plan and children of the widths now applied."""
        m = meta(obj)
        namespace, name, uid = str(m["namespace"]), str(m["name"]), str(m["uid"])
        regions = self.parallel_regions.store.select_by_labels({JOB_LABEL: name}, namespace)
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
            except SubmissionFailure as failure:
                await widths_module.record_failure(self.client, region, failure.message)
                await self.recorder.record(region, "Warning", "ResizeFailed", failure.message)
                await self.recorder.record(obj, "Warning", "ResizeFailed", failure.message)
                continue
            applied[alias] = wanted[alias]
            break
        plan, children = self._children_at(job, uid, planned, applied, generation)
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
            running, running_children = self._children_at(job, uid, planned, applied, generation)
            target, children = self._children_at(job, uid, planned, {**applied, alias: width}, generation)
        except (*PLANNING_ERRORS, ValueError) as err:
            raise SubmissionFailure(PLANNED, "ResizeFailed", f"{alias} to width {width}: {err}") from None
        check_placement(job, target, schedulable_nodes(self.nodes.store.select()))
        try:
            check_children(children, checked=planned.children)
        except SubmissionFailure as failure:
            raise SubmissionFailure(PLANNED, "ResizeFailed", f"{alias} to width {width}: {failure}") from None
        if pending is None:
            region = await widths_module.record_intent(self.client, region, generation, width)
        if status.generation_id != generation:
            obj = await self._write_status(obj, status.with_(generation_id=generation))
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
            raise SubmissionFailure(
                PLANNED, "ResizeFailed", f"{alias} to width {width}: {err.failure}"
            ) from None
        status = status.with_(processing_elements=len(target.pes))
        obj = await self._write_status(obj, status)
        await widths_module.record_applied(self.client, region, width)
        await self.recorder.record(
            obj,
            "Normal",
            "Resized",
            f"{alias} width {applied[alias]} → {width} (generation {generation}): {len(diff.changed)} PEs "
            f"changed, {len(diff.added)} added, {len(diff.removed)} removed, {len(diff.unchanged)} unchanged",
        )
        return obj, status_written(obj, status), generation

    async def _apply_widths(self, obj: Object, plan: Plan) -> None:
        """The job's ParallelRegions say the widths an edit's ``plan`` runs at: a resize the edit
        kept, or the width the edit itself gave a region (its spec follows: not resized back)."""
        labels, namespace = {JOB_LABEL: str(meta(obj)["name"])}, str(meta(obj)["namespace"])
        widths = {r.alias: r.width for r in plan.parallel_regions}
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
