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

import orjson
import pytest

from coordinator_rig import CoordinatorRig, start_rig
from streams_k8s.api.job import Job
from streams_k8s.consistent.fsm import NotificationType
from streams_k8s.controller.checkpoints import checkpoint_outcome, request_checkpoint

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
    rig: CoordinatorRig
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
    async with r.rig.sessions[pe].put(f"{r.rig.base}/region/{region}/pe/{pe}/checkpoint", data=seq) as resp:
        assert resp.status == 204, await resp.text()


def region_spec(index: int) -> dict[str, Any]:
    return {
        "regionIndex": index,
        "trigger": "periodic",
        "period": 3600.0,  # only the requests drain
        "drainTimeout": 60.0,
        "pesInRegion": list(range(index * PES_PER_REGION, (index + 1) * PES_PER_REGION)),
        "operatorsToStartRegionMap": {f"op{index}": True},
    }


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    loop = asyncio.new_event_loop()
    holder: dict[str, Rig] = {}
    regions = [region_spec(index) for index in range(REGIONS)]
    started = loop.run_until_complete(start_rig(lambda: InstantPes(holder), regions, PES))
    r = holder["rig"] = Rig(loop, started)
    started.coordinator.regions.add_handler(lambda kind, old, new: r.changed.set())
    yield r
    loop.run_until_complete(started.stop())
    loop.close()


async def _checkpoint(r: Rig) -> int:
    """One request, until the informer's copy of every region records its answer; the lowest
    sequence id completed."""
    nonce = f"bench-{next(r.nonces)}"
    await request_checkpoint(r.rig.manager.client, JOB, nonce, hold=False)
    async with asyncio.timeout(20):
        while True:
            r.changed.clear()
            outcome = checkpoint_outcome(r.rig.coordinator.regions.store.select("default"), nonce)
            if outcome.complete and len(outcome.regions) == REGIONS:
                return min(a.seq_id or 0 for a in outcome.regions.values())
            await r.changed.wait()


@pytest.mark.benchmark(group="checkpoints")
def test_checkpoint_on_request_100_pes_4_regions(benchmark: Any, rig: Rig) -> None:
    first = rig.loop.run_until_complete(_checkpoint(rig))
    benchmark.pedantic(lambda: rig.loop.run_until_complete(_checkpoint(rig)), rounds=10)
    assert rig.loop.run_until_complete(_checkpoint(rig)) > first
