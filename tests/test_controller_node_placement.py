"""Host pools on nodes: pool labels and exclusive taints applied for a job and removed with it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from k8s_support import eventually_async
from pe_objects import (
    NS,
    create_host_pool,
    create_job,
    create_pe,
    create_pe_config_map,
    pods_of,
    running_pe_controllers,
)
from streams_k8s.controller.kinds import JOBS
from streams_k8s.controller.placement.constraints import EXCLUSIVE_TAINT_KEY, exclusive_owner, pool_label_key
from streams_k8s.controller.placement.nodes import FINALIZER
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import NODES
from streams_k8s.sandbox import Sandbox

KEY = pool_label_key(NS, "app", 0)
OWNER = exclusive_owner(NS, "app", 0)


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def nodes(client: KubeClient) -> dict[str, dict]:
    items, _ = await client.list_all(NODES)
    return {n["metadata"]["name"]: n for n in items}


def ours(node: dict) -> tuple[str | None, bool]:
    label = node["metadata"].get("labels", {}).get(KEY)
    tainted = any(
        t["key"] == EXCLUSIVE_TAINT_KEY and t.get("value") == OWNER for t in node["spec"].get("taints") or ()
    )
    return label, tainted


@pytest.mark.sandbox(nodes=3)
async def test_exclusive_pool_labels_and_taints_its_nodes_until_the_job_goes(
    sandbox: Sandbox, client: KubeClient
) -> None:
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        await create_host_pool(client, job, 0, size=2, membershipMode="exclusive")
        await create_pe(client, job, 0, placement={"hostPoolLocation": {"poolIndex": 0, "inpoolIndex": 1}})
        await create_pe(client, job, 1, placement={"hostPoolLocation": {"poolIndex": 0}})
        await create_pe(client, job, 2)  # outside the pool: must stay off its tainted nodes
        for pe_id in range(3):
            await create_pe_config_map(client, job, pe_id)

        async def placed() -> bool:
            running = [await pods_of(client, "app", i) for i in range(3)]
            return all(p and p[0]["status"].get("phase") == "Running" for p in running)

        await eventually_async(placed, within=10)
        state = {name: ours(n) for name, n in (await nodes(client)).items()}
        pool = sorted(name for name, (label, _) in state.items() if label is not None)
        assert len(pool) == 2
        assert all(state[name][1] for name in pool)  # tainted
        assert sorted(state[name][0] for name in pool) == ["0", "1"]  # type: ignore[type-var]
        indexed = (await pods_of(client, "app", 0))[0]["spec"]["nodeName"]
        assert state[indexed][0] == "1"  # host(pool[1])
        assert (await pods_of(client, "app", 1))[0]["spec"]["nodeName"] in pool
        assert (await pods_of(client, "app", 2))[0]["spec"]["nodeName"] not in pool
        assert FINALIZER in (await client.get(JOBS, "app", NS))["metadata"]["finalizers"]

        await client.delete(JOBS, "app", NS)

        async def cleaned() -> bool:
            jobs, _ = await client.list_all(JOBS, NS)
            return not jobs and all(ours(n) == (None, False) for n in (await nodes(client)).values())

        await eventually_async(cleaned, within=10)


async def test_jobs_without_materialised_pools_are_left_alone(sandbox: Sandbox, client: KubeClient) -> None:
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        await create_host_pool(client, job, 0, tags=["fast"])
        await create_pe(client, job, 0, placement={"hostPoolLocation": {"poolIndex": 0}})
        await create_pe_config_map(client, job, 0)
        await sandbox.settle()
        assert "finalizers" not in (await client.get(JOBS, "app", NS))["metadata"]
        pod = await pods_of(client, "app", 0)
        affinity = pod[0]["spec"]["affinity"]["nodeAffinity"]
        terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert terms == [
            {"matchExpressions": [{"key": "streams.ibm.com/hostpool", "operator": "In", "values": ["fast"]}]}
        ]
