"""Each view's data at one moment, read from the informer caches: what pages, JSON and pushes carry.

A snapshot is a JSON-able dict; two snapshots of an unchanged cluster are equal, so the push
channel sends a view only when its snapshot differs from the last one sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streams_k8s.api.contract import JOB_LABEL, PE_LABEL
from streams_k8s.console.live import LiveCluster
from streams_k8s.console.live_flow import flow_row
from streams_k8s.console.live_plans import applied_widths, plan_key
from streams_k8s.console.live_state import (
    event_row,
    health_map,
    job_row,
    parallel_row,
    pe_rows,
    region_row,
)
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.objects import Object, meta

Snapshot = dict[str, Any]
RECENT_EVENTS = 20


def jobs_snapshot(live: LiveCluster, namespaces: Iterable[str]) -> Snapshot:
    rows = []
    for job in live.job_list(namespaces):
        m = meta(job)
        regions = live.of_job(live.parallel_regions, m["namespace"], m["name"])
        rows.append(job_row(job, regions))
    return {"view": "jobs", "jobs": rows}


def graph_version(live: LiveCluster, job: Object) -> str:
    """Changes whenever the job's plan (so its graph) does: `live_plans.plan_key`."""
    m = meta(job)
    return plan_key(job, applied_widths(live.of_job(live.parallel_regions, m["namespace"], m["name"])))


def job_snapshot(live: LiveCluster, namespace: str, name: str) -> Snapshot | None:
    """The job page's data; None when the cache holds no such job."""
    job = live.job(namespace, name)
    if job is None:
        return None
    parallel = live.of_job(live.parallel_regions, namespace, name)
    consistent = live.of_job(live.consistent_regions, namespace, name)
    pes = pe_rows(live.of_job(live.pes, namespace, name), live.of_job(live.pods, namespace, name), consistent)
    subjects = {("Job", name)} | {("ProcessingElement", str(r["name"])) for r in pes}
    subjects |= {(PODS.kind, str(r["pod"])) for r in pes if r["pod"]}
    events = live.events_about(namespace, subjects)[:RECENT_EVENTS]
    return {
        "view": "job",
        "job": job_row(job, parallel),
        "graph": graph_version(live, job),
        "pes": pes,
        "health": health_map(pes),
        "flow": flow_row(live.flow.flow(namespace, name)) if live.flow is not None else None,
        "parallelRegions": [parallel_row(r) for r in parallel],
        "consistentRegions": [region_row(r) for r in consistent],
        "events": [event_row(e) for e in events],
    }


def pe_snapshot(live: LiveCluster, namespace: str, name: str, pe_id: str) -> Snapshot | None:
    """The PE page's data; None when the job or the PE is not in the cache."""
    job = job_snapshot(live, namespace, name)
    row = next((r for r in (job or {}).get("pes") or () if str(r["id"]) == pe_id), None)
    if job is None or row is None:
        return None
    subjects = {("ProcessingElement", str(row["name"]))}
    subjects |= {(PODS.kind, str(meta(p).get("name"))) for p in _pods_of_pe(live, namespace, name, pe_id)}
    events = live.events_about(namespace, subjects)[:RECENT_EVENTS]
    return {"view": "pe", "job": job["job"], "pe": row, "events": [event_row(e) for e in events]}


def _pods_of_pe(live: LiveCluster, namespace: str, name: str, pe_id: str) -> list[Object]:
    return live.pods.store.select_by_labels({JOB_LABEL: name, PE_LABEL: pe_id}, namespace)


def events_snapshot(live: LiveCluster, namespace: str) -> Snapshot:
    return {
        "view": "events",
        "namespace": namespace,
        "events": [event_row(e) for e in live.namespace_events(namespace)],
    }
