"""Checkpoints of a 100-PE job with 4 consistent regions (25 PEs each).

1. A checkpoint on request: from the job
controller's request (`controller.jobs.checkpoints.request_checkpoint`: one spec patch per region) to
the moment the regions' status, as an informer sees it, says every region completed a checkpoint
for the nonce (`checkpoint_outcome(..).complete`).

The path measured: spec patch -> watch -> coordinator reconcile -> CheckpointNow -> status written
-> triggerDrain UDP hints -> 100 checkpoint PUTs from the PEs' addresses -> status written (the
sequence id recorded against the nonce) -> watch event. The coordinator runs in dedicated mode
(Manager, informers, REST API) against the sandbox API server in the same process, with the
client rate limit of `streams-k8s coordinator`; the PEs answer each hint at once.

2. A ``checkpoint-first`` upgrade (issue 14): the instance operator as its own process
(`operator_rig`), the job's coordinator as its pod would run it (`cr_cluster.CoordinatorPod`) and
the simulated PE runtime answering drains and resets (`ConsistentRegionParticipant`). A
PE-template edit replaces every PE: time from the edit to the edit's generation Ready, and the
share of it spent waiting for the checkpoint (edit -> the last region's checkpoint completed, as
its status records it), over three runs.

Run: pytest benches/bench_checkpoints.py --benchmark-enable -s   (without --benchmark-enable the
upgrade runs once with 8 PEs, as a smoke test)
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from coordinator_rig import CoordinatorRig, start_rig
from cr_cluster import CoordinatorPod, dedicated
from operator_process import require_operator
from operator_rig import Rig as OperatorRig
from operator_rig import operator_rig, spread, until
from operator_support import job_manifest
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.api.job import Job
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.consistent.fsm import NotificationType
from streams_k8s.controller.jobs.checkpoints import checkpoint_outcome, request_checkpoint
from streams_k8s.controller.kinds import CONSISTENT_REGIONS, JOBS
from streams_k8s.sandbox.cluster.consistent_region import ConsistentRegionParticipant

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


async def _status(rig: OperatorRig, kind: Any, name: str = "") -> list[dict[str, Any]]:
    if name:
        return [(await rig.client.get(kind, name, "default")).get("status") or {}]
    items, _ = await rig.client.list_all(kind, "default", label_selector=f"{JOB_LABEL}=cj")
    return [item.get("status") or {} for item in items]


async def _ready(rig: OperatorRig, generation: int) -> bool:
    (status,) = await _status(rig, JOBS, "cj")
    ready = next((c for c in status.get("conditions") or () if c["type"] == "Ready"), {})
    if status.get("phase") == "Failed":
        raise AssertionError(f"job failed: {status}")
    return status.get("appliedGeneration") == generation and ready.get("status") == "True"


async def _processing(rig: OperatorRig) -> bool:
    regions = await _status(rig, CONSISTENT_REGIONS)
    return len(regions) == REGIONS and all(s.get("state") == "PROCESSING" for s in regions)


async def _checkpoint_first_upgrade(pes: int, tmp: Path) -> dict[str, float]:
    """One upgrade of a freshly submitted job: edit -> Ready and edit -> checkpoint completed."""
    participant = ConsistentRegionParticipant(None, poll_interval=0.1)
    spec = SyntheticSpec(name="cj::App", chains=REGIONS, length=pes // REGIONS, consistent_chains=REGIONS)
    sab = write_sab(tmp / "cj.sab", spec)
    job = job_manifest("cj", sab, fusion={"manual": pes}, upgradeMode="checkpoint-first")
    async with operator_rig(pes, tmp, pe_hooks=participant) as rig:
        await rig.client.create(JOBS, job)
        coordinator = await CoordinatorPod(rig.sandbox, dedicated("cj")).start()
        try:
            participant.connect(coordinator.url)
            await until(lambda: _ready(rig, 1), within=300, every=0.1)
            await until(lambda: _processing(rig), within=120, every=0.1)
            edited, started = time.time(), time.monotonic()
            trace = {"spec": {"processingElement": {"runtimeTraceLevel": "TRACE"}}}
            await rig.client.patch(JOBS, "cj", trace, "default")
            await until(lambda: _ready(rig, 2), within=600, every=0.05)
            elapsed = time.monotonic() - started
            regions = await _status(rig, CONSISTENT_REGIONS)
        finally:
            await coordinator.stop()
            await participant.close()
    completed = [(s.get("checkpointRequest") or {}).get("completed") for s in regions]
    assert all(completed), regions  # every region checkpointed on the upgrade's request
    waited = max(float(c) for c in completed if c) / 1000 - edited
    return {
        "edit_to_ready_s": round(elapsed, 2),
        "checkpoint_wait_s": round(waited, 2),
        "checkpoint_share": round(waited / elapsed, 3),
        "load_average": round(os.getloadavg()[0], 2),
    }


@pytest.mark.benchmark(group="checkpoints")
def test_checkpoint_first_upgrade_100_pes_4_regions(benchmark: Any, tmp_path: Path) -> None:
    require_operator()
    pes, runs = (8, 1) if benchmark.disabled else (PES, 3)
    results: list[dict[str, float]] = []

    def measure() -> None:
        for run in range(runs):
            directory = tmp_path / f"run{run}"
            directory.mkdir()
            results.append(asyncio.run(_checkpoint_first_upgrade(pes, directory)))
            print(f"\ncheckpoint-first upgrade, {pes} PEs, run {run + 1}: {results[-1]}")

    benchmark.pedantic(measure, rounds=1, iterations=1)
    summary = {k: spread([r[k] for r in results]) for k in results[0]}
    benchmark.extra_info.update(summary)
    print(f"\ncheckpoint-first upgrade, {pes} PEs, {runs} runs (min / median / max): {summary}")
