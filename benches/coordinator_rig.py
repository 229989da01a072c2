"""The Kubernetes coordinator (dedicated mode: Manager, informers, REST API) against an in-process
sandbox API server, for the benchmarks: the job's ConsistentRegions, its PE pods at loopback
addresses (never started: ``simulate=False``; the PEs' PUTs leave from those addresses, as the
coordinator admits writes only from the job's own PE pods), and every UDP hint to one socket."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from streams_k8s.consistent.coordinator import Coordinator, setup
from streams_k8s.consistent.coordinator_settings import CLIENT_BURST, CLIENT_QPS, CoordinatorSettings
from streams_k8s.consistent.kinds import CONSISTENT_REGIONS
from streams_k8s.consistent.local import LocalCoordinator
from streams_k8s.consistent.rest import BASE_PATH
from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.settings import RuntimeSettings
from streams_k8s.sandbox import Sandbox

PODS = Resource("", "v1", "pods", "Pod")
JOB = "bench"


def pe_address(pe: int) -> str:
    return f"127.245.{pe // 250}.{pe % 250 + 1}"


def session_from(address: str, timeout: aiohttp.ClientTimeout) -> aiohttp.ClientSession:
    """A session whose connections leave from ``address`` (a loopback one: Linux routes all of
    127.0.0.0/8 to this host), as the real runtime's calls leave from its pod's address."""
    return aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(local_addr=(address, 0)))


def pe_pod(pe: int) -> dict[str, Any]:
    """A running PE pod of the benchmark's job, at its loopback address."""
    labels = {"app": "streams", "svc": "pe", "streams.ibm.com/cr": "true", "streams.ibm.com/job": JOB}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{JOB}-{pe}", "labels": {**labels, "streams.ibm.com/pe": str(pe)}},
        "spec": {"containers": [{"name": "pe", "image": "streams-runtime"}]},
        "status": {"phase": "Running", "podIP": pe_address(pe), "podIPs": [{"ip": pe_address(pe)}]},
    }


def region_object(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "ConsistentRegion",
        "metadata": {
            "name": f"{JOB}-cr{spec['regionIndex']}",
            "namespace": "default",
            "labels": {"streams.ibm.com/job": JOB},
        },
        "spec": spec,
    }


@dataclass
class CoordinatorRig:
    sandbox: Sandbox
    manager: Manager
    task: asyncio.Task[int]
    transport: asyncio.DatagramTransport
    coordinator: Coordinator
    sessions: list[aiohttp.ClientSession]  # one per PE, from its pod's address
    base: str  # the REST API, up to /api/consistentregion

    @property
    def local(self) -> LocalCoordinator:
        return next(iter(self.coordinator.jobs.values())).loop

    async def stop(self) -> None:
        await self.coordinator.close()
        self.manager.stop()
        await self.task
        self.transport.close()
        for session in self.sessions:
            await session.close()
        await self.sandbox.stop()


async def start_rig(
    hints: Callable[[], asyncio.DatagramProtocol], regions: Sequence[dict[str, Any]], pes: int
) -> CoordinatorRig:
    """Regions (ConsistentRegion specs) and ``pes`` PE pods, the coordinator running them, every
    region declared healthy (no PE objects: as its PEs would make it)."""
    from streams_k8s.consistent.fsm import Health

    sandbox = await Sandbox(simulate=False, schema_guard=False).start()
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        hints, local_addr=("127.0.0.1", 0)
    )
    manager = Manager(
        RuntimeSettings(
            kubeconfig=str(sandbox.kubeconfig_path),
            namespace="default",
            bind_address="127.0.0.1",
            health_port=0,
            metrics_port=0,
            leader_election=False,
            qps=CLIENT_QPS,  # as `streams-k8s coordinator` runs
            burst=CLIENT_BURST,
        )
    )
    await manager.connect()
    settings = CoordinatorSettings(
        job=JOB,
        namespace="default",
        bind_address="127.0.0.1",
        api_port=0,
        udp_host="127.0.0.1",
        udp_port=transport.get_extra_info("sockname")[1],
        token_review=False,
    )
    coordinator = await setup(manager, settings)
    for spec in regions:
        await manager.client.create(CONSISTENT_REGIONS, region_object(spec))
    for pe in range(pes):
        pod = pe_pod(pe)
        await manager.client.create(PODS, pod, "default")
        status = {"status": pod["status"]}
        await manager.client.patch(PODS, pod["metadata"]["name"], status, "default", subresource="status")
    task = asyncio.create_task(manager.run(handle_signals=False))
    sessions = [session_from(pe_address(pe), aiohttp.ClientTimeout(total=30)) for pe in range(pes)]
    rig = CoordinatorRig(
        sandbox,
        manager,
        task,
        transport,
        coordinator,
        sessions,
        f"http://127.0.0.1:{coordinator.api_port}{BASE_PATH}",
    )
    async with asyncio.timeout(10):
        while (  # noqa: ASYNC110
            not coordinator.jobs
            or len(coordinator.pods.store.select()) < pes
            or len(rig.local.regions) < len(regions)
        ):
            await asyncio.sleep(0.01)
    for spec in regions:
        rig.local.submit(spec["regionIndex"], Health(True, True))
    await rig.local.idle()
    return rig
