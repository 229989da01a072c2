"""Chaos: the operator process killed (SIGKILL) at 20 random points of a 200-PE submission, and
restarted each time, still converges on exactly the right objects, without duplicates, orphans or
a second job id; a later job never reuses the id.

A point is a count of API writes (the sandbox's request log): the n-th kill comes once the
operators so far have made the n-th of 20 write counts drawn at random below what one whole
submission makes, so the kills land anywhere from planning to the last PE status.
"""

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
from streams_k8s.controller.kinds import PES as PE_RESOURCE
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.authn import SIMULATION

PES = 200
WRITES = {"POST", "PUT", "PATCH", "DELETE"}
KILLS = 20
SEED = 20261121
# One uninterrupted 200-PE submission makes ~1,060 writes (measured); points are drawn below this.
WRITES_OF_A_SUBMISSION = 1000


async def until_writes(sandbox: Sandbox, count: int) -> None:
    async with asyncio.timeout(60):
        while True:
            # the operator's writes: the simulated kubelet's (user sandbox:simulation) come on top
            if sum(1 for r in sandbox.requests if r.method in WRITES and r.user != SIMULATION) >= count:
                return
            await asyncio.sleep(0.01)


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


async def converged(client: KubeClient, job: str, pes: int, within: float) -> list[str]:
    """Wait for the job's objects to be exactly right (PE statuses trail the Running phase)."""
    deadline = time.monotonic() + within
    while True:
        problems = (await Inventory.read(client, job)).problems(pes)
        if not problems or time.monotonic() > deadline:
            return problems
        await asyncio.sleep(0.5)


@pytest.mark.sandbox(nodes=6, zones=["zone-a", "zone-b"])
async def test_operator_killed_20_times_during_a_200_pe_submission_converges(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    require_operator()
    rng = random.Random(SEED)
    ids: set[int] = set()
    killed_while: list[str] = []  # the job's phase and progress at each kill
    with OperatorProcess(sandbox.kubeconfig_path, tmp_path / "operator.log") as operator:
        await client.create(JOBS, synthetic_job("chaos", tmp_path, PES))
        for point in sorted(rng.sample(range(1, WRITES_OF_A_SUBMISSION), KILLS)):
            await until_writes(sandbox, point)
            operator.kill()
            status = await job_status(client, "chaos")
            if status.get("id") is not None:
                ids.add(status["id"])
            pes, _ = await client.list_all(PE_RESOURCE, NS)
            pods = status.get("podsReady", 0)
            killed_while.append(f"{point} writes: {status.get('phase')}, {len(pes)} PEs, {pods} pods ready")
            operator.start()
        # The kills must have landed during the submission, not after it.
        assert sum("Running" not in k for k in killed_while) >= KILLS // 2, killed_while
        status = await wait_running(client, "chaos", within=180)
        assert status.get("phase") == "Running", f"{status} (log: {tmp_path / 'operator.log'})"
        ids.add(status["id"])
        assert len(ids) == 1, f"job ids seen across restarts: {ids}"
        problems = await converged(client, "chaos", PES, within=60)
        assert problems == []
        print("at each kill:", *killed_while, sep="\n  ")

        await client.create(JOBS, synthetic_job("after", tmp_path, 2))
        after = await wait_running(client, "after", within=60)
        assert after.get("id") is not None
        assert after["id"] not in ids
