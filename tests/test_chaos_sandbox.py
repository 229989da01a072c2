"""The chaos suite: the operator killed at random points while the API server fails writes at
random and loses answers, watches are dropped and stalled, nodes drained and removed. Small sizes
here (`chaos_support.ChaosSize`); full sizes in `benches/bench_chaos.py`.

Invariants: the job converges (Running); its inventory is exact; no PE ever had two live pods;
the job id and PE ids are stable and unique; every milestone its status records has its Event
(none lost); deleting it leaves nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chaos_support import ChaosSize, PodMonitor, converge_under_fault_mix
from job_inventory import Inventory, synthetic_job
from k8s_support import eventually_async
from operator_process import OperatorProcess
from operator_support import job_status, wait_for_phase
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.controller.jobs.milestones import milestones
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.kinds import HOSTPOOLS, JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.event_delivery import CORE_EVENTS
from streams_k8s.k8s.kinds import CONFIGMAPS, NODES, PODS, SERVICES
from streams_k8s.sandbox import Sandbox

NS = "default"


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def inject_api_faults(sandbox: Sandbox, size: ChaosSize, seed: int) -> None:
    sandbox.faults.random.seed(seed)
    for verb in ("create", "update", "patch", "delete"):
        sandbox.faults.fail(500, None, verb=verb, probability=size.fault_share)
    sandbox.faults.fail(500, None, verb="create", probability=size.lost_share, after_commit=True)


async def disrupt(sandbox: Sandbox, client: KubeClient, rng: random.Random, job: str) -> None:
    """One of: drop or stall the watches, drain a PE pod's node, remove a node."""
    pods, _ = await client.list_all(PODS, NS, label_selector=f"{JOB_LABEL}={job}")
    placed = sorted({p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")})
    action = rng.choice(["drop", "stall", "drain", "remove"])
    if action == "drop":
        sandbox.faults.drop_watches()
    elif action == "stall":
        sandbox.faults.stall_watches()
    elif placed and len((await client.list_all(NODES))[0]) > 2:
        node = rng.choice(placed)
        if action == "remove":
            await sandbox.cluster.remove_node(node)
            return
        await sandbox.cluster.cordon(node)  # kubectl drain: cordon, then the Eviction API
        for pod in pods:
            if pod["spec"].get("nodeName") == node:
                name = pod["metadata"]["name"]
                body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
                with contextlib.suppress(ApiError):  # gone meanwhile, or an injected fault
                    await client.request(
                        "POST", PODS, PODS.path(NS, name, "eviction"), verb="create", body=body
                    )


@pytest.mark.chaos
@pytest.mark.sandbox(nodes=5)
async def test_under_chaos_the_job_converges_with_every_invariant(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    size = ChaosSize.from_env()
    rng = random.Random(1616)
    monitor = PodMonitor(client)
    monitor.start()
    inject_api_faults(sandbox, size, seed=16)
    job = await client.create(JOBS, synthetic_job("chaos", tmp_path, size.pes))
    ids: set[int] = set()
    operator = OperatorProcess(sandbox.kubeconfig_path, tmp_path / "operator.log")
    try:
        for _ in range(size.kills):
            operator.start()
            try:
                await asyncio.sleep(rng.uniform(1.0, 4.0))
                await disrupt(sandbox, client, rng, "chaos")
                await asyncio.sleep(rng.uniform(0.0, 1.5))
            finally:
                await asyncio.to_thread(operator.kill)  # SIGKILL, anywhere
            if (found := (await job_status(client, "chaos")).get("id")) is not None:
                ids.add(int(found))
        operator.start()
        try:
            status = await wait_for_phase(client, "chaos", "Running", within=180)
            ids.add(int(status["id"]))
            problems: list[str] = []

            async def exact() -> bool:  # PE records follow their pods' start by a moment
                problems[:] = (await Inventory.read(client, "chaos")).problems(size.pes)
                return not problems

            try:
                await eventually_async(exact, within=30)
            except TimeoutError:
                raise AssertionError(f"inventory: {problems}") from None
            assert len(ids) == 1, f"job ids {ids}"
            assert all(n <= 1 for n in monitor.most.values()), dict(monitor.most)

            # every milestone the status records has its Event (delivered despite the faults)
            wanted = Counter(m.reason for m in milestones(JobStatusView(status)))

            async def recorded() -> bool:
                events, _ = await client.list_all(CORE_EVENTS, NS)
                seen = Counter(
                    e["reason"] for e in events if e["involvedObject"].get("uid") == job["metadata"]["uid"]
                )
                return all(seen[r] >= n for r, n in wanted.items())

            await eventually_async(recorded, within=30)

            await client.delete(JOBS, "chaos", NS)

            async def nothing_left() -> bool:
                for resource in (PES, CONFIGMAPS, SERVICES, HOSTPOOLS, PODS):
                    items, _ = await client.list_all(resource, NS, label_selector=f"{JOB_LABEL}=chaos")
                    if items:
                        return False
                return True

            await eventually_async(nothing_left, within=60)
        finally:
            await asyncio.to_thread(operator.stop)
    finally:
        sandbox.faults.clear()
        await monitor.stop()


@pytest.mark.chaos
@pytest.mark.sandbox(nodes=3)
async def test_under_a_fault_mix_on_every_request_the_job_converges_exactly(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    """Issue 35's mix at 10 PEs (100 in benches/bench_chaos.py, against the time without faults):
    30% of every request of the operator's, reads, watches and writes, answered 409 (writes), 429
    (Retry-After: 1) or 500; from the operator's start the job reaches its exact inventory."""
    figures = await converge_under_fault_mix(sandbox, client, 10, tmp_path, faulty=True)
    assert figures["watches_failed"] > 0
    assert figures["lists_failed"] + figures["gets"] > 0
    assert figures["writes_failed"] > 0
    assert set(figures["answered"]) == {"409", "429", "500"}
