"""PE lifecycle under the whole instance operator (job controller + PE controller): a deleted PE
comes back and continues its launch count, a deleted pod follows restartDeletedPod, a failed pod
is relaunched, and deleting the Job removes everything."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from job_inventory import NS, Inventory, synthetic_job
from k8s_support import eventually_async
from operator_support import operator, wait_for_phase
from pe_objects import pe_status, pods_of
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import PODS
from streams_k8s.sandbox import Sandbox


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def job(tmp_path: Path, pes: int, **template: object) -> dict:
    manifest = synthetic_job("life", tmp_path, pes, chains=1)
    if template:
        manifest["spec"]["processingElement"] = template
    return manifest


async def launched(client: KubeClient, pe_id: int, launch: int) -> None:
    async def check() -> bool:
        try:
            status = await pe_status(client, f"life-{pe_id}")
        except ApiError as err:  # deleted, not yet recreated
            if err.not_found:
                return False
            raise
        pods = await pods_of(client, "life", pe_id)
        return (
            status.get("launchCount") == launch
            and status.get("phase") == "Running"
            and len(pods) == 1
            and pods[0]["metadata"]["name"] == status.get("podName")
        )

    await eventually_async(check, within=15)


@pytest.mark.sandbox(nodes=2)
async def test_a_deleted_pe_comes_back_and_continues_its_launch_count(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job(tmp_path, 2))
        await wait_for_phase(client, "life", "Running")
        await launched(client, 1, 1)
        uid = (await client.get(PES, "life-1", NS))["metadata"]["uid"]
        await client.delete(PES, "life-1", NS)
        await launched(client, 1, 2)
        assert (await client.get(PES, "life-1", NS))["metadata"]["uid"] != uid
        await wait_for_phase(client, "life", "Running")
        assert (await Inventory.read(client, "life")).problems(2) == []


@pytest.mark.sandbox(nodes=2)
async def test_a_pe_deleted_before_its_launch_is_recorded_still_continues_its_count(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its pod ran, but the record waited for a connectivity report (none comes here: the PE
    controller writes it alone after its grace): the PE that replaces it starts at launch 2."""
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job(tmp_path, 2))

        async def pod_running() -> bool:
            pods = await pods_of(client, "life", 1)
            return bool(pods) and (pods[0].get("status") or {}).get("phase") == "Running"

        await eventually_async(pod_running, within=30)
        assert "launchCount" not in await pe_status(client, "life-1")  # deleted within the grace
        await client.delete(PES, "life-1", NS)
        await launched(client, 1, 2)


@pytest.mark.sandbox(nodes=2)
async def test_pod_deletion_and_failure_follow_the_job_template(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job(tmp_path, 2, restartDeletedPod=True))
        await wait_for_phase(client, "life", "Running")
        pod = (await pods_of(client, "life", 0))[0]
        await client.delete(PODS, pod["metadata"]["name"], NS)
        await launched(client, 0, 2)
        pod = (await pods_of(client, "life", 1))[0]
        await sandbox.cluster.kill_pod(NS, pod["metadata"]["name"])  # restartFailedPod unset: restartable
        await launched(client, 1, 2)
        await wait_for_phase(client, "life", "Running")
        assert (await Inventory.read(client, "life")).problems(2) == []


@pytest.mark.sandbox(nodes=2)
async def test_deleting_the_job_removes_pes_pods_and_children(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job(tmp_path, 3))
        await wait_for_phase(client, "life", "Running")
        await client.delete(JOBS, "life", NS)

        async def gone() -> bool:
            pods, _ = await client.list_all(PODS, NS)
            pes, _ = await client.list_all(PES, NS)
            jobs, _ = await client.list_all(JOBS, NS)
            return not pods and not pes and not jobs

        await eventually_async(gone, within=15)
