"""A Job's milestone Events are not lost: one the operator could not write is written after a restart."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from job_inventory import synthetic_job
from k8s_support import eventually_async
from operator_support import operator, wait_for_phase
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.event_delivery import CORE_EVENTS
from streams_k8s.sandbox import Sandbox

MILESTONES = Counter({"SubmissionStarted": 1, "Planned": 1, "SubmissionSucceeded": 1, "Running": 1})


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def reasons(client: KubeClient, job: str) -> Counter[str]:
    events, _ = await client.list_all(CORE_EVENTS, "default")
    return Counter(e["reason"] for e in events if e["involvedObject"].get("name") == job)


@pytest.mark.sandbox(nodes=1)
async def test_milestones_missed_while_events_failed_are_recorded_after_a_restart(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.faults.fail(500, None, verb="create", resource="events")
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, synthetic_job("steady", tmp_path, 2))
        await wait_for_phase(client, "steady", "Running")
    assert await reasons(client, "steady") == Counter()
    sandbox.faults.clear()
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):

        async def recorded() -> bool:
            return await reasons(client, "steady") >= MILESTONES - Counter({"Planned": 1})

        await eventually_async(recorded, within=15)
    found = await reasons(client, "steady")
    assert all(found[r] == 1 for r in ("SubmissionStarted", "SubmissionSucceeded", "Running")), found


@pytest.mark.sandbox(nodes=1)
async def test_milestones_are_recorded_once_while_events_fail_now_and_then(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.faults.fail(500, 3, verb="create", resource="events")
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, synthetic_job("bumpy", tmp_path, 2))
        await wait_for_phase(client, "bumpy", "Running")

        async def recorded() -> bool:
            return await reasons(client, "bumpy") == MILESTONES

        await eventually_async(recorded, within=15)
