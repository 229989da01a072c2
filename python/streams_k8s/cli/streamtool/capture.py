"""`capturestate JOB`: one JSON document of a job's state, for a bug report or a diff over time.

``{"capturedAt", "namespace", "job", "health", "processingElements", "parallelRegions",
"consistentRegions", "pods", "metrics"}``: the objects as the API server holds them (managed
fields dropped), and ``metrics``, what their status counts (the job's, each PE's launches and
connectivity, each parallel region's width, each consistent region's checkpoints and resets).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from streams_k8s.cli.streamtool.health import job_health, pe_health
from streams_k8s.cli.streamtool.session import cluster_of, cluster_options, emit, run
from streams_k8s.cli.streamtool.state import JobObjects, job_name_of, pe_id, read_job
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.objects import Object, meta

# The consistent-region status counts a capture reports.
_REGION_METRICS = (
    "state",
    "lastCompletedSeqID",
    "currentResetAttempt",
    "avgDrainTime",
    "avgResetTime",
    "lastConsistentStateTime",
    "lastResetTime",
)


def _plain(obj: Object) -> Object:
    metadata = {k: v for k, v in meta(obj).items() if k != "managedFields"}
    return {**obj, "metadata": metadata}


def metrics(objects: JobObjects) -> dict[str, Any]:
    status = objects.job.get("status") or {}
    return {
        "job": {
            "processingElements": status.get("processingElements", 0),
            "processingElementsReady": status.get("processingElementsReady", 0),
            "podsReady": status.get("podsReady", 0),
            "launches": sum((pe.get("status") or {}).get("launchCount", 0) for pe in objects.pes),
        },
        "processingElements": {
            str(pe_id(pe)): {
                "health": pe_health(pe).value,
                "launchCount": (pe.get("status") or {}).get("launchCount", 0),
                "connectivity": (pe.get("status") or {}).get("connectivity"),
            }
            for pe in objects.pes
        },
        "parallelRegions": {
            str((r.get("spec") or {}).get("alias")): {
                "width": (r.get("spec") or {}).get("width"),
                "runningWidth": (r.get("status") or {}).get("width"),
            }
            for r in objects.parallel_regions
        },
        "consistentRegions": {
            str(meta(r).get("name")): {k: (r.get("status") or {}).get(k) for k in _REGION_METRICS}
            for r in objects.consistent_regions
        },
    }


def capture(objects: JobObjects, namespace: str, now: datetime) -> dict[str, Any]:
    return {
        "capturedAt": now.isoformat().replace("+00:00", "Z"),
        "namespace": namespace,
        "job": _plain(objects.job),
        "health": job_health(objects.pes).value,
        "processingElements": [_plain(pe) for pe in objects.pes],
        "parallelRegions": [_plain(r) for r in objects.parallel_regions],
        "consistentRegions": [_plain(r) for r in objects.consistent_regions],
        "pods": [_plain(p) for p in objects.pods],
        "metrics": metrics(objects),
    }


@click.command("capturestate")
@click.argument("job")
@cluster_options
@click.option("-o", "--output", type=click.Choice(["json", "yaml"]), default="json", show_default=True)
def capturestate(
    job: str, kubeconfig: str | None, context: str | None, namespace: str | None, output: str
) -> None:
    """Print one document of a job's state: Job, PEs, regions, pods and their metrics."""
    cluster = cluster_of(kubeconfig, context, namespace)

    async def work(client: KubeClient) -> JobObjects:
        return await read_job(client, cluster.namespace, await job_name_of(client, cluster.namespace, job))

    emit(capture(run(cluster, work), cluster.namespace, datetime.now(UTC)), output)
