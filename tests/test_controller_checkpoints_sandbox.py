"""Checkpoints on request, held drains and start modes, end to end: the instance operator runs the
job, the coordinator runs in its pod (a process the sandbox's kubelet starts), the simulated PE
runtime answers drains and resets through the coordinator's Service, and
the test drives the regions through `controller.jobs.checkpoints` (what the job controller calls) or
`kubectl`-style spec patches, reading back only what the API server holds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cr_cluster import NAMESPACE, coordinator_accounts, coordinator_url
from k8s_support import eventually_async
from operator_support import free_port, job_manifest, operator, wait_for_phase
from repo_paths import SHARED_TESTDATA
from streams_k8s.api.consistent_region import HISTORY_LENGTH
from streams_k8s.api.contract import JOB_LABEL, LAUNCH_COUNT_LABEL, PE_LABEL, SVC_LABEL
from streams_k8s.api.job import Job, UpgradeMode
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.consistent.manifests import COORDINATOR_SVC
from streams_k8s.controller.jobs.checkpoints import (
    CheckpointOutcome,
    checkpoint_outcome,
    release_hold,
    request_checkpoint,
    request_start,
)
from streams_k8s.controller.kinds import CONSISTENT_REGIONS, JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import PODS
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.consistent_region import ConsistentRegionParticipant
from streams_k8s.sandbox.cluster.pe_identity import is_ready

API_PORT = free_port()
PARTICIPANT = ConsistentRegionParticipant(poll_interval=0.02)  # at the job's coordinator Service
SANDBOX = pytest.mark.sandbox(nodes=2, controller_url=f"http://127.0.0.1:{API_PORT}", pe_hooks=PARTICIPANT)
REAL_BUNDLE = SHARED_TESTDATA / "apps" / "apps.consistent.ConsistentRegion.sab"


@dataclass
class ConsistentJob:
    client: KubeClient
    sandbox: Sandbox
    name: str

    async def restart_coordinator(self) -> None:
        """The coordinator's pod is replaced: a new process starts from the persisted status."""
        selector = f"{JOB_LABEL}={self.name},{SVC_LABEL}={COORDINATOR_SVC}"
        (old,), _ = await self.client.list_all(PODS, NAMESPACE, label_selector=selector)
        await self.client.delete(PODS, old["metadata"]["name"], NAMESPACE)

        async def replaced() -> bool:
            pods, _ = await self.client.list_all(PODS, NAMESPACE, label_selector=selector)
            return any(p["metadata"]["uid"] != old["metadata"]["uid"] and is_ready(p) for p in pods)

        await eventually_async(replaced, within=30)

    async def job(self) -> Job:
        return Job.from_wire(await self.client.get(JOBS, self.name, "default"))

    async def regions(self) -> list[dict[str, Any]]:
        items, _ = await self.client.list_all(
            CONSISTENT_REGIONS, "default", label_selector=f"{JOB_LABEL}={self.name}"
        )
        return sorted(items, key=lambda r: int(r["spec"]["regionIndex"]))

    async def periodic(self, period: float) -> None:
        """Make the first region periodic (the generated regions are operator-driven): it is
        rebuilt from the new description, as the coordinator does on any such edit."""
        name = (await self.regions())[0]["metadata"]["name"]
        spec = {"trigger": "periodic", "period": period}
        await self.client.patch(CONSISTENT_REGIONS, name, {"spec": spec}, "default")

    async def statuses(self) -> list[dict[str, Any]]:
        return [r.get("status") or {} for r in await self.regions()]

    async def outcome(self, nonce: str) -> CheckpointOutcome:
        return checkpoint_outcome(await self.regions(), nonce)

    async def all_in(self, *states: str) -> bool:
        statuses = await self.statuses()
        return bool(statuses) and all(s.get("state") in states for s in statuses)

    async def pe_pod(self, pe: int) -> dict[str, Any] | None:
        """The PE's pod of the latest launch; None between a pod's deletion and its successor."""
        selector = f"{JOB_LABEL}={self.name},{PE_LABEL}={pe}"
        pods, _ = await self.client.list_all(PODS, "default", label_selector=selector)
        return max(pods, key=lambda p: int(p["metadata"]["labels"][LAUNCH_COUNT_LABEL]), default=None)


@asynccontextmanager
async def consistent_job(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, bundle: Path, **spec: Any
) -> AsyncIterator[ConsistentJob]:
    """The job Running, its coordinator up and every region PROCESSING."""
    async with (
        await KubeClient.connect(str(sandbox.kubeconfig_path)) as client,
        operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT),
    ):
        await coordinator_accounts(client)
        await client.create(JOBS, job_manifest("cj", bundle, **spec))
        await wait_for_phase(client, "cj", "Submitted", "Running")
        async with coordinated(sandbox, client, "cj") as job:
            yield job


