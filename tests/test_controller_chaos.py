"""Chaos: the operator process killed (SIGKILL) at 20 random points of a 200-PE submission, and
restarted each time, still converges on exactly the right objects, without duplicates, orphans or
a second job id; a later job never reuses the id."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from job_inventory import NS, Inventory, synthetic_job
from operator_process import OperatorProcess, require_operator
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox

PES = 200
KILLS = 20
SEED = 20261121


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def job_status(client: KubeClient, name: str) -> dict:
    return dict((await client.get(JOBS, name, NS)).get("status") or {})


async def wait_running(client: KubeClient, name: str, within: float) -> dict:
    deadline = time.monotonic() + within
    while True:
        status = await job_status(client, name)
        if status.get("phase") == "Running" or time.monotonic() > deadline:
            return status
        await asyncio.sleep(0.2)


@pytest.mark.sandbox(nodes=6, zones=["zone-a", "zone-b"])
async def test_operator_killed_20_times_during_a_200_pe_submission_converges(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    require_operator()
    rng = random.Random(SEED)
    ids: set[int] = set()
    with OperatorProcess(sandbox.kubeconfig_path, tmp_path / "operator.log") as operator:
        await client.create(JOBS, synthetic_job("chaos", tmp_path, PES))
        for _ in range(KILLS):
            # Startup takes ~1 s of imports; kill somewhere in the working second or two after it.
            await asyncio.sleep(rng.uniform(0.8, 3.0))
            operator.kill()
            if (job_id := (await job_status(client, "chaos")).get("id")) is not None:
                ids.add(job_id)
            operator.start()
        status = await wait_running(client, "chaos", within=180)
        assert status.get("phase") == "Running", f"{status} (log: {tmp_path / 'operator.log'})"
        ids.add(status["id"])
        assert len(ids) == 1, f"job ids seen across restarts: {ids}"
        await sandbox.settle()
        inventory = await Inventory.read(client, "chaos")
        assert inventory.problems(PES) == []

        await client.create(JOBS, synthetic_job("after", tmp_path, 2))
        after = await wait_running(client, "after", within=60)
        assert after.get("id") is not None
        assert after["id"] not in ids
