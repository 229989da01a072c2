"""A checkpoint on request of a 100-PE job with 4 consistent regions (25 PEs each): from the job
controller's request (`controller.checkpoints.request_checkpoint`: one spec patch per region) to
the moment the regions' status, as an informer sees it, says every region completed a checkpoint
for the nonce (`checkpoint_outcome(..).complete`).

The path measured: spec patch -> watch -> coordinator reconcile -> CheckpointNow -> status written
-> triggerDrain UDP hints -> 100 checkpoint PUTs from the PEs' addresses -> status written (the
sequence id recorded against the nonce) -> watch event. The coordinator runs in dedicated mode
(Manager, informers, REST API) against the sandbox API server in the same process, with the
client rate limit of `streams-k8s coordinator`; the PEs answer each hint at once.

Stands in for issue 14's "checkpoint-first upgrade of a 100-PE job with 4 regions" until the
upgrade itself (the lifecycle branch) can be measured: this is the checkpoint part of it.
Run: pytest benches/bench_checkpoints.py --benchmark-enable
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import pytest

from bench_cr_coordinator import PODS, pe_address, pe_pod
from streams_k8s.api.job import Job
from streams_k8s.consistent.fsm import Health, NotificationType
from streams_k8s.consistent.rest import BASE_PATH
from streams_k8s.controller.checkpoints import checkpoint_outcome, request_checkpoint
from streams_k8s.sandbox.pe_runtime import session_from

REGIONS = 4
PES_PER_REGION = 25
PES = REGIONS * PES_PER_REGION
JOB = Job.model_validate(
    {
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {"bundle": {"name": "bench.sab", "file": {"path": "/bench.sab"}}},
    }
)


@dataclass
class Rig:
    loop: asyncio.AbstractEventLoop
    coordinator: Any  # streams_k8s.consistent.coordinator.Coordinator
    sessions: list[aiohttp.ClientSession]  # one per PE, from its pod's address
    base: str
    nonces: Iterator[int] = field(default_factory=itertools.count)
    drained: list[int] = field(default_factory=lambda: [0] * REGIONS)  # hints seen, per region
    reports: set[asyncio.Task[None]] = field(default_factory=set)
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class InstantPes(asyncio.DatagramProtocol):
    """The hints of all 100 PEs arrive at one socket: the n-th triggerDrain hint of region r makes
    the region's n-th PE (mod 25) report its checkpoint at once."""

    def __init__(self, holder: dict[str, Rig]) -> None:
        self.holder = holder

    def datagram_received(self, data: bytes, addr: Any) -> None:
        r = self.holder["rig"]
        for region, note in orjson.loads(data).items():
            if note["type"] != NotificationType.TRIGGER_DRAIN.value:
                continue
            index = int(region)
            pe = index * PES_PER_REGION + r.drained[index] % PES_PER_REGION
            r.drained[index] += 1
            seq = note["message"].removeprefix("seqId=").encode()
            task = asyncio.create_task(_report(r, index, pe, seq))
            r.reports.add(task)
            task.add_done_callback(r.reports.discard)


async def _report(r: Rig, region: int, pe: int, seq: bytes) -> None:
    async with r.sessions[pe].put(f"{r.base}/region/{region}/pe/{pe}/checkpoint", data=seq) as resp:
        assert resp.status == 204, await resp.text()