@asynccontextmanager
async def coordinated(sandbox: Sandbox, client: KubeClient, name: str) -> AsyncIterator[ConsistentJob]:
    """The submitted job's coordinator up in its pod, the simulated PEs answering it, until the
    job is Running with every region PROCESSING."""
    job = ConsistentJob(client, sandbox, name)
    try:
        await coordinator_accounts(client)  # made before the job's, its pod starts at once
        await coordinator_url(sandbox, client, name)
        await wait_for_phase(client, name, "Running")
        await eventually_async(lambda: job.all_in("PROCESSING"), within=20)
        yield job
    finally:
        PARTICIPANT.seen.clear()


def synthetic(tmp_path: Path, regions: int = 2) -> Path:
    spec = SyntheticSpec(chains=regions, length=2, consistent_chains=regions)
    return write_sab(tmp_path / "app.sab", spec)


async def checkpoint_and_wait(job: ConsistentJob, nonce: str, hold: bool = False) -> CheckpointOutcome:
    await request_checkpoint(job.client, await job.job(), nonce, hold=hold)
    found: list[CheckpointOutcome] = []

    async def complete() -> bool:
        found[:] = [await job.outcome(nonce)]
        return found[0].complete and not found[0].failed

    await eventually_async(complete, within=20)
    return found[0]


