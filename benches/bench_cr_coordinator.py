"""The local coordinator behind its REST API on loopback: how many progress PUTs it absorbs,
and how long a checkpoint round of a 100-PE region takes with PEs that answer at once.

Targets (issue 8, there measured in the sandbox): ≥ 2,000 progress PUTs/s; ≤ 200 ms from drain
trigger to resume for 100 PEs.
Run: pytest benches/bench_cr_coordinator.py --benchmark-enable --benchmark-group-by=group
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

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


async def _put_many(r: Rig, n: int) -> None:
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        async with sem, r.session.put(f"{r.base}/region/0/pe/{i % PES}/checkpoint", data=b"999") as resp:
            assert resp.status == 204

    await asyncio.gather(*(one(i) for i in range(n)))
    await r.coordinator.idle()


@pytest.mark.benchmark(group="cr_coordinator")
def test_progress_puts(benchmark: Any, rig: Rig) -> None:
    """2,000 checkpoint PUTs (32 in flight), each queued, answered 204 and judged by the FSM."""
    before = rig.coordinator.rejected
    benchmark.pedantic(lambda: rig.loop.run_until_complete(_put_many(rig, PUTS)), rounds=5)
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