def region_object(index: int) -> dict[str, Any]:
    pes = list(range(index * PES_PER_REGION, (index + 1) * PES_PER_REGION))
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "ConsistentRegion",
        "metadata": {
            "name": f"bench-cr{index}",
            "namespace": "default",
            "labels": {"streams.ibm.com/job": "bench"},
        },
        "spec": {
            "regionIndex": index,
            "trigger": "periodic",
            "period": 3600.0,  # only the requests drain
            "drainTimeout": 60.0,
            "pesInRegion": pes,
            "operatorsToStartRegionMap": {f"op{index}": True},
        },
    }


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    from streams_k8s.consistent.coordinator import setup
    from streams_k8s.consistent.coordinator_settings import CLIENT_BURST, CLIENT_QPS, CoordinatorSettings
    from streams_k8s.consistent.kinds import CONSISTENT_REGIONS
    from streams_k8s.k8s.manager import Manager
    from streams_k8s.k8s.settings import RuntimeSettings
    from streams_k8s.sandbox import Sandbox

    loop = asyncio.new_event_loop()
    holder: dict[str, Rig] = {}

    async def start() -> tuple[Sandbox, Manager, asyncio.Task[int], asyncio.DatagramTransport]:
        sandbox = await Sandbox(simulate=False, schema_guard=False).start()
        transport, _ = await loop.create_datagram_endpoint(
            lambda: InstantPes(holder), local_addr=("127.0.0.1", 0)
        )
        manager = Manager(
            RuntimeSettings(
                kubeconfig=str(sandbox.kubeconfig_path),
                namespace="default",
                bind_address="127.0.0.1",
                health_port=0,
                metrics_port=0,
                leader_election=False,
                qps=CLIENT_QPS,
                burst=CLIENT_BURST,
            )
        )
        await manager.connect()
        settings = CoordinatorSettings(
            job="bench",
            namespace="default",
            bind_address="127.0.0.1",
            api_port=0,
            udp_host="127.0.0.1",
            udp_port=transport.get_extra_info("sockname")[1],
            token_review=False,
        )
        coordinator = await setup(manager, settings)
        for index in range(REGIONS):
            await manager.client.create(CONSISTENT_REGIONS, region_object(index))
        for pe in range(PES):  # never started (simulate=False); the PEs' PUTs leave from their addresses
            pod = pe_pod(pe)
            await manager.client.create(PODS, pod, "default")
            await manager.client.patch(
                PODS, pod["metadata"]["name"], {"status": pod["status"]}, "default", subresource="status"
            )
        task = asyncio.create_task(manager.run(handle_signals=False))
        async with asyncio.timeout(10):
            while not coordinator.jobs or len(coordinator.pods.store.select()) < PES:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        sessions = [session_from(pe_address(pe), aiohttp.ClientTimeout(total=30)) for pe in range(PES)]
        r = holder["rig"] = Rig(
            loop, coordinator, sessions, f"http://127.0.0.1:{coordinator.api_port}{BASE_PATH}"
        )
        coordinator.regions.add_handler(lambda kind, old, new: r.changed.set())
        local = next(iter(coordinator.jobs.values())).loop
        async with asyncio.timeout(10):
            while len(local.regions) < REGIONS:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        for index in range(REGIONS):  # no PE objects: the regions are declared healthy directly
            local.submit(index, Health(True, True))
        await local.idle()
        return sandbox, manager, task, transport

    sandbox, manager, task, transport = loop.run_until_complete(start())
    yield holder["rig"]

    async def stop() -> None:
        await holder["rig"].coordinator.close()
        manager.stop()
        await task
        transport.close()
        for session in holder["rig"].sessions:
            await session.close()
        await sandbox.stop()

    loop.run_until_complete(stop())
    loop.close()


async def _checkpoint(r: Rig) -> int:
    """One request, until the informer's copy of every region records its answer; the lowest
    sequence id completed."""
    nonce = f"bench-{next(r.nonces)}"
    await request_checkpoint(r.coordinator.manager.client, JOB, nonce, hold=False)
    async with asyncio.timeout(20):
        while True:
            r.changed.clear()
            outcome = checkpoint_outcome(r.coordinator.regions.store.select("default"), nonce)
            if outcome.complete and len(outcome.regions) == REGIONS:
                return min(a.seq_id or 0 for a in outcome.regions.values())
            await r.changed.wait()


@pytest.mark.benchmark(group="checkpoints")
def test_checkpoint_on_request_100_pes_4_regions(benchmark: Any, rig: Rig) -> None:
    first = rig.loop.run_until_complete(_checkpoint(rig))
    benchmark.pedantic(lambda: rig.loop.run_until_complete(_checkpoint(rig)), rounds=10)
    assert rig.loop.run_until_complete(_checkpoint(rig)) > first
