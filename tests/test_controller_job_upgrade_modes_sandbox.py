"""Upgrade modes end to end: an edit of a running job with consistent regions replaces its PEs,
and the regions keep their state per ``spec.upgradeMode``: ``checkpoint-first`` checkpoints every
region before the first old pod goes and resets the new PEs to it (also when the operator stops
in the middle and the next one finishes), ``last-checkpoint`` resets them to the last completed
checkpoint, ``stateless`` starts them clean. The coordinator runs in its pod and the simulated
PE runtime answers drains and resets (`test_controller_checkpoints_sandbox`)."""

from __future__ import annotations

import contextlib
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from cr_cluster import coordinator_accounts
from k8s_support import eventually_async
from operator_support import job_manifest, job_status, operator, wait_for_phase
from repo_paths import shared_testdata
from streams_k8s.api.contract import JOB_LABEL, SVC_LABEL
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.events import EVENTS
from streams_k8s.k8s.kinds import PODS
from streams_k8s.sandbox import Sandbox
from test_controller_checkpoints_sandbox import (
    API_PORT,
    PARTICIPANT,
    SANDBOX,
    ConsistentJob,
    consistent_job,
    coordinated,
    synthetic,
)


async def applied(job: ConsistentJob, generation: int) -> bool:
    status = await job_status(job.client, job.name)
    ready = next((c for c in status.get("conditions") or () if c["type"] == "Ready"), {})
    return status.get("appliedGeneration") == generation and ready.get("status") == "True"


TRACE = {"spec": {"processingElement": {"runtimeTraceLevel": "TRACE"}}}  # every PE replaced


async def edit(job: ConsistentJob) -> None:
    await job.client.patch(JOBS, job.name, TRACE, "default")
    await eventually_async(lambda: applied(job, 2), within=60)
    await eventually_async(lambda: job.all_in("PROCESSING"), within=30)


async def pod_creations(job: ConsistentJob) -> list[float]:
    """Creation times of the job's PE pods (epoch seconds)."""
    pods, _ = await job.client.list_all(
        PODS, "default", label_selector=f"{JOB_LABEL}={job.name},{SVC_LABEL}=pe"
    )
    return [
        datetime.fromisoformat(p["metadata"]["creationTimestamp"].replace("Z", "+00:00")).timestamp()
        for p in pods
    ]


async def checkpointed_first(job: ConsistentJob, before: list[int | None]) -> list[dict[str, Any]]:
    """The regions' statuses once the new PEs have reset to the checkpoint the upgrade asked for:
    a new one (past ``before``, the last completed sequence ids), completed before the first new
    pod was made, so before any old pod went; the drains it held released."""

    async def reset_to_the_checkpoint() -> bool:
        found = await job.statuses()
        return all(
            s.get("lastCompletedReset") == (s.get("checkpointRequest") or {}).get("seqID") for s in found
        )

    await eventually_async(reset_to_the_checkpoint, within=30)
    statuses = await job.statuses()
    for was, status in zip(before, statuses, strict=True):
        asked = status["checkpointRequest"]
        assert asked["seqID"] is not None
        assert asked["seqID"] > (was or 0)
        assert asked["completed"] / 1000 <= min(await pod_creations(job)) + 1
        assert not status.get("drainsHeld")
    return statuses


@SANDBOX
@pytest.mark.parametrize("app", ["generated", "apps.consistent"])
async def test_checkpoint_first_checkpoints_before_the_first_pod_goes_and_resets_the_new_pes_to_it(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, app: str
) -> None:
    """With a generated application of two regions, and with the real ``apps.consistent`` bundle."""
    if app == "generated":
        bundle = synthetic(tmp_path, regions=2)
    else:
        bundle = shared_testdata("apps", "apps.consistent.ConsistentRegion.sab")
    async with consistent_job(sandbox, monkeypatch, tmp_path, bundle, upgradeMode="checkpoint-first") as job:
        before = [s.get("lastCompletedSeqID") for s in await job.statuses()]
        await edit(job)
        statuses = await checkpointed_first(job, before)
        resets = [n.message for n in PARTICIPANT.seen if n.type == "triggerReset"]
        assert {m.split(";")[0] for m in resets} >= {
            f"seqId={s['checkpointRequest']['seqID']}" for s in statuses
        }
        events, _ = await job.client.list_all(EVENTS, "default")
        started = [e["note"] for e in events if e["reason"] == "UpgradeStarted"]
        assert started
        assert "replaced" in started[0]


@SANDBOX
@pytest.mark.parametrize(("mode", "resets"), [("last-checkpoint", True), ("stateless", False)])
async def test_last_checkpoint_resets_the_new_pes_and_stateless_starts_them_clean(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: str, resets: bool
) -> None:
    async with consistent_job(
        sandbox, monkeypatch, tmp_path, synthetic(tmp_path, regions=1), upgradeMode=mode
    ) as job:
        await job.periodic(0.3)  # a completed checkpoint to reset to

        async def checkpointed() -> bool:
            return bool((await job.statuses())[0].get("lastCompletedSeqID"))

        await eventually_async(checkpointed, within=20)
        last = (await job.statuses())[0]["lastCompletedSeqID"]
        heard = len(PARTICIPANT.seen)
        await edit(job)

        async def started() -> bool:
            status = (await job.statuses())[0]
            used = (status.get("lastCompletedReset") or -1) >= last if resets else status.get("cleanStart")
            return bool(used) and status.get("state") == "PROCESSING"

        await eventually_async(started, within=30)
        resets_seen = [n for n in PARTICIPANT.seen[heard:] if n.type == "triggerReset"]
        assert bool(resets_seen) is resets


async def _reached(client: KubeClient, point: str) -> bool:
    """The upgrade has got to ``point``: its record written ahead; its checkpoint requested and
    not complete yet; or the checkpoint done, the pods being replaced."""
    status = await job_status(client, "cj")
    record = status.get("upgrade")
    if record is None:
        return False
    if point == "checkpoint awaited":
        waiting = any(c.get("reason") == "WaitingForCheckpoint" for c in status.get("conditions") or ())
        return waiting and record.get("checkpoint") is None
    if point == "replacing":
        return record.get("checkpoint") is not None
    return True


@SANDBOX
@pytest.mark.parametrize("point", ["written ahead", "checkpoint awaited", "replacing"])
async def test_an_operator_stopped_in_a_checkpoint_first_upgrade_finishes_it_checkpoint_first(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, point: str
) -> None:
    """The operator stops at ``point`` of the upgrade; the next one finishes it: a new checkpoint
    (the one the edit asked for: its request's nonce is the edit's), completed before the first
    new pod, the new PEs reset to it, the drains released."""
    bundle = synthetic(tmp_path, regions=2)
    async with (
        await KubeClient.connect(str(sandbox.kubeconfig_path)) as client,
        contextlib.AsyncExitStack() as first,
    ):
        await first.enter_async_context(operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT))
        await coordinator_accounts(client)
        await client.create(JOBS, job_manifest("cj", bundle, upgradeMode="checkpoint-first"))
        await wait_for_phase(client, "cj", "Submitted", "Running")
        async with coordinated(sandbox, client, "cj") as job:
            before = [s.get("lastCompletedSeqID") for s in await job.statuses()]
            await client.patch(JOBS, "cj", TRACE, "default")
            await eventually_async(lambda: _reached(client, point), within=30, every=0.005)
            await first.aclose()  # the operator stops here
            async with operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT):
                await eventually_async(lambda: applied(job, 2), within=60)
                await checkpointed_first(job, before)
                assert (await job_status(client, "cj"))["phase"] == "Running"
