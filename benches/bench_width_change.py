"""Width change end to end on a running 1,000-PE job (issue 17): `kubectl scale` of one parallel
region from 4 to 8, until the job runs again at the new width.

The instance operator runs as its own process (`streams-k8s run`), the sandbox in this one, as in
`bench_submission.py`. The job: 100 chains of 10 Functors, the first chain in a parallel region of
width 4, legacy fusion (one operator per PE): 1,032 PEs. Figures, from the `/scale` PATCH: time until
the last replacement pod is created (the controller's part: re-plan, write-ahead, children), time
until the region reports the new width and every PE of the job has a running pod connected to its
peers; the PEs unchanged / changed / added (content ids before and after) and the pods created and
deleted (the sandbox's request log), which should be the changed and added PEs only. The peer, from
the same run: the same job's submission to Running.

Run: pytest benches/bench_width_change.py --benchmark-enable -s   (without --benchmark-enable only a
17-PE job runs, as a smoke test)
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from job_inventory import NS
from operator_process import require_operator
from operator_rig import operator_rig, until
from streams_k8s.api.contract import JOB_LABEL, PE_LABEL, SVC_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.objects import Object
from streams_k8s.sandbox.authn import SIMULATION

JOB = "wide"
SPECS = {  # PEs at width 4: 1,032 (the figure) and 17 (a smoke test that runs with the suite)
    1000: SyntheticSpec(name="wide::App", chains=100, length=10, regions=1, width=4),
    17: SyntheticSpec(name="wide::App", chains=2, length=3, regions=1, width=4),
}


def _job(directory: Path, spec: SyntheticSpec) -> Object:
    sab = write_sab(directory / "wide.sab", spec)
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": JOB, "namespace": NS},
        "spec": {"bundle": {"name": sab.name, "file": {"path": str(sab)}}, "fusion": {"legacy": True}},
    }


async def _pes(client: KubeClient) -> dict[int, Object]:
    items, _ = await client.list_all(PES, NS, label_selector=f"{JOB_LABEL}={JOB}")
    return {int(p["spec"]["id"]): p for p in items}


async def _settled(client: KubeClient, region: str, width: int) -> bool:
    """The region reports ``width``; every PE has a running pod and full connectivity."""
    status = (await client.get(PARALLEL_REGIONS, region, NS)).get("status") or {}
    if status.get("width") != width:
        return False
    pes = await _pes(client)
    pods, _ = await client.list_all(
        PODS, NS, label_selector=f"{JOB_LABEL}={JOB},{SVC_LABEL}=pe", field_selector="status.phase=Running"
    )
    running = {int(p["metadata"]["labels"][PE_LABEL]) for p in pods}
    connected = all((pe.get("status") or {}).get("connectivity") == "Full" for pe in pes.values())
    return connected and running >= set(pes)


async def _measure(tmp: Path, spec: SyntheticSpec) -> dict[str, Any]:
    pes_at_4 = spec.operators + spec.length * (spec.width - 1)
    async with operator_rig(pes_at_4 * 2, tmp) as rig:
        sandbox, client = rig.sandbox, rig.client
        started = time.monotonic()
        await client.create(JOBS, _job(tmp, spec))
        region = (await _until_region(client))["metadata"]["name"]
        await until(lambda: _settled(client, region, 4), within=900, every=0.5)
        submission = time.monotonic() - started
        before = {i: pe["spec"]["contentId"] for i, pe in (await _pes(client)).items()}
        mark, wall = len(sandbox.requests), time.time()
        started = time.monotonic()
        await client.patch(PARALLEL_REGIONS, region, {"spec": {"replicas": 8}}, NS, subresource="scale")
        await until(lambda: _settled(client, region, 8), within=600, every=0.1)
        elapsed = time.monotonic() - started
        log = [r for r in list(sandbox.requests)[mark:] if r.user != SIMULATION]  # not the kubelet's
        after = {i: pe["spec"]["contentId"] for i, pe in (await _pes(client)).items()}
    usage = rig.usage
    assert usage is not None
    pod_posts = [r for r in log if r.method == "POST" and r.path.endswith("/pods") and r.status == 201]
    created = Counter(orjson.loads(r.body)["metadata"]["labels"][PE_LABEL] for r in pod_posts)
    touched = {str(i) for i in after if before.get(i) != after[i]}
    return {
        "pes_before": len(before),
        "pes_after": len(after),
        "unchanged": sum(1 for i in after if before.get(i) == after[i]),
        "changed": sum(1 for i in after if i in before and before[i] != after[i]),
        "added": sum(1 for i in after if i not in before),
        "removed": sum(1 for i in before if i not in after),
        "pods_created": len(pod_posts),
        "pod_creates_refused": sum(
            1 for r in log if r.method == "POST" and r.path.endswith("/pods") and r.status != 201
        ),
        "pods_deleted": sum(1 for r in log if r.method == "DELETE" and "/pods/" in r.path and r.status < 300),
        "pods_of_untouched_pes": sorted(set(created) - touched),
        "pes_with_several_pods_created": sorted(pe for pe, n in created.items() if n > 1),
        "seconds_to_last_pod_created": round(max((r.time for r in pod_posts), default=wall) - wall, 2),
        "seconds_to_running_at_new_width": round(elapsed, 2),
        "peer_seconds_submission_to_running": round(submission, 2),
        "operator_cpu_seconds": round(usage.cpu_seconds, 2),
        "operator_peak_rss_mb": round(usage.peak_rss_mb, 1),
        "load_average": round(os.getloadavg()[0], 2),
    }


async def _until_region(client: KubeClient) -> Object:
    found: list[Object] = []

    async def listed() -> bool:
        found[:] = (await client.list_all(PARALLEL_REGIONS, NS, label_selector=f"{JOB_LABEL}={JOB}"))[0]
        return len(found) == 1

    await until(listed, within=300, every=0.5)
    return found[0]


@pytest.mark.parametrize("pes", sorted(SPECS))
def test_width_change(benchmark: Any, tmp_path: Path, pes: int) -> None:
    require_operator()
    if benchmark.disabled and pes > 17:
        pytest.skip("the 1,000-PE width change runs only with --benchmark-enable")
    spec = SPECS[pes]
    figures = benchmark.pedantic(lambda: asyncio.run(_measure(tmp_path, spec)), rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    print(f"\nwidth change 4 -> 8 of a {figures['pes_before']}-PE job: {figures}")
    assert figures["removed"] == 0
    assert figures["pods_of_untouched_pes"] == []
