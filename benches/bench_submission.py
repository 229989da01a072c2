"""Submission benchmark (issue 6): a generated job of 10 to 10,000 PEs, create Job → Running.

The instance operator runs as its own process (`streams-k8s run`), the sandbox in this one, so
the operator's CPU seconds and peak RSS are its own (kernel rusage; startup included). Figures:
time from `create Job` to phase Running (and to the last pod created), API writes per PE (the
sandbox's request log: every POST/PUT/PATCH/DELETE after the Job's create, until every PE has
reported connectivity to the operator's REST API), CPU seconds, peak RSS. The floor is a bare script
with no logic creating the same objects (ConfigMaps, Services, host pools, PEs, pods, no owner
references) into a fresh sandbox with 32 requests in flight, until every pod runs; the ratio is
ours / floor.

Run: pytest benches/bench_submission.py --benchmark-enable -s   (without --benchmark-enable only
the 10-PE case runs, as a smoke test)
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from job_inventory import NS, Inventory, synthetic_job
from operator_process import require_operator
from operator_rig import OPERATOR_QPS, operator_rig, sized_sandbox, until
from streams_k8s.controller.kinds import HOSTPOOLS, JOBS, PES
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS, SERVICES
from streams_k8s.k8s.objects import Object
from streams_k8s.sandbox.authn import SIMULATION
from streams_k8s.sandbox.server import RequestRecord

WRITES = {"POST", "PUT", "PATCH", "DELETE"}
FLOOR_IN_FLIGHT = 32


async def _ours(pes: int, tmp: Path) -> tuple[dict[str, Any], list[tuple[Resource, Object]]]:
    async with operator_rig(pes, tmp) as rig:
        sandbox, client = rig.sandbox, rig.client
        mark = len(sandbox.requests)
        job = synthetic_job("bench", tmp, pes)
        started, wall = time.monotonic(), time.time()
        await client.create(JOBS, job)

        async def running() -> bool:
            status = (await client.get(JOBS, "bench", NS)).get("status") or {}
            if status.get("phase") == "Failed":
                raise AssertionError(f"job failed: {status}")
            return status.get("phase") == "Running"

        await until(running, within=max(600, pes * 0.3), every=0.1)
        elapsed = time.monotonic() - started

        pes_rt = sandbox.registry.types[(PES.group, PES.plural)]

        async def connected() -> bool:  # the PEs' connectivity reports are writes of a submission too
            # Read in the sandbox's process, as the floor counts its pods (a list of every PE each
            # 0.5 s over HTTP took the sandbox's time).
            pes_now = list(sandbox.registry.items(pes_rt, NS))
            return len(pes_now) >= pes and all(
                (pe.get("status") or {}).get("connectivity") == "Full" for pe in pes_now
            )

        await until(connected, within=max(300, pes * 0.1), every=0.5)
        # The operator's requests and the PEs' reports: not the simulated kubelet's own writes.
        log = [r for r in list(sandbox.requests)[mark:] if r.user != SIMULATION]
        writes = sum(1 for r in log if r.method in WRITES) - 1
        by_kind = Counter(_write_kind(r) for r in log if r.method in WRITES)
        pe_status = Counter(_pe_status_write(r) for r in log if _write_kind(r) == "PATCH streamspes/status")
        last_pod = max(r.time for r in log if r.method == "POST" and r.path.endswith("/pods")) - wall
        usage = rig.stop()
        inventory = await Inventory.read(client, "bench")
        assert inventory.problems(pes) == []
        objects = [(CONFIGMAPS, o) for o in inventory.config_maps]
        objects += [(SERVICES, o) for o in inventory.services]
        objects += [(HOSTPOOLS, o) for o in inventory.host_pools]
        objects += [(PES, o) for o in inventory.pes]
        objects += [(PODS, o) for o in inventory.pods]
    figures = {
        "pes": pes,
        "seconds_to_running": round(elapsed, 2),
        "seconds_to_last_pod_created": round(last_pod, 2),
        "api_writes": writes,
        "api_writes_per_pe": round(writes / pes, 2),
        "cpu_seconds": round(usage.cpu_seconds, 2),
        "peak_rss_mb": round(usage.peak_rss_mb, 1),
        "writes_by_kind": dict(by_kind.most_common()),
        "pe_status_writes": dict(pe_status.most_common()),
    }
    return figures, objects


def _write_kind(record: RequestRecord) -> str:
    """``POST pods``, ``PATCH streamspes/status``: where the writes of a submission go."""
    info = record.info
    if info is None:
        return f"{record.method} {record.path}"
    target = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
    return f"{record.method} {target}"


def _pe_status_write(record: RequestRecord) -> str:
    """What a PE status patch records: the pod running (the PE controller's own write, when no
    connectivity report came within its grace), a connectivity report, or both in one write."""
    status = orjson.loads(record.body).get("status") or {}
    running, connectivity = "launchCount" in status, "connectivity" in status
    if running and connectivity:
        return "running + connectivity"
    return "running" if running else f"connectivity {status.get('connectivity')}" if connectivity else "other"


def _bare(obj: Object) -> Object:
    """The object as a script would write it: name, labels, annotations, content; nothing else."""
    m = obj["metadata"]
    body = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    body["metadata"] = {
        "name": m["name"],
        "namespace": NS,
        "labels": m.get("labels") or {},
        "annotations": m.get("annotations") or {},
    }
    if obj["kind"] == "Pod":
        body["spec"] = {k: v for k, v in obj["spec"].items() if k != "nodeName"}
    if obj["kind"] == "Service":
        body["spec"] = {k: v for k, v in obj["spec"].items() if k not in ("clusterIP", "clusterIPs")}
    return body


async def _floor(pes: int, objects: list[tuple[Resource, Object]]) -> dict[str, Any]:
    async with (
        sized_sandbox(pes) as sandbox,
        await KubeClient.connect(
            str(sandbox.kubeconfig_path), qps=OPERATOR_QPS, burst=OPERATOR_QPS
        ) as client,
    ):
        mark = len(sandbox.requests)
        gate = asyncio.Semaphore(FLOOR_IN_FLIGHT)

        async def create(resource: Resource, obj: Object) -> None:
            async with gate:
                await client.create(resource, _bare(obj))

        started = time.monotonic()
        await asyncio.gather(*(create(r, o) for r, o in objects))
        created = time.monotonic() - started

        pods_rt = sandbox.registry.types[("", "pods")]

        async def all_running() -> bool:
            # Read in the sandbox's own process: listing 10,000 pods every 0.5 s over HTTP took
            # the CPU the sandbox's kubelet needed (the floor's tail was half that).
            running = sum(
                1 for p in sandbox.registry.items(pods_rt, NS) if p["status"].get("phase") == "Running"
            )
            return running >= pes

        await until(all_running, within=max(600, pes * 0.3), every=0.5)
        elapsed = time.monotonic() - started
        writes = sum(1 for r in list(sandbox.requests)[mark:] if r.method in WRITES and r.user != SIMULATION)
    return {
        "floor_seconds": round(elapsed, 2),
        "floor_seconds_to_last_create": round(created, 2),
        "floor_writes_per_pe": round(writes / pes, 2),
    }


@pytest.mark.parametrize("pes", [10, 100, 1000, 3000, 10_000])
def test_submission(benchmark: Any, tmp_path: Path, pes: int) -> None:
    require_operator()
    if benchmark.disabled and pes > 10:
        pytest.skip("the 100- to 10,000-PE submissions run only with --benchmark-enable")

    def measure() -> dict[str, Any]:
        ours, objects = asyncio.run(_ours(pes, tmp_path))
        floor = asyncio.run(_floor(pes, objects))
        return {
            **ours,
            **floor,
            "ratio_to_floor": round(ours["seconds_to_running"] / floor["floor_seconds"], 2),
        }

    figures = benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    print(f"\nsubmission of {pes} PEs: {figures}")
