"""``checkpoint-first`` where it waits, end to end with the coordinator running: a checkpoint that
does not complete holds the edit past ``checkpointTimeoutSeconds`` (nothing replaced, never a
stateless start; SpecApplied CheckpointOverdue, Stalled, a Warning Event) until it does, or until
the edit is rolled back (its hold released; a hold the user set stays, through a checkpoint-first
edit too); a suspend checkpoints every region before the first pod goes, and the resume resets the
regions to that checkpoint."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from job_inventory import pe_pods
from k8s_support import eventually_async
from operator_support import condition, job_status, wait_for_phase
from streams_k8s.controller.jobs.checkpoints import HOLD_ANNOTATION
from streams_k8s.controller.kinds import CONSISTENT_REGIONS, JOBS
from streams_k8s.k8s.events import EVENTS
from streams_k8s.sandbox import Sandbox
from test_controller_checkpoints_sandbox import PARTICIPANT, SANDBOX, consistent_job, synthetic
from test_controller_job_edits_sandbox import _no_pods
from test_controller_job_upgrade_modes_sandbox import TRACE, applied


@SANDBOX
async def test_a_checkpoint_that_never_completes_holds_the_edit_past_its_timeout_replacing_nothing(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec = {
        "upgradeMode": "checkpoint-first",
        "checkpointTimeoutSeconds": 2,
        "submissionTimeOutInSeconds": 600,
    }
    async with consistent_job(sandbox, monkeypatch, tmp_path, synthetic(tmp_path, regions=1), **spec) as job:
        pods = await pe_pods(job.client, job.name)
        PARTICIPANT.skip_drains = 10**6  # the PEs never answer a drain: the checkpoint never completes
        try:
            await job.client.patch(JOBS, job.name, TRACE, "default")

            async def overdue() -> bool:
                status = await job_status(job.client, job.name)
                reasons = {c["type"]: c["reason"] for c in status.get("conditions") or ()}
                return reasons.get("SpecApplied") == "CheckpointOverdue"

            await eventually_async(overdue, within=20)
            await asyncio.sleep(1.5)  # and it keeps waiting
            status = await job_status(job.client, job.name)
            assert (status["phase"], status["appliedGeneration"]) == ("Upgrading", 1)
            stalled = condition(status, "Stalled")
            assert (stalled["status"], stalled["reason"]) == ("True", "CheckpointOverdue")
            assert "checkpointTimeoutSeconds=2" in stalled["message"]
            assert "cj-cr0 pending" in stalled["message"]  # the region it waits for
            assert await pe_pods(job.client, job.name) == pods  # nothing replaced
            (region,) = await job.regions()
            assert region["spec"]["holdDrains"] is True
            assert "startRequest" not in region["spec"]  # never told to start clean (or at all)
            assert not (region.get("status") or {}).get("startClean")
            events, _ = await job.client.list_all(EVENTS, "default")
            warned = [e for e in events if e["reason"] == "CheckpointOverdue"]
            assert [e["type"] for e in warned] == ["Warning"]
        finally:
            PARTICIPANT.skip_drains = 0

        # The PEs answer again (a new coordinator process drains again): the edit goes on from there.
        await job.restart_coordinator()
        await eventually_async(lambda: applied(job, 2), within=60)
        status = await job_status(job.client, job.name)
        assert condition(status, "Stalled")["status"] == "False"
        after = await pe_pods(job.client, job.name)
        assert {i: n for i, (_, n) in after.items()} == {i: n + 1 for i, (_, n) in pods.items()}
        (region,) = await job.regions()
        assert region["status"]["checkpointRequest"]["seqID"] is not None
        assert "holdDrains" not in region["spec"]  # released once the edit runs


@SANDBOX
async def test_suspend_checkpoints_before_the_first_pod_goes_and_resume_resets_to_that_checkpoint(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async with consistent_job(
        sandbox, monkeypatch, tmp_path, synthetic(tmp_path, regions=2), upgradeMode="checkpoint-first"
    ) as job:
        before = [s.get("lastCompletedSeqID") or 0 for s in await job.statuses()]
        pods = await pe_pods(job.client, job.name)
        await job.client.patch(JOBS, job.name, {"spec": {"state": "Suspended"}}, "default")
        await wait_for_phase(job.client, job.name, "Suspended", within=40)
        await eventually_async(lambda: _no_pods(job.client, job.name), within=20)
        statuses = await job.statuses()
        deleted = [
            r.time
            for r in sandbox.requests
            if r.method == "DELETE" and re.search(rf"/pods/{job.name}-\d+-", r.path) and r.status < 300
        ]
        assert deleted
        for was, status in zip(before, statuses, strict=True):
            asked = status["checkpointRequest"]
            assert asked["seqID"] > was  # a new checkpoint, on the suspend's request
            assert asked["completed"] / 1000 <= min(deleted)  # complete before the first pod went

        await job.client.patch(JOBS, job.name, {"spec": {"state": "Running"}}, "default")
        await eventually_async(lambda: applied(job, 3), within=60)
        resumed = await pe_pods(job.client, job.name)
        assert {i: n for i, (_, n) in resumed.items()} == {i: n + 1 for i, (_, n) in pods.items()}

        async def reset_to_the_checkpoint() -> bool:
            found = await job.statuses()
            return all(
                s.get("lastCompletedReset") == was["checkpointRequest"]["seqID"]
                and s.get("state") == "PROCESSING"
                for s, was in zip(found, statuses, strict=True)
            )

        await eventually_async(reset_to_the_checkpoint, within=30)
        assert not any(s.get("startClean") for s in await job.statuses())
        assert all("holdDrains" not in r["spec"] for r in await job.regions())


@SANDBOX
async def test_a_rolled_back_checkpoint_first_edit_releases_its_hold_and_a_users_hold_stays(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The job runs last-checkpoint; an edit to checkpoint-first waits for a checkpoint that never
    completes until its submission time-out rolls it back: the regions drain periodically again.
    A hold the user sets by hand is theirs: an edit leaves it."""
    spec = {"stableAfterSeconds": 0, "submissionTimeOutInSeconds": 4, "checkpointTimeoutSeconds": 1}
    async with consistent_job(sandbox, monkeypatch, tmp_path, synthetic(tmp_path, regions=1), **spec) as job:

        async def stable() -> bool:
            return (await job_status(job.client, job.name)).get("lastStableGeneration") == 1

        await eventually_async(stable, within=20)
        PARTICIPANT.skip_drains = 10**6
        try:
            edit = {"spec": {**TRACE["spec"], "upgradeMode": "checkpoint-first"}}
            await job.client.patch(JOBS, job.name, edit, "default")
            await wait_for_phase(job.client, job.name, "RolledBack", within=40)
        finally:
            PARTICIPANT.skip_drains = 0
        (region,) = await job.regions()
        assert "holdDrains" not in region["spec"]

        # The user's own hold: an edit (pods replaced, regions reset) keeps it.
        await job.restart_coordinator()  # the drain the PEs left unanswered is given up
        await eventually_async(lambda: job.all_in("PROCESSING"), within=30)
        name = region["metadata"]["name"]
        await job.client.patch(CONSISTENT_REGIONS, name, {"spec": {"holdDrains": True}}, "default")
        again = {"spec": {"restartNonce": "after", "submissionTimeOutInSeconds": 120, "upgradeMode": None}}
        await job.client.patch(JOBS, job.name, again, "default")
        await eventually_async(lambda: applied(job, 3), within=60)
        (region,) = await job.regions()
        assert region["spec"]["holdDrains"] is True


