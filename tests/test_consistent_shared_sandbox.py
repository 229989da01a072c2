"""Shared mode in the sandbox: the jobs of a namespace spread over a pool of coordinator pods,
and the regions of a lost pod's jobs move to the survivors, reset, and go on checkpointing."""

from __future__ import annotations

import asyncio

import aiohttp

from cr_cluster import (
    PODS,
    REGION_OPERATORS,
    ConnectivityToPeStatus,
    CoordinatorPod,
    JobServiceRouter,
    JobWorld,
    pool_pod,
    region_spec,
    shared,
)
from k8s_support import eventually_async
from streams_k8s.api.consistent_region import ConsistentRegionOperator
from streams_k8s.consistent.coordinator import ENDPOINTS
from streams_k8s.consistent.manifests import coordinator_service
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.consistent_region import ConsistentRegionParticipant

SERVICES = Resource("", "v1", "services", "Service")
POOL = [f"streams-cr-coordinator-{i}" for i in range(3)]
JOBS = [f"job{i}" for i in range(6)]


async def test_jobs_spread_over_the_pool_and_survive_losing_a_pod() -> None:
    operator = ConnectivityToPeStatus()
    participant = ConsistentRegionParticipant("", poll_interval=0.05)
    async with (
        Sandbox(pe_reporter=operator, pe_hooks=participant) as sb,
        await KubeClient.connect(str(sb.kubeconfig_path)) as client,
    ):
        operator.client = client
        router = await JobServiceRouter(client).start()
        participant.base_url = router.url + "/jobs/{namespace}/{job}"
        for name in POOL:
            await client.create(PODS, pool_pod(name))
        await sb.settle()
        pods = {}
        for name in POOL:
            ip = (await client.get(PODS, name, "default"))["status"]["podIP"]
            pods[name] = await CoordinatorPod(sb, shared(name, pod_ip=ip)).start()
        regions = {0: region_spec(0, [1, 2]), 1: region_spec(1, [3])}
        worlds = [JobWorld(client, job, regions, mode="shared") for job in JOBS]
        try:
            for world in worlds:
                await world.create()
                operator = ConsistentRegionOperator.from_wire(world.operator)
                await client.create(
                    SERVICES, coordinator_service(operator, namespace="default", generation=1)
                )

            async def all_checkpointing(floor: dict[tuple[str, int], int]) -> bool:
                for world in worlds:
                    for index in world.regions:
                        status = await world.status(index)
                        if status.get("lastCompletedSeqID", 0) <= floor.get((world.job, index), 0):
                            return False
                return True

            await eventually_async(lambda: all_checkpointing({}), within=30)
            owners = {w.job: await owner(client, w.job) for w in worlds}
            assert len(set(owners.values())) >= 2  # spread, not all on one pod
            # The runtime's own address names the job in the Host header; only its pod serves it.
            host = {"Host": f"streams-{JOBS[0]}-consistentregion-api.default:10000"}
            async with aiohttp.ClientSession() as http:
                for name, pod in pods.items():
                    async with http.get(f"{pod.url}/api/consistentregion/region/0/state", headers=host) as r:
                        assert r.status == (200 if name == owners[JOBS[0]] else 404)
            for name, pod in pods.items():
                assert pod.coordinator is not None
                assert set(pod.coordinator.jobs) == {("default", j) for j, o in owners.items() if o == name}

            lost = owners[JOBS[0]]
            moved = [job for job, o in owners.items() if o == lost]
            await pods.pop(lost).stop()
            await client.delete(PODS, lost, "default")
            floor = {
                (w.job, i): (await w.status(i)).get("lastCompletedSeqID", 0)
                for w in worlds
                for i in w.regions
            }

            async def moved_away() -> bool:
                return all([await owner(client, job) in pods for job in moved])

            await eventually_async(moved_away, within=15)
            await eventually_async(lambda: all_checkpointing(floor), within=30)
            for job in JOBS:
                assert await recorded_owner(client, job) == await owner(client, job)
            for job in moved:  # taken over: the survivor forced a reset before going on
                status = await worlds[JOBS.index(job)].status(0)
                assert status["lastCompletedReset"] >= 0
        finally:
            for pod in pods.values():
                await pod.stop()
            await router.close()
            await asyncio.sleep(0)


async def owner(client: KubeClient, job: str) -> str:
    """The pool pod the job's API Service points at."""
    endpoints = await client.get(ENDPOINTS, f"streams-{job}-consistentregion-api", "default")
    return str(endpoints["subsets"][0]["addresses"][0]["targetRef"]["name"])


async def recorded_owner(client: KubeClient, job: str) -> str:
    """The pool pod the job's ConsistentRegionOperator status names."""
    operator = await client.get(REGION_OPERATORS, f"{job}-consistent-region-operator", "default")
    return str((operator.get("status") or {}).get("coordinator"))
