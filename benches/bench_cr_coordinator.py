"""The local coordinator behind its REST API on loopback: how many progress PUTs it absorbs,
and how long a checkpoint round of a 100-PE region takes with PEs that answer at once.

Targets (issue 8, there measured in the sandbox): ≥ 2,000 progress PUTs/s; ≤ 200 ms from drain
trigger to resume for 100 PEs.
Run: pytest benches/bench_cr_coordinator.py --benchmark-enable --benchmark-group-by=group
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from coordinator_rig import CoordinatorRig, start_rig
from streams_k8s.api.consistent_region import ConsistentRegionSpec, ConsistentRegionStatus
from streams_k8s.consistent.fsm import Health, NotificationType, Notify, RegionMachine, TimerFired, TimerKind
from streams_k8s.consistent.local import LocalCoordinator
from streams_k8s.consistent.rest import BASE_PATH, consistent_region_api

PES = 100
PUTS = 2_000
CONCURRENCY = 32


@dataclass
class Rig:
    loop: asyncio.AbstractEventLoop
    coordinator: LocalCoordinator
    session: aiohttp.ClientSession
    base: str
    resumed: asyncio.Event = field(default_factory=asyncio.Event)
    writes: int = 0
    reports: set[asyncio.Task[None]] = field(default_factory=set)


async def _report(r: Rig, pe: int, seq: bytes) -> None:
    async with r.session.put(f"{r.base}/region/0/pe/{pe}/checkpoint", data=seq) as resp:
        assert resp.status == 204


def region() -> RegionMachine:
    spec = ConsistentRegionSpec.model_validate(
        {
            "regionIndex": 0,
            "trigger": "periodic",
            "period": 3600.0,  # rounds are triggered by the benchmark
            "drainTimeout": 60.0,
            "pesInRegion": list(range(PES)),
        }
    )
    return RegionMachine(spec)


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    loop = asyncio.new_event_loop()
    holder: dict[str, Rig] = {}

    async def persist(index: int, status: ConsistentRegionStatus) -> None:
        # Stands for the status write: serialise what would be sent to the API server.
        status.to_wire()
        holder["rig"].writes += 1

    async def push(index: int, pes: Sequence[int], note: Notify) -> None:
        r = holder["rig"]
        if note.type is NotificationType.TRIGGER_DRAIN:
            seq = note.message.removeprefix("seqId=")
            # Instant PEs: each reports its checkpoint as soon as it hears of the drain.
            for pe in pes:
                task = asyncio.create_task(_report(r, pe, seq.encode()))
                r.reports.add(task)
                task.add_done_callback(r.reports.discard)
        elif note.type is NotificationType.RESUME_SUBMISSION:
            r.resumed.set()

    async def start() -> tuple[web.AppRunner, asyncio.Task[None]]:
        coordinator = LocalCoordinator([region()], persist=persist, push=push)
        app = web.Application()
        app.add_subapp(BASE_PATH, consistent_region_api(coordinator))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        connector = aiohttp.TCPConnector(limit=CONCURRENCY)
        session = aiohttp.ClientSession(connector=connector)
        holder["rig"] = Rig(loop, coordinator, session, f"http://127.0.0.1:{port}{BASE_PATH}")
        task = asyncio.create_task(coordinator.run())
        coordinator.submit(0, Health(True, True))
        await coordinator.idle()
        return runner, task

    runner, task = loop.run_until_complete(start())
    yield holder["rig"]

    async def stop() -> None:
        task.cancel()
        await holder["rig"].session.close()
        await runner.cleanup()

    loop.run_until_complete(stop())
    loop.close()


async def _put_many(
    session_of: Callable[[int], aiohttp.ClientSession], base: str, n: int, coordinator: LocalCoordinator
) -> None:
    """n checkpoint PUTs (each from its PE's session), CONCURRENCY in flight, then until the
    coordinator has judged them all."""
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        pe = i % PES
        async with sem, session_of(pe).put(f"{base}/region/0/pe/{pe}/checkpoint", data=b"999") as resp:
            assert resp.status == 204, await resp.text()

    await asyncio.gather(*(one(i) for i in range(n)))
    await coordinator.idle()


@pytest.mark.benchmark(group="cr_coordinator")
def test_progress_puts(benchmark: Any, rig: Rig) -> None:
    """2,000 checkpoint PUTs (32 in flight), each queued, answered 204 and judged by the FSM."""
    before = rig.coordinator.rejected
    benchmark.pedantic(
        lambda: rig.loop.run_until_complete(
            _put_many(lambda pe: rig.session, rig.base, PUTS, rig.coordinator)
        ),
        rounds=5,
    )
    refused = rig.coordinator.rejected - before  # not draining: every report refused, harmlessly
    assert refused > 0
    assert refused % PUTS == 0
    benchmark.extra_info["puts"] = PUTS


async def _round(r: Rig) -> None:
    r.resumed.clear()
    machine = r.coordinator.regions[0]
    r.coordinator.submit(0, TimerFired(TimerKind.DRAIN_PERIOD, machine.timer_seq_id))
    await asyncio.wait_for(r.resumed.wait(), 10)
    await r.coordinator.idle()


@pytest.mark.benchmark(group="cr_coordinator")
def test_checkpoint_round_100_pes(benchmark: Any, rig: Rig) -> None:
    """Drain trigger -> 100 PEs notified -> 100 checkpoint PUTs -> resumeSubmission."""
    first = rig.coordinator.regions[0].snapshot()["lastCompletedSeqID"]
    benchmark.pedantic(lambda: rig.loop.run_until_complete(_round(rig)), rounds=20)
    assert rig.coordinator.regions[0].snapshot()["lastCompletedSeqID"] > first
    assert rig.coordinator.regions[0].state.value == "PROCESSING"


# ---- the Kubernetes coordinator in the sandbox ----------------------------------------------
#
# The coordinator (dedicated mode, Manager + informers) against the sandbox API server, with the
# region's status written to the ConsistentRegion status subresource before every notification.
# Instant PEs: the UDP hints of the region's 100 PEs all arrive at one loopback socket; each
# triggerDrain datagram makes the next PE report its checkpoint at once.


@dataclass
class KubeRig:
    loop: asyncio.AbstractEventLoop
    rig: CoordinatorRig
    resumed: asyncio.Event = field(default_factory=asyncio.Event)
    resumed_seq: int = 0  # highest sequence id a resumeSubmission hint carried
    drained: int = 0
    reports: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def local(self) -> LocalCoordinator:
        return self.rig.local

    @property
    def sessions(self) -> list[aiohttp.ClientSession]:
        return self.rig.sessions

    @property
    def base(self) -> str:
        return self.rig.base


class InstantPes(asyncio.DatagramProtocol):
    def __init__(self, holder: dict[str, KubeRig]) -> None:
        self.holder = holder

    def datagram_received(self, data: bytes, addr: Any) -> None:
        r = self.holder["rig"]
        note = orjson.loads(data)["0"]
        if note["type"] == NotificationType.TRIGGER_DRAIN.value:
            pe = r.drained % PES
            r.drained += 1
            seq = note["message"].removeprefix("seqId=").encode()
            task = asyncio.create_task(_report_to(r.sessions[pe], r.base, pe, seq))
            r.reports.add(task)
            task.add_done_callback(r.reports.discard)
        elif note["type"] == NotificationType.RESUME_SUBMISSION.value:
            # One hint per PE: only the first of a round's 100 counts.
            seq = int(note["message"].split(";")[0].removeprefix("seqId="))
            if seq > r.resumed_seq:
                r.resumed_seq = seq
                r.resumed.set()


async def _report_to(session: aiohttp.ClientSession, base: str, pe: int, seq: bytes) -> None:
    async with session.put(f"{base}/region/0/pe/{pe}/checkpoint", data=seq) as resp:
        assert resp.status == 204


@pytest.fixture(scope="module")
def kube_rig() -> Iterator[KubeRig]:
    loop = asyncio.new_event_loop()
    holder: dict[str, KubeRig] = {}
    rig = loop.run_until_complete(start_rig(lambda: InstantPes(holder), [region().spec.to_wire()], PES))
    holder["rig"] = KubeRig(loop, rig)
    yield holder["rig"]
    loop.run_until_complete(rig.stop())
    loop.close()


@pytest.mark.benchmark(group="cr_coordinator_sandbox")
def test_sandbox_progress_puts(benchmark: Any, kube_rig: KubeRig) -> None:
    """2,000 checkpoint PUTs to the Kubernetes coordinator, each answered 204 and judged."""
    before = kube_rig.local.rejected
    r = kube_rig
    benchmark.pedantic(
        lambda: r.loop.run_until_complete(_put_many(r.sessions.__getitem__, r.base, PUTS, r.local)), rounds=5
    )
    assert kube_rig.local.rejected - before > 0
    benchmark.extra_info["puts"] = PUTS


async def _kube_round(r: KubeRig) -> None:
    machine = r.local.regions[0]
    draining = machine.snapshot()["currentSeqID"]
    r.local.submit(0, TimerFired(TimerKind.DRAIN_PERIOD, machine.timer_seq_id))
    async with asyncio.timeout(10):
        while r.resumed_seq <= draining:  # the resume after drain N names N + 1
            r.resumed.clear()
            await r.resumed.wait()
    await r.local.idle()


@pytest.mark.benchmark(group="cr_coordinator_sandbox")
def test_sandbox_checkpoint_round_100_pes(benchmark: Any, kube_rig: KubeRig) -> None:
    """Drain trigger -> status written -> 100 UDP hints -> 100 checkpoint PUTs -> status
    written -> resumeSubmission, with every status write confirmed by the sandbox API server."""
    first = kube_rig.local.regions[0].snapshot()["lastCompletedSeqID"]
    benchmark.pedantic(lambda: kube_rig.loop.run_until_complete(_kube_round(kube_rig)), rounds=10)
    assert kube_rig.local.regions[0].snapshot()["lastCompletedSeqID"] > first
    coordinator = kube_rig.rig.coordinator
    status = kube_rig.loop.run_until_complete(
        coordinator.manager.client.get(coordinator.regions.resource, "bench-cr0", "default")
    )["status"]
    assert status["lastCompletedSeqID"] == kube_rig.local.regions[0].snapshot()["lastCompletedSeqID"]