@SANDBOX
async def test_a_checkpoint_first_edit_keeps_a_hold_the_user_set_and_still_waits_for_its_checkpoint(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The user holds one region's drains; a checkpoint-first edit checkpoints both regions before
    the first pod goes, holds the other one's drains itself, and releases only that hold."""
    async with consistent_job(
        sandbox, monkeypatch, tmp_path, synthetic(tmp_path, regions=2), upgradeMode="checkpoint-first"
    ) as job:
        held, other = (r["metadata"]["name"] for r in await job.regions())
        await job.client.patch(CONSISTENT_REGIONS, held, {"spec": {"holdDrains": True}}, "default")
        before = [s.get("lastCompletedSeqID") or 0 for s in await job.statuses()]
        await job.client.patch(JOBS, job.name, TRACE, "default")
        await eventually_async(lambda: applied(job, 2), within=60)
        deleted = [
            r.time
            for r in sandbox.requests
            if r.method == "DELETE" and re.search(rf"/pods/{job.name}-\d+-", r.path) and r.status < 300
        ]
        assert deleted
        for was, status in zip(before, await job.statuses(), strict=True):
            asked = status["checkpointRequest"]
            assert asked["seqID"] > was  # a new checkpoint, on the edit's request
            assert asked["completed"] / 1000 <= min(deleted)  # complete before the first pod went
        regions = {r["metadata"]["name"]: r for r in await job.regions()}
        assert regions[held]["spec"]["holdDrains"] is True
        assert "holdDrains" not in regions[other]["spec"]
        assert all(HOLD_ANNOTATION not in (r["metadata"].get("annotations") or {}) for r in regions.values())
