"""Width changes of a running job. A ParallelRegion's ``spec.width`` edited (kubectl edit,
``kubectl scale`` or REST through its /scale subresource, the JobAutoscaler) is a change of the
job like an edit, through the one change engine (`jobs.change_steps`, performed by `jobs.rollout`):
its record in ``status.upgrade`` carries the widths it starts from and its target widths
(``targetWidths``) and the job generation it becomes; its target is the applied spec's plan
re-fused at those widths (`EditTargets.resized`: the same widths always give the same PEs); the
rollout creates the PEs it adds, replaces those it changes in batches as the job's upgrade settings
say (``maxUnavailable``; its consistent regions prepared first when the job sets ``upgradeMode``),
deletes those it removes, then commits: the Job's ``generationId``, then the region's
``status.width`` / ``selector`` and ``Resized=True``, and a Resized Event.

One region's change at a time, and an edit first. The region reports its change (`jobs.widths`). A
width that cannot be planned, placed or accepted (`children.limits`) changes nothing: Resized=False
(ResizeFailed) and a Warning Event say why until the region's spec is edited again. One whose
children the API server refuses while it is applied goes back to the widths it started from as a
change of its own (its record saying why: ``refused``), then says so alike.

A change started while the region's ``Resizing`` condition names a job generation takes that one:
a change the release before wrote ahead in that condition alone (it had no record), so a job caught
mid-change by the operator's upgrade finishes it; or one committed before the region's width was
written or seen (the commit writes the Job first), which then finds every PE at its target and
only writes the region, counted once.
"""

from __future__ import annotations

from dataclasses import dataclass

from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.api.job import Job, UpgradeRecord
from streams_k8s.app.plan import Plan
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.controller.jobs.plans import KeptPlan, Planner
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.widths import (
    RESIZE_FAILED,
    applied_widths,
    failed,
    pending_generation,
    record_applied,
    record_failure,
    record_intent,
    widths_of,
)
from streams_k8s.controller.kinds import PARALLEL_REGIONS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.objects import Object, meta


@dataclass(frozen=True, slots=True)
class WidthWanted:
    """A region whose wanted width is neither applied nor refused."""

    region: Object
    alias: str
    width: int
    running: dict[str, int]  # the widths every region runs at
    pending: int | None  # the job generation the release before wrote ahead for it

    @property
    def target(self) -> dict[str, int]:
        return {**self.running, self.alias: self.width}


class Resizer:
    """Finds the width changes of a job's ParallelRegions and has the regions report them."""

    def __init__(
        self, client: KubeClient, caches: JobCaches, recorder: EventRecorder, planner: Planner
    ) -> None:
        self.client, self.caches, self.recorder, self.planner = client, caches, recorder, planner

    def _regions(self, obj: Object, planned: KeptPlan) -> tuple[list[Object], dict[str, int]]:
        """The job's regions, and the width each runs at (its applied width, else the plan's)."""
        regions = self.caches.labelled(self.caches.parallel_regions, obj)
        return regions, applied_widths(planned.base_widths, regions)

    def wanted(self, obj: Object, planned: KeptPlan) -> WidthWanted | None:
        """The first region whose width is to change, if any."""
        regions, running = self._regions(obj, planned)
        wanted, recorded = widths_of(regions)
        for region in regions:
            alias = str(region["spec"]["alias"])
            if (
                alias not in running
                or wanted[alias] in (running[alias], recorded.get(alias))
                or failed(region)
            ):
                continue
            return WidthWanted(region, alias, wanted[alias], running, pending_generation(region))
        return None

    async def running(
        self, obj: Object, job: Job, planned: KeptPlan, status: JobStatusView
    ) -> tuple[Plan, list[Desired]]:
        """The plan and children at the widths the regions run at; a region seen first (or edited
        back to the width it runs at) says that width."""
        regions, running = self._regions(obj, planned)
        wanted, recorded = widths_of(regions)
        for region in regions:
            alias = str(region["spec"]["alias"])
            if (
                alias in running
                and wanted[alias] == running[alias] != recorded.get(alias)
                and not failed(region)
            ):
                await record_applied(self.client, region, running[alias])
        uid = str(meta(obj)["uid"])
        return self.planner.children_at(job, uid, planned, running, status.generation_id or 0)

    async def started(self, wanted: WidthWanted, generation: int) -> None:
        """The region reports its change under way (the release before's write-ahead already may)."""
        if wanted.pending != generation:
            await record_intent(self.client, wanted.region, generation, wanted.width)

    async def refuse(self, obj: Object, region: Object, message: str) -> None:
        """The region's width cannot be applied: it and the Job say why."""
        await record_failure(self.client, region, message)
        await self.recorder.record(region, "Warning", RESIZE_FAILED, message)
        await self.recorder.record(obj, "Warning", RESIZE_FAILED, message)

    async def committed(self, obj: Object, record: UpgradeRecord, summary: str) -> None:
        """The width change ``record`` runs: its regions report their widths, or, for one that
        went back, why it was refused; ``summary``: what it did to the PEs (its diff's)."""
        start, widths = record.widths or {}, record.target_widths or {}
        changed = {a for a, w in widths.items() if start.get(a) != w}
        regions = [
            r
            for r in self.caches.labelled(self.caches.parallel_regions, obj)
            if r["spec"]["alias"] in changed
        ]
        if record.refused is not None:
            for region in regions:
                await self.refuse(obj, region, record.refused)
            return
        for region in regions:  # their spec, edited again meanwhile, is the next change
            await record_applied(self.client, region, widths[str(region["spec"]["alias"])])
        for alias in sorted(changed):
            await self.recorder.record(
                obj,
                "Normal",
                "Resized",
                f"{alias} width {start.get(alias)} → {widths[alias]} "
                f"(generation {record.generation_id}): {summary}",
            )

    async def apply_widths(self, obj: Object, plan: Plan) -> None:
        """The job's ParallelRegions say the widths a change's ``plan`` runs at: a resize an edit
        kept, or the width an edit itself gave a region (its spec follows: not resized back)."""
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
            await record_applied(self.client, region, width)
