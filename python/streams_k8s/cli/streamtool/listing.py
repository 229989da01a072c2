"""`lsjobs` and `lspes`: one line per job or PE, health first, as streamtool lists them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.cli.streamtool.health import job_health, pe_health
from streams_k8s.cli.streamtool.session import cluster_of, cluster_options, emit, run, table
from streams_k8s.cli.streamtool.state import pe_id, read_job, read_jobs
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.objects import Object, meta

_OUTPUT = click.Choice(["wide", "json", "yaml"])


def age(obj: Object, now: datetime) -> str:
    """kubectl's AGE column: 45s, 12m, 5h, 3d."""
    created = meta(obj).get("creationTimestamp")
    if not created:
        return "<unknown>"
    seconds = int((now - datetime.fromisoformat(str(created).replace("Z", "+00:00"))).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def job_row(job: Object, pes: list[Object]) -> dict[str, Any]:
    status = job.get("status") or {}
    return {
        "name": meta(job).get("name"),
        "id": status.get("id"),
        "phase": status.get("phase", "Submitting"),
        "health": job_health(pes).value,
        "pes": len(pes),
        "pesHealthy": sum(pe_health(pe).value == "healthy" for pe in pes),
        "application": status.get("applicationName"),
        "generation": status.get("generationId"),
        "bundle": ((job.get("spec") or {}).get("bundle") or {}).get("name"),
        "message": status.get("message"),
        "created": meta(job).get("creationTimestamp"),
    }


@click.command("lsjobs")
@cluster_options
@click.option("-o", "--output", type=_OUTPUT, help="wide: more columns; json, yaml: every field.")
def lsjobs(kubeconfig: str | None, context: str | None, namespace: str | None, output: str | None) -> None:
    """List the jobs of a namespace, one line each, with their health from their PEs."""
    cluster = cluster_of(kubeconfig, context, namespace)

    async def work(client: KubeClient) -> list[tuple[Object, list[Object]]]:
        return await read_jobs(client, cluster.namespace)

    jobs = run(cluster, work)
    if output in ("json", "yaml"):
        emit({"jobs": [job_row(job, pes) for job, pes in jobs]}, output)
        return
    if not jobs:
        click.echo(f"No jobs found in {cluster.namespace} namespace.", err=True)
        return
    now = datetime.now(UTC)
    header = ["NAME", "ID", "PHASE", "HEALTH", "PES", "AGE"]
    rows = [header + (["APPLICATION", "GENERATION", "BUNDLE", "MESSAGE"] if output == "wide" else [])]
    for job, pes in jobs:
        r = job_row(job, pes)
        row = [r["name"], _text(r["id"]), r["phase"], r["health"], f"{r['pesHealthy']}/{r['pes']}"]
        row.append(age(job, now))
        if output == "wide":
            row += [_text(r["application"]), _text(r["generation"]), _text(r["bundle"]), _text(r["message"])]
        rows.append([str(c) for c in row])
    table(rows)


def pe_row(pe: Object) -> dict[str, Any]:
    status, spec = pe.get("status") or {}, pe.get("spec") or {}
    labels = meta(pe).get("labels") or {}
    return {
        "job": labels.get(JOB_LABEL),
        "id": pe_id(pe),
        "health": pe_health(pe).value,
        "phase": status.get("phase"),
        "connectivity": status.get("connectivity"),
        "launchCount": status.get("launchCount", 0),
        "pod": status.get("podName"),
        "node": status.get("nodeName"),
        "operators": spec.get("operators") or [],
    }


@click.command("lspes")
@cluster_options
@click.option("-j", "--job", "job_name", help="Only this job's PEs.")
@click.option("-o", "--output", type=_OUTPUT, help="wide: operators too; json, yaml: every field.")
def lspes(
    kubeconfig: str | None,
    context: str | None,
    namespace: str | None,
    job_name: str | None,
    output: str | None,
) -> None:
    """List the PEs of a namespace's jobs (or of one job), one line each, with their health."""
    cluster = cluster_of(kubeconfig, context, namespace)

    async def work(client: KubeClient) -> list[Object]:
        if job_name is not None:
            return (await read_job(client, cluster.namespace, job_name)).pes
        return [pe for _, pes in await read_jobs(client, cluster.namespace) for pe in pes]

    rows_of = [pe_row(pe) for pe in run(cluster, work)]
    if output in ("json", "yaml"):
        emit({"pes": rows_of}, output)
        return
    if not rows_of:
        click.echo(f"No PEs found in {cluster.namespace} namespace.", err=True)
        return
    header = ["JOB", "ID", "HEALTH", "PHASE", "CONNECTIVITY", "LAUNCHES", "POD", "NODE"]
    rows = [header + (["OPERATORS"] if output == "wide" else [])]
    for r in rows_of:
        row = [
            r["job"],
            r["id"],
            r["health"],
            r["phase"],
            r["connectivity"],
            r["launchCount"],
            r["pod"],
            r["node"],
        ]
        if output == "wide":
            row.append(",".join(r["operators"]))
        rows.append([_text(c) for c in row])
    table(rows)


def _text(value: Any) -> str:
    return "<none>" if value is None or value == "" else str(value)
