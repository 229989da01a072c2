"""Many jobs on one operator replica (issue 17): 100 jobs of 100 PEs submitted together, and 1,000
idle one-PE jobs held, each case with width changes of one more job while the others run.

The instance operator runs as its own process, the sandbox in this one (as in `bench_submission.py`).
Figures: time from the first create until every job is Running; the operator's RSS before the
jobs and at the end (from /proc) and per PE; then, with every job held, 30 width changes of one
small job's region (`/scale`, alternately 2 → 3 → 2): the time from the PATCH until the region's
status reports the new width, p50 / p99 / max (the goal: p99 ≤ 1 s with 1,000 jobs held). The peer,
from the same run: the same width changes with no other job in the operator.
With fewer than 100 changes the p99 is interpolated between the two slowest.

Run: pytest benches/bench_many_jobs.py --benchmark-enable -s   (without --benchmark-enable only 5
jobs of 2 PEs run, as a smoke test)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from job_inventory import NS, synthetic_job
from operator_process import require_operator
from operator_rig import operator_rig, until
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.objects import Object

# jobs x PEs per job, and the width changes measured (the smoke case runs with the suite: few)
CASES = {"5x2": (5, 2, 4), "100x100": (100, 100, 30), "1000x1": (1000, 1, 30)}
IN_FLIGHT = 32  # creates in flight while submitting the jobs


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def _resized_job(directory: Path) -> Object:
    sab = write_sab(
        directory / "resized.sab", SyntheticSpec(name="resized::App", chains=1, length=2, regions=1)
    )
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": "resized", "namespace": NS},
        "spec": {"bundle": {"name": sab.name, "file": {"path": str(sab)}}, "fusion": {"legacy": True}},
    }


async def _all_running(client: KubeClient, count: int) -> bool:
    jobs, _ = await client.list_all(JOBS, NS)
    phases = [(j.get("status") or {}).get("phase") for j in jobs]
    if "Failed" in phases:
        raise AssertionError("a job failed")
    return phases.count("Running") >= count


async def _width_changes(client: KubeClient, changes: int) -> list[float]:
    """The resized job's region moved 2 → 3 → 2 …: seconds from each PATCH to the new width reported."""
    regions: list[Object] = []

    async def listed() -> bool:
        regions[:] = (await client.list_all(PARALLEL_REGIONS, NS, label_selector=f"{JOB_LABEL}=resized"))[0]
        return len(regions) == 1

    await until(listed, within=300, every=0.2)
    name = regions[0]["metadata"]["name"]
    latencies = []
    for i in range(changes):
        width = 3 if i % 2 == 0 else 2
        started = time.monotonic()
        await client.patch(PARALLEL_REGIONS, name, {"spec": {"replicas": width}}, NS, subresource="scale")

        async def reported(width: int = width) -> bool:
            status = (await client.get(PARALLEL_REGIONS, name, NS)).get("status") or {}
            return status.get("width") == width

        await until(reported, within=120, every=0.01)
        latencies.append(time.monotonic() - started)
    return latencies


async def _measure(tmp: Path, jobs: int, pes: int, changes: int) -> dict[str, Any]:
    async with operator_rig(jobs * pes + 10, tmp) as rig:
        client, process = rig.client, rig.operator.process
        assert process is not None
        await client.create(JOBS, _resized_job(tmp))
        await until(lambda: _all_running(client, 1), within=120, every=0.2)
        alone = await _width_changes(client, changes)
        rss_before = _rss_mb(process.pid)
        manifests = [synthetic_job(f"job-{i}", tmp, pes) for i in range(jobs)]
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def create(job: Object) -> None:
            async with gate:
                await client.create(JOBS, job)

        started = time.monotonic()
        await asyncio.gather(*(create(j) for j in manifests))
        await until(lambda: _all_running(client, jobs + 1), within=3600, every=1.0)
        to_running = time.monotonic() - started
        rss_held = _rss_mb(process.pid)
        held = await _width_changes(client, changes)
    usage = rig.usage
    assert usage is not None

    def quantiles(seconds: list[float]) -> dict[str, float]:
        ms = [s * 1000 for s in seconds]
        p99 = statistics.quantiles(ms, n=100, method="inclusive")[98]
        return {"p50_ms": round(statistics.median(ms)), "p99_ms": round(p99), "max_ms": round(max(ms))}

    return {
        "jobs": jobs,
        "pes_per_job": pes,
        "seconds_to_all_running": round(to_running, 1),
        "width_change_held": quantiles(held),
        "peer_width_change_alone": quantiles(alone),
        "operator_rss_mb_before_jobs": round(rss_before, 1),
        "operator_rss_mb_jobs_held": round(rss_held, 1),
        "rss_kb_per_pe": round((rss_held - rss_before) * 1024 / (jobs * pes), 1),
        "operator_peak_rss_mb": round(usage.peak_rss_mb, 1),
        "operator_cpu_seconds": round(usage.cpu_seconds, 1),
        "load_average": round(os.getloadavg()[0], 2),
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_many_jobs(benchmark: Any, tmp_path: Path, case: str) -> None:
    require_operator()
    if benchmark.disabled and case != "5x2":
        pytest.skip("100x100 and 1000x1 run only with --benchmark-enable")
    jobs, pes, changes = CASES[case]
    figures = benchmark.pedantic(
        lambda: asyncio.run(_measure(tmp_path, jobs, pes, changes)), rounds=1, iterations=1
    )
    benchmark.extra_info.update(figures)
    print(f"\n{jobs} jobs x {pes} PEs: {figures}")
