"""Rollout benchmark (issue 14): a PE-template edit (a trace level) of a running 1,000-PE job rolled
out to Running, against what creating the same number of pods cost at submission.

The instance operator runs as its own process (`streams-k8s run`), the sandbox in this one.
Figures: time from the edit to the edit's generation running with every pod ready (Ready=True), the
same for the submission (create → Ready), their ratio (goal ≤ 1.3), API writes per replaced PE
(every POST/PUT/PATCH/DELETE in the sandbox's request log from the edit until every PE has
reported connectivity again), the operator's CPU seconds during the rollout (/proc utime+stime),
and the pods replaced against those whose content and settings did not change (none may be).

Run: pytest benches/bench_rollout.py --benchmark-enable -s   (without --benchmark-enable only the
10-PE case runs, as a smoke test)
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from job_inventory import NS, synthetic_job
from k8s_support import eventually_async
from operator_process import OperatorProcess, free_port, require_operator
from streams_k8s.api.contract import JOB_LABEL, LAUNCH_COUNT_LABEL, PE_LABEL, SVC_LABEL
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import PODS
from streams_k8s.sandbox import Sandbox

WRITES = {"POST", "PUT", "PATCH", "DELETE"}
OPERATOR_QPS = 500


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _ready(client: KubeClient, generation: int) -> bool:
    status = (await client.get(JOBS, "roll", NS)).get("status") or {}
    ready = next((c for c in status.get("conditions") or () if c["type"] == "Ready"), {})
    if status.get("phase") == "Failed":
        raise AssertionError(f"job failed: {status}")
    return status.get("appliedGeneration") == generation and ready.get("status") == "True"


async def _launches(client: KubeClient) -> dict[int, tuple[str, int]]:
    pods, _ = await client.list_all(PODS, NS, label_selector=f"{JOB_LABEL}=roll,{SVC_LABEL}=pe")
    return {
        int(p["metadata"]["labels"][PE_LABEL]): (
            p["metadata"]["uid"],
            int(p["metadata"]["labels"][LAUNCH_COUNT_LABEL]),
        )
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
    }


async def _connected(client: KubeClient) -> bool:
    pes, _ = await client.list_all(PES, NS)
    return all((pe.get("status") or {}).get("connectivity") == "Full" for pe in pes)


async def _rollout(pes: int, tmp: Path) -> dict[str, Any]:
    api_port = free_port()
    nodes = max(3, -(-pes // 80))
    sandbox = Sandbox(nodes=nodes, controller_url=f"http://127.0.0.1:{api_port}", request_log_size=1_000_000)
    async with sandbox, await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        operator = OperatorProcess(
            sandbox.kubeconfig_path, tmp / "operator.log", qps=OPERATOR_QPS, api_port=api_port
        )
        operator.start()
        try:
            assert operator.process is not None
            await asyncio.sleep(2.0)  # started and caches synced
            job = synthetic_job("roll", tmp, pes)
            started = time.monotonic()
            await client.create(JOBS, job)
            await eventually_async(lambda: _ready(client, 1), within=900, every=0.1)
            submitted = time.monotonic() - started
            await eventually_async(lambda: _connected(client), within=300, every=0.5)
            before = await _launches(client)
            mark, cpu = len(sandbox.requests), _cpu_seconds(operator.process.pid)
            edit = {"spec": {"processingElement": {"runtimeTraceLevel": "DEBUG"}}}
            started = time.monotonic()
            await client.patch(JOBS, "roll", edit, NS)
            await eventually_async(lambda: _ready(client, 2), within=900, every=0.1)
            rolled = time.monotonic() - started
            await eventually_async(lambda: _connected(client), within=300, every=0.5)
            cpu = _cpu_seconds(operator.process.pid) - cpu
            log = list(sandbox.requests)[mark:]
        finally:
            operator.stop()
        after = await _launches(client)
    writes = [r for r in log if r.method in WRITES]
    replaced = sum(1 for i in after if after[i][0] != before[i][0])
    assert {i: n for i, (_, n) in after.items()} == {i: n + 1 for i, (_, n) in before.items()}
    return {
        "pes": pes,
        "seconds_create_to_ready": round(submitted, 2),
        "seconds_edit_to_ready": round(rolled, 2),
        "ratio_to_creation": round(rolled / submitted, 2),
        "replaced": replaced,
        "api_writes_per_replaced_pe": round(len(writes) / max(replaced, 1), 2),
        "operator_cpu_seconds": round(cpu, 2),
        "writes_by_kind": dict(
            Counter(f"{r.method} {r.info.resource if r.info else r.path}" for r in writes)
        ),
        "load_average": os.getloadavg()[0],
    }


@pytest.mark.parametrize("pes", [10, 1000])
def test_rollout_of_a_pe_template_edit(benchmark: Any, tmp_path: Path, pes: int) -> None:
    require_operator()
    if benchmark.disabled and pes > 10:
        pytest.skip("the 1,000-PE rollout runs only with --benchmark-enable")
    figures = benchmark.pedantic(lambda: asyncio.run(_rollout(pes, tmp_path)), rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    print(f"\nrollout of {pes} PEs: {figures}")
