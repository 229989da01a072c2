"""Shared mode in the sandbox: the pool scheduler places the jobs' regions on the coordinator
StatefulSet, the pool pods run the jobs their placements give them, and the pool follows
losses (a pod, a zone) and demand (growing, compacting). Everything is read back over HTTP.

Six nodes over three zones (node-i in zone z{i%3}). The sandbox runs the StatefulSet's pods, and
in each a `streams-k8s coordinator --mode shared` process (its kubelet starts the container's
program); the simulated PEs reach each job's coordinator through the job's selector-less API
Service, whose EndpointSlice the pool pod running the job publishes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest

from cr_cluster import (
    NAMESPACE,
    PODS,
    REGION_OPERATORS,
    ConnectivityToPeStatus,
    JobWorld,
    coordinator_accounts,
    pod_url,
    region_spec,
)
from k8s_support import eventually_async, sandbox_runtime
from streams_k8s.api.consistent_region import ConsistentRegionOperator, VReplicaPlacement
from streams_k8s.consistent.assignment import runner_of
from streams_k8s.consistent.kinds import CONSISTENT_REGIONS
from streams_k8s.consistent.manifests import coordinator_service
from streams_k8s.consistent.pool import PoolSettings, setup
from streams_k8s.consistent.pool_manifests import POOL_LABELS, POOL_NAME, coordinator_pool
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import ENDPOINT_SLICES, STATEFULSETS
from streams_k8s.k8s.manager import Manager
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.consistent_region import ConsistentRegionParticipant

SERVICES = Resource("", "v1", "services", "Service")
NODES = Resource("", "v1", "nodes", "Node")
UNREACHABLE = "node.kubernetes.io/unreachable"
CAPACITY = 4  # regions per pool pod; every job here has 2
REGIONS = {0: region_spec(0, [1, 2]), 1: region_spec(1, [3])}
POOL_SELECTOR = ",".join(f"{k}={v}" for k, v in POOL_LABELS.items())


@dataclass
class SharedPool:
    sandbox: Sandbox
    client: KubeClient
    scheduler: Manager | None = None
    task: asyncio.Task[int] | None = None
    worlds: dict[str, JobWorld] = field(default_factory=dict)

    async def start_scheduler(self, refresh_period: float) -> None:
        runtime = sandbox_runtime(self.sandbox, namespace=NAMESPACE, shutdown_grace=1.0)
        self.scheduler = Manager(runtime)
        await self.scheduler.connect()
        settings = PoolSettings(namespace=NAMESPACE, capacity=CAPACITY, refresh_period=refresh_period)
        await setup(self.scheduler, settings)
        self.task = asyncio.create_task(self.scheduler.run(handle_signals=False))

    async def stop(self) -> None:
        if self.scheduler is not None and self.task is not None:
            self.scheduler.stop()
            await self.task

    async def add_job(self, job: str) -> JobWorld:
        world = self.worlds[job] = JobWorld(self.client, job, REGIONS, mode="shared")
        await world.create()
        operator = ConsistentRegionOperator.from_wire(world.operator)
        await self.client.create(SERVICES, coordinator_service(operator, namespace=NAMESPACE, generation=1))
        return world

    async def remove_job(self, job: str) -> None:
        world = self.worlds.pop(job)
        for index in world.regions:
            await self.client.delete(CONSISTENT_REGIONS, world.region_name(index), NAMESPACE)
        await self.client.delete(REGION_OPERATORS, world.operator_name, NAMESPACE)

    async def relaunch_evicted_pes(self) -> None:
        """What the instance operator does for a PE whose pod was evicted: launch it again."""
        for world in self.worlds.values():
            for pe in world.pes:
                try:
                    await self.client.get(PODS, world.pod_name(pe), NAMESPACE)
                except ApiError as exc:
                    if not exc.not_found:
                        raise
                    await world.launch(pe)

    # -- reading back over the API -------------------------------------------------------------

    async def placements(self) -> dict[str, dict[str, int]]:
        """job -> pod -> regions, from the ConsistentRegionOperators' status."""
        items, _ = await self.client.list_all(REGION_OPERATORS, NAMESPACE)
        return {
            item["spec"]["jobName"]: {
                p["podName"]: p["vreplicas"] for p in (item.get("status") or {}).get("placements") or []
            }
            for item in items
        }

    async def runners(self) -> dict[str, str | None]:
        return {
            job: runner_of(VReplicaPlacement(pod_name=p, vreplicas=n) for p, n in held.items())
            for job, held in (await self.placements()).items()
        }

    async def endpoint_owner(self, job: str) -> str | None:
        """The pool pod the job's API Service points at."""
        try:
            found = await self.client.get(ENDPOINT_SLICES, f"streams-{job}-consistentregion-api", NAMESPACE)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise
        labels = found["metadata"]["labels"]
        assert labels["kubernetes.io/service-name"] == f"streams-{job}-consistentregion-api"
        assert labels["endpointslice.kubernetes.io/managed-by"] != "endpointslice-controller.k8s.io"
        endpoints = found.get("endpoints") or [{}]
        return endpoints[0].get("targetRef", {}).get("name")

    async def jobs_of(self, pod: str) -> set[str]:
        """The jobs the coordinator process of ``pod`` runs (its REST API answers for them)."""
        found = (await self.pool_pods()).get(pod)
        url = pod_url(self.sandbox, found) if found is not None else None
        if url is None:
            return set()
        running = set()
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
            for job in self.worlds:
                try:
                    async with http.get(
                        f"{url}/jobs/{NAMESPACE}/{job}/api/consistentregion/region/0/state"
                    ) as r:
                        if r.status == 200:
                            running.add(job)
                except aiohttp.ClientError:
                    return set()  # not listening (yet, or any more)
        return running

    async def pool_pods(self) -> dict[str, dict[str, Any]]:
        items, _ = await self.client.list_all(PODS, NAMESPACE, label_selector=POOL_SELECTOR)
        return {i["metadata"]["name"]: i for i in items if not i["metadata"].get("deletionTimestamp")}

    async def replicas(self) -> int:
        return int((await self.client.get(STATEFULSETS, POOL_NAME, NAMESPACE))["spec"]["replicas"])

    async def settled(self) -> bool:
        """Every job fully placed on existing pods within capacity, served by its runner alone."""
        placements, pods = await self.placements(), await self.pool_pods()
        used: dict[str, int] = {}
        for held in placements.values():
            if sum(held.values()) != len(REGIONS) or not set(held) <= set(pods):
                return False
            for pod, n in held.items():
                used[pod] = used.get(pod, 0) + n
        assert all(n <= CAPACITY for n in used.values()), used  # capacity is never exceeded
        running = {pod: await self.jobs_of(pod) for pod in pods}
        for job, runner in (await self.runners()).items():
            if await self.endpoint_owner(job) != runner or {
                pod for pod, jobs in running.items() if job in jobs
            } != {runner}:
                return False
        return True

    async def checkpoints(self) -> dict[tuple[str, int], int]:
        return {
            (job, index): (await world.status(index)).get("lastCompletedSeqID", 0)
            for job, world in self.worlds.items()
            for index in world.regions
        }

    async def all_past(self, floor: dict[tuple[str, int], int]) -> bool:
        now = await self.checkpoints()
        return all(seq > floor.get(key, 0) for key, seq in now.items())

    async def reset_since_taken_over(self, job: str) -> bool:
        """The coordinator that took the job over forced a reset of every region."""
        statuses = [await self.worlds[job].status(index) for index in REGIONS]
        return all(status.get("lastCompletedReset", -1) >= 0 for status in statuses)