@SANDBOX
async def test_a_checkpoint_on_request_completes_a_new_sequence_id_in_every_region(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async with consistent_job(
        sandbox, monkeypatch, tmp_path, synthetic(tmp_path), fusion={"manual": 3}
    ) as job:
        before = [s.get("lastCompletedSeqID", 0) for s in await job.statuses()]
        outcome = await checkpoint_and_wait(job, "first")
        assert sorted(outcome.regions) == [0, 1]
        statuses = await job.statuses()
        for index, status in enumerate(statuses):
            seq_id = outcome.regions[index].seq_id
            assert seq_id is not None
            assert seq_id > before[index]
            assert status["lastCompletedSeqID"] == seq_id
            assert status["checkpointRequest"]["nonce"] == "first"
            assert status["checkpointRequest"]["seqID"] == seq_id
            assert status["checkpointRequest"]["completed"] >= status["checkpointRequest"]["requested"]
            entry = status["history"][-1]
            assert (entry["kind"], entry["seqID"]) == ("checkpoint", seq_id)
            assert entry["duration"] == entry["completion"] - entry["start"] >= 0
            assert status["checkpointRequested"] is False
        # The same nonce again is the same request: not even written, nothing new is drained.
        regions = await job.regions()
        await request_checkpoint(job.client, await job.job(), "first", hold=False, regions=regions)
        generations = [r["metadata"]["generation"] for r in regions]
        assert [r["metadata"]["generation"] for r in await job.regions()] == generations
        completed = [s["lastCompletedSeqID"] for s in statuses]
        assert [s["lastCompletedSeqID"] for s in await job.statuses()] == completed
        # With kubectl alone: a new nonce on one region's spec.
        name = (await job.regions())[1]["metadata"]["name"]
        await job.client.patch(
            CONSISTENT_REGIONS, name, {"spec": {"checkpointRequest": "by-hand"}}, "default"
        )

        async def answered() -> bool:
            status = (await job.statuses())[1]
            return (status.get("checkpointRequest") or {}).get("seqID") == statuses[1][
                "lastCompletedSeqID"
            ] + 1

        await eventually_async(answered, within=20)
        # The region was not rebuilt by the spec edit: no reset happened.
        assert all(n.type != "triggerReset" for n in PARTICIPANT.seen)
        # A malformed request is refused by the API server; the region runs on, untouched.
        for bad in ({"checkpointRequest": ""}, {"startRequest": {"nonce": "x", "mode": "sideways"}}):
            with pytest.raises(ApiError) as refused:
                await job.client.patch(CONSISTENT_REGIONS, name, {"spec": bad}, "default")
            assert refused.value.status == 422
        assert (await job.statuses())[1]["state"] == "PROCESSING"


@SANDBOX
async def test_held_drains_take_no_periodic_checkpoint_until_released_and_history_is_bounded(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async with consistent_job(sandbox, monkeypatch, tmp_path, synthetic(tmp_path, regions=1)) as job:
        await job.periodic(0.05)

        async def checkpoints_beyond(seq_id: int) -> bool:
            return int((await job.statuses())[0].get("lastCompletedSeqID", 0)) > seq_id

        await eventually_async(lambda: checkpoints_beyond(HISTORY_LENGTH + 2), within=30)
        history = (await job.statuses())[0]["history"]
        assert len(history) == HISTORY_LENGTH
        seq_ids = [e["seqID"] for e in history if e["kind"] == "checkpoint"]
        assert seq_ids == sorted(seq_ids)

        outcome = await checkpoint_and_wait(job, "before-upgrade", hold=True)
        held = outcome.regions[0].seq_id
        assert held is not None
        await eventually_async(lambda: _held(job), within=10)
        drains = _drains(PARTICIPANT)
        await asyncio.sleep(1.0)  # twenty periods
        status = (await job.statuses())[0]
        assert status["lastCompletedSeqID"] == held
        assert status["state"] == "PROCESSING"
        assert _drains(PARTICIPANT) == drains

        await release_hold(job.client, await job.job())
        await eventually_async(lambda: checkpoints_beyond(held), within=10)
        assert (await job.statuses())[0]["drainsHeld"] is False
        released = await job.regions()
        assert "holdDrains" not in released[0]["spec"]
        await release_hold(job.client, await job.job(), regions=released)  # again: nothing written
        generation = released[0]["metadata"]["generation"]
        assert (await job.regions())[0]["metadata"]["generation"] == generation


@SANDBOX
async def test_a_restarted_coordinator_keeps_the_hold_and_does_not_answer_a_request_twice(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async with consistent_job(sandbox, monkeypatch, tmp_path, synthetic(tmp_path, regions=1)) as job:
        await job.periodic(0.05)
        outcome = await checkpoint_and_wait(job, "held", hold=True)
        await eventually_async(lambda: _held(job), within=10)
        drains = _drains(PARTICIPANT)
        await job.restart_coordinator()
        # Restarted, the region resets to the held checkpoint, then processes, still held.
        await eventually_async(lambda: _reset_to(job, outcome.regions[0].seq_id), within=20)
        await asyncio.sleep(1.0)  # twenty periods
        status = (await job.statuses())[0]
        assert status["state"] == "PROCESSING"
        assert status["drainsHeld"] is True
        assert status["lastCompletedSeqID"] == outcome.regions[0].seq_id
        assert status["checkpointRequest"]["seqID"] == outcome.regions[0].seq_id
        assert _drains(PARTICIPANT) == drains  # the new process triggered none: the request was answered


async def _reset_to(job: ConsistentJob, seq_id: int | None) -> bool:
    status = (await job.statuses())[0]
    return status.get("lastCompletedReset") == seq_id and status.get("state") == "PROCESSING"


async def _held(job: ConsistentJob) -> bool:
    return bool((await job.statuses())[0].get("drainsHeld"))


def _drains(participant: ConsistentRegionParticipant) -> int:
    return sum(1 for n in participant.seen if n.type == "triggerDrain")


@SANDBOX
@pytest.mark.parametrize(
    ("mode", "resets"),
    [(UpgradeMode.STATELESS, False), (UpgradeMode.LAST_CHECKPOINT, True)],
)
async def test_replaced_pes_start_clean_or_reset_to_the_last_checkpoint(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: UpgradeMode, resets: bool
) -> None:
    async with consistent_job(sandbox, monkeypatch, tmp_path, synthetic(tmp_path, regions=1)) as job:
        outcome = await checkpoint_and_wait(job, "kept")
        seq_id = outcome.regions[0].seq_id
        region = (await job.regions())[0]
        pe = int(region["spec"]["pesInRegion"][0])
        await request_start(job.client, await job.job(), mode, "upgrade-1", pes=[pe])

        async def taken_on() -> bool:
            return ((await job.statuses())[0].get("startRequest") or {}).get("nonce") == "upgrade-1"

        await eventually_async(taken_on, within=10)
        old = await job.pe_pod(pe)
        assert old is not None
        assert job.sandbox.cluster is not None
        await job.sandbox.cluster.fail_pod("default", old["metadata"]["name"], reason="Replaced")

        async def started_again() -> bool:
            """The new pod runs and the region used the request (a reset to the checkpoint, or none)."""
            pod = await job.pe_pod(pe)
            if pod is None:
                return False
            status = (await job.statuses())[0]
            used = status.get("lastCompletedReset") == seq_id if resets else status.get("cleanStart")
            replaced = pod["metadata"]["uid"] != old["metadata"]["uid"]
            return replaced and bool(used) and status.get("state") == "PROCESSING"

        await eventually_async(started_again, within=30)
        status = (await job.statuses())[0]
        reset_to = [n.message for n in PARTICIPANT.seen if n.type == "triggerReset"]
        if resets:
            assert reset_to
            assert reset_to[-1].startswith(f"seqId={seq_id};")
            assert status["lastCompletedReset"] == seq_id
            assert status["history"][-1]["kind"] == "reset"
        else:
            assert reset_to == []
            assert status["cleanStart"] is True
        assert status["startClean"] is False  # used up: the next failure resets as usual


@SANDBOX
async def test_the_real_consistent_bundle_checkpoints_on_request(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if not REAL_BUNDLE.is_file():
        pytest.skip(f"shared test data not present: {REAL_BUNDLE}")
    async with consistent_job(sandbox, monkeypatch, tmp_path, REAL_BUNDLE) as job:
        outcome = await checkpoint_and_wait(job, "real")
        assert list(outcome.regions) == [0]
        assert (await job.statuses())[0]["lastCompletedSeqID"] == outcome.regions[0].seq_id == 1
        assert "completed: cj-cr0@1" in outcome.summary()
