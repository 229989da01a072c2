"""Writing a Job's status, the job controller's write-ahead log: a merge patch conditional on the
resourceVersion it was computed from, so a stale cache never overwrites newer facts.
"""

from __future__ import annotations

from datetime import UTC, datetime

from streams_k8s.api.job import Job
from streams_k8s.controller.jobs.health import with_health
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.objects import Object, merge_patch_to, meta


def utc_now() -> datetime:
    return datetime.now(UTC)


async def write_status(client: KubeClient, obj: Object, status: JobStatusView) -> Object:
    """Merge-patch the status, conditional on the resourceVersion it was computed from (what the
    new status lacks is removed: an applied spec without a field the last one had); the health
    conditions (`jobs.health`) derived from it."""
    m = meta(obj)
    status = with_health(status, int(m.get("generation") or 1))
    wanted = merge_patch_to(obj.get("status") or {}, status.raw)
    patch = {"metadata": {"resourceVersion": m.get("resourceVersion")}, "status": wanted}
    return await client.patch(JOBS, str(m["name"]), patch, str(m["namespace"]), subresource="status")


def status_written(obj: Object, before: JobStatusView) -> JobStatusView:
    """The status a write answered with (the API server's), else the one written."""
    return JobStatusView(obj.get("status") or before.raw)


def applied_job(obj: Object, status: JobStatusView) -> Job:
    """The Job as its children follow it: its metadata with the applied spec."""
    return Job.from_wire({**obj, "spec": status.applied_spec or obj.get("spec")})