@pytest.fixture
async def pool() -> AsyncIterator[SharedPool]:
    reporter = ConnectivityToPeStatus()
    participant = ConsistentRegionParticipant(poll_interval=0.05)  # at each job's API Service
    async with (
        Sandbox(nodes=6, zones=["z0", "z1", "z2"], pe_reporter=reporter, pe_hooks=participant) as sb,
        await KubeClient.connect(str(sb.kubeconfig_path)) as client,
    ):
        reporter.client = client
        await coordinator_accounts(client)
        shared_pool = SharedPool(sb, client)
        await client.create(
            STATEFULSETS, coordinator_pool(namespace=NAMESPACE, image="streams-k8s:test", replicas=0)
        )
        try:
            yield shared_pool
        finally:
            await shared_pool.stop()


async def test_jobs_spread_over_the_pool_and_survive_losing_a_pod_and_a_zone(pool: SharedPool) -> None:
    """MAXFILLUP, 6 jobs x 2 regions, capacity 4: three pods with two whole jobs each. A deleted
    pod comes back under its name and keeps its jobs; a lost zone's pods are replaced elsewhere;
    either way the jobs' new coordinators reset them and checkpointing goes on."""
    jobs = [f"job{i}" for i in range(6)]
    for job in jobs:
        await pool.add_job(job)
    await pool.start_scheduler(refresh_period=3600.0)
    await eventually_async(pool.settled, within=30)
    assert await pool.replicas() == 3  # ceil(12 regions / 4)
    runners = await pool.runners()
    assert sorted(runners.values()) == sorted(f"{POOL_NAME}-{i}" for i in range(3) for _ in range(2))
    await eventually_async(lambda: pool.all_past({}), within=30)

    # A pod fails: the StatefulSet recreates it under the same name, it keeps its placements,
    # and its new process takes its jobs over with a forced reset.
    lost = runners["job0"]
    kept = [job for job, runner in runners.items() if runner == lost]
    old_uid = (await pool.pool_pods())[lost]["metadata"]["uid"]
    await pool.client.delete(PODS, lost, NAMESPACE)

    async def recreated() -> bool:
        pod = (await pool.pool_pods()).get(lost)
        return pod is not None and pod["metadata"]["uid"] != old_uid and await pool.settled()

    await eventually_async(recreated, within=30)
    assert await pool.runners() == runners
    floor = await pool.checkpoints()
    await eventually_async(lambda: pool.all_past(floor), within=30)
    for job in kept:
        assert await pool.reset_since_taken_over(job)

    # A zone goes unreachable: its pool pods are evicted and come back in the other zones, or
    # their vreplicas move; every job ends up on a pod outside the zone, and goes on.
    pods = await pool.pool_pods()
    zone_nodes = {n["metadata"]["name"] for n in (await pool.client.list_all(NODES))[0]}
    node_of_lost = pods[runners["job0"]]["spec"]["nodeName"]
    zone = int(node_of_lost.rsplit("-", 1)[1]) % 3
    lost_nodes = {node for node in zone_nodes if int(node.rsplit("-", 1)[1]) % 3 == zone}
    for node in lost_nodes:
        await pool.sandbox.cluster.taint(node, UNREACHABLE, effect="NoSchedule")  # type: ignore[union-attr]
        await pool.sandbox.cluster.taint(node, UNREACHABLE, effect="NoExecute")  # type: ignore[union-attr]
    moved = [job for job, runner in runners.items() if pods[runner]["spec"]["nodeName"] in lost_nodes]
    await pool.sandbox.settle()  # the taint eviction controller and the kubelets are done
    await pool.relaunch_evicted_pes()
    assert "job0" in moved

    async def outside_the_zone() -> bool:
        if not await pool.settled():
            return False
        pods = await pool.pool_pods()
        return all(
            pods[r]["spec"]["nodeName"] not in lost_nodes for r in (await pool.runners()).values() if r
        )

    await eventually_async(outside_the_zone, within=40)
    floor = await pool.checkpoints()
    await eventually_async(lambda: pool.all_past(floor), within=30)
    for job in moved:
        assert await pool.reset_since_taken_over(job)


