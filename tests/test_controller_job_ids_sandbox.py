"""Job ids are never handed out twice, even when the id counter is lost or restored from a backup."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from job_inventory import synthetic_job
from k8s_support import eventually_async
from operator_support import operator, wait_for_phase
from streams_k8s.controller.jobs.job_ids import COUNTER_NAME
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.sandbox import Sandbox


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def submitted_id(client: KubeClient, name: str, directory: Path) -> int:
    await client.create(JOBS, synthetic_job(name, directory, 1))
    status = await wait_for_phase(client, name, "Submitting", "Submitted", "Running")
    return int(status["id"])


async def delete_job(client: KubeClient, name: str) -> None:
    await client.delete(JOBS, name, "default")

    async def gone() -> bool:
        try:
            await client.get(JOBS, name, "default")
        except ApiError as err:
            return err.not_found
        return False

    await eventually_async(gone, within=10)


@pytest.mark.sandbox(nodes=1)
async def test_ids_of_deleted_jobs_are_not_reused_when_the_counter_is_lost_or_rolled_back(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        assert [await submitted_id(client, n, tmp_path) for n in ("a", "b", "c")] == [0, 1, 2]
        backup = await client.get(CONFIGMAPS, COUNTER_NAME, "default")  # says next=3
        await submitted_id(client, "d", tmp_path)
        for name in ("b", "c", "d"):
            await delete_job(client, name)

        # The counter is lost: only job "a" (id 0) still holds an id.
        await client.delete(CONFIGMAPS, COUNTER_NAME, "default")
        assert await submitted_id(client, "e", tmp_path) == 4

        # ... and restored from the backup taken when the next id was 3.
        await client.delete(CONFIGMAPS, COUNTER_NAME, "default")
        restored = {"metadata": {"name": COUNTER_NAME, "namespace": "default"}, "data": backup["data"]}
        await client.create(CONFIGMAPS, restored)
        assert await submitted_id(client, "f", tmp_path) == 5
