"""The plan of each running job, as the console draws it: made once per job version, then cached.

The console does not know how a bundle is fetched (that is the operator's business, and the
layers keep the console away from the controllers): whoever starts it passes a `PlanJob`, which
turns a Job object and its applied parallel-region widths into the job's plan (the CLI's comes
from the operator's own bundle fetcher and planning). A plan is kept per (job uid, generation,
bundle digest, widths): a width change, an edit or a new bundle makes a new one, and the graph's
version (`graph_version`) changes with it, which is what tells open pages to redraw.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping

from streams_k8s.app.plan import Plan
from streams_k8s.k8s.objects import Object, meta

PlanJob = Callable[[Object, Mapping[str, int]], Awaitable[Plan]]
_KEPT = 64  # plans kept (a job's live version needs one; older ones are dropped first)


class PlanUnavailable(Exception):
    """The job's plan cannot be made now (its bundle is unreadable, its spec invalid, ...)."""


def plan_key(job: Object, widths: Mapping[str, int]) -> str:
    """What a job's plan depends on, as a short stable string: its graph's version."""
    m, status = meta(job), job.get("status") or {}
    parts = [
        str(m.get("uid") or ""),
        str(m.get("generation") or ""),
        str(status.get("bundleDigest") or ""),
        str(status.get("id") or ""),
        ",".join(f"{alias}={width}" for alias, width in sorted(widths.items())),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def applied_widths(parallel_regions: list[Object]) -> dict[str, int]:
    """The widths the job runs at now (a region's ``status.width``; its spec while unapplied)."""
    widths = {}
    for region in parallel_regions:
        spec, status = region.get("spec") or {}, region.get("status") or {}
        width = status.get("width") if status.get("width") is not None else spec.get("width")
        if spec.get("alias") and isinstance(width, int):
            widths[str(spec["alias"])] = width
    return widths


class JobPlans:
    """Plans by `plan_key`, made at most once each (concurrent asks wait for the same one)."""

    def __init__(self, plan_job: PlanJob) -> None:
        self._plan_job = plan_job
        self._plans: OrderedDict[str, asyncio.Future[Plan]] = OrderedDict()

    async def plan(self, job: Object, widths: Mapping[str, int]) -> Plan:
        key = plan_key(job, widths)
        future = self._plans.get(key)
        if future is None:
            future = asyncio.ensure_future(self._make(job, widths))
            self._plans[key] = future
            while len(self._plans) > _KEPT:
                self._plans.popitem(last=False)
        self._plans.move_to_end(key)
        try:
            return await asyncio.shield(future)
        except PlanUnavailable:
            self._plans.pop(key, None)  # ask again next time: the cause may be gone
            raise

    async def _make(self, job: Object, widths: Mapping[str, int]) -> Plan:
        try:
            return await self._plan_job(job, widths)
        except Exception as err:
            name = f"{meta(job).get('namespace')}/{meta(job).get('name')}"
            raise PlanUnavailable(f"the plan of job {name} cannot be made: {err}") from err