async def test_the_pool_grows_with_demand_and_compacts_when_jobs_go(pool: SharedPool) -> None:
    """Jobs arrive: the StatefulSet grows to ceil(regions / capacity). Most go: the periodic run
    evicts the survivors from the top pods, they move down (reset, go on) and the set shrinks."""
    await pool.start_scheduler(refresh_period=1.0)
    for job in ("a", "b"):
        await pool.add_job(job)
    await eventually_async(pool.settled, within=30)
    assert await pool.replicas() == 1
    for job in ("c", "d", "e", "f", "g"):
        await pool.add_job(job)
    await eventually_async(pool.settled, within=30)
    assert await pool.replicas() == 4  # ceil(14 / 4)
    await eventually_async(lambda: pool.all_past({}), within=30)

    survivor = "g"  # on the top pod
    assert (await pool.runners())[survivor] == f"{POOL_NAME}-3"
    for job in ("a", "b", "c", "d", "e", "f"):
        await pool.remove_job(job)

    async def compacted() -> bool:
        return await pool.replicas() == 1 and len(await pool.pool_pods()) == 1 and await pool.settled()

    await eventually_async(compacted, within=40)
    assert await pool.runners() == {survivor: f"{POOL_NAME}-0"}
    floor = await pool.checkpoints()
    await eventually_async(lambda: pool.all_past(floor), within=30)
    assert await pool.reset_since_taken_over(survivor)


async def test_a_cordoned_nodes_jobs_move_to_a_new_pod_while_the_old_one_still_runs(pool: SharedPool) -> None:
    """The pod on a cordoned node keeps running but loses its placements: the set grows by one
    pod, the jobs move there, the old pod lets them go, and the new one resets them."""
    for job in ("a", "b", "c", "d"):
        await pool.add_job(job)
    await pool.start_scheduler(refresh_period=3600.0)
    await eventually_async(pool.settled, within=30)
    assert await pool.replicas() == 2
    await eventually_async(lambda: pool.all_past({}), within=30)
    runners = await pool.runners()
    cordoned = runners["a"]
    moved = sorted(job for job, runner in runners.items() if runner == cordoned)
    pods = await pool.pool_pods()
    await pool.sandbox.cluster.cordon(pods[cordoned]["spec"]["nodeName"])  # type: ignore[union-attr]

    async def moved_to_the_new_pod() -> bool:
        now = await pool.runners()
        return await pool.settled() and all(now[job] == f"{POOL_NAME}-2" for job in moved)

    await eventually_async(moved_to_the_new_pod, within=30)
    assert await pool.replicas() == 3  # ceil(8 / 4) + the stranded pod
    assert cordoned in await pool.pool_pods()  # still there, running nothing
    assert await pool.jobs_of(cordoned) == set()
    floor = await pool.checkpoints()
    await eventually_async(lambda: pool.all_past(floor), within=30)
    for job in moved:
        assert await pool.reset_since_taken_over(job)
