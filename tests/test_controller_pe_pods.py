"""The PE controller against the sandbox: when pods are created, restart policies, replacement.

PEs, ConfigMaps and host pools are written directly (as the job controller would)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from k8s_support import eventually_async
from pe_objects import (
    NS,
    create_host_pool,
    create_job,
    create_pe,
    create_pe_config_map,
    pe_status,
    pods_of,
    running_pe_controllers,
)
from streams_k8s.api.contract import CONTENT_ID_ANNOTATION, JOB_LABEL, LAUNCH_COUNT_LABEL
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS
from streams_k8s.sandbox import Sandbox


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def running_pod(client: KubeClient, job: str, pe_id: int, launch: int) -> dict:
    """Wait for the PE's single pod of ``launch`` to run and the PE status to say so; return it."""
    found: list[dict] = []

    async def check() -> bool:
        pods = await pods_of(client, job, pe_id)
        status = await pe_status(client, f"{job}-{pe_id}")
        found[:] = pods
        return (
            len(pods) == 1
            and pods[0]["metadata"]["labels"][LAUNCH_COUNT_LABEL] == str(launch)
            and pods[0]["status"].get("phase") == "Running"
            and status.get("launchCount") == launch
            and status.get("phase") == "Running"
            and status.get("podName") == pods[0]["metadata"]["name"]
        )

    await eventually_async(check, within=10)
    return found[0]


async def test_pod_waits_for_its_config_map_with_matching_content(
    sandbox: Sandbox, client: KubeClient
) -> None:
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        await create_pe(client, job, 0, content="c2")
        await create_pe_config_map(client, job, 0, content="c1")  # stale content: not yet
        await sandbox.settle()
        assert await pods_of(client, "app", 0) == []
        await client.patch(
            CONFIGMAPS, "app-0", {"metadata": {"annotations": {CONTENT_ID_ANNOTATION: "c2"}}}, NS
        )
        pod = await running_pod(client, "app", 0, 1)
    assert pod["metadata"]["name"].startswith("app-0-")
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "ProcessingElement"
    assert pod["metadata"]["annotations"][CONTENT_ID_ANNOTATION] == "c2"
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["STREAMS_PE_LAUNCH_COUNT"] == "1"
    assert env["STREAMS_PE_NAME"] == "app-0"
    ports = [p["name"] for p in pod["spec"]["containers"][0]["ports"]]
    assert ports[0] == "sys-0"  # from the PE's one input port
    status = await pe_status(client, "app-0")
    assert status["nodeName"] == pod["spec"]["nodeName"]


async def test_pod_waits_for_its_host_pool(sandbox: Sandbox, client: KubeClient) -> None:
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        await create_pe(client, job, 0, placement={"hostPoolLocation": {"poolIndex": 1}})
        await create_pe_config_map(client, job, 0)
        await sandbox.settle()
        assert await pods_of(client, "app", 0) == []
        await create_host_pool(client, job, 1)
        await running_pod(client, "app", 0, 1)


@pytest.mark.parametrize(
    ("policy", "restartable", "relaunched"),
    [
        ({}, True, True),  # restartFailedPod unset: the PE's SPL restartable flag
        ({}, False, False),
        ({"restartFailedPod": True}, False, True),
        ({"restartFailedPod": False}, True, False),
    ],
)
async def test_failed_pod(
    sandbox: Sandbox, client: KubeClient, policy: dict, restartable: bool, relaunched: bool
) -> None:
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        await create_pe(client, job, 0, restartable=restartable, **policy)
        await create_pe_config_map(client, job, 0)
        first = await running_pod(client, "app", 0, 1)
        await sandbox.cluster.kill_pod(NS, first["metadata"]["name"])
        if relaunched:
            second = await running_pod(client, "app", 0, 2)
            assert second["metadata"]["name"] != first["metadata"]["name"]
            # deleteFailedPod defaults to true: the failed pod is gone
            await eventually_async(lambda: _gone(client, first["metadata"]["name"]))
        else:

            async def failed() -> bool:
                return (await pe_status(client, "app-0")).get("phase") == "Failed"

            await eventually_async(failed)
            await sandbox.settle()
            assert (await pe_status(client, "app-0"))["launchCount"] == 1
            names = [p["metadata"]["name"] for p in await pods_of(client, "app", 0)]
            assert names == [first["metadata"]["name"]]


async def _gone(client: KubeClient, pod: str) -> bool:
    items, _ = await client.list_all(PODS, NS, field_selector=f"metadata.name={pod}")
    return not items


async def test_failed_pod_kept_as_zombie_when_delete_failed_pod_is_false(
    sandbox: Sandbox, client: KubeClient
) -> None:
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        await create_pe(client, job, 0, deleteFailedPod=False)
        await create_pe_config_map(client, job, 0)
        first = await running_pod(client, "app", 0, 1)
        await sandbox.cluster.fail_pod(NS, first["metadata"]["name"])
        await running_pod(client, "app", 0, 2)
        zombies = await pods_of(client, "app", 0, svc="zombie")
        assert [z["metadata"]["name"] for z in zombies] == [first["metadata"]["name"]]
        assert zombies[0]["status"]["phase"] == "Failed"


@pytest.mark.parametrize("restart", [True, False])
async def test_completed_pod(sandbox: Sandbox, client: KubeClient, restart: bool) -> None:
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        await create_pe(client, job, 0, restartCompletedPod=restart)
        await create_pe_config_map(client, job, 0)
        first = await running_pod(client, "app", 0, 1)
        await sandbox.cluster.exit_container(NS, first["metadata"]["name"], 0)
        if restart:
            await running_pod(client, "app", 0, 2)
        else:

            async def succeeded() -> bool:
                return (await pe_status(client, "app-0")).get("phase") == "Succeeded"

            await eventually_async(succeeded)
            assert (await pe_status(client, "app-0"))["launchCount"] == 1


@pytest.mark.parametrize("restart", [True, False])
async def test_deleted_pod(sandbox: Sandbox, client: KubeClient, restart: bool) -> None:
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        await create_pe(client, job, 0, restartDeletedPod=restart)
        await create_pe_config_map(client, job, 0)
        first = await running_pod(client, "app", 0, 1)
        await client.delete(PODS, first["metadata"]["name"], NS)
        if restart:
            await running_pod(client, "app", 0, 2)
        else:

            async def deleted() -> bool:
                return (await pe_status(client, "app-0")).get("phase") == "Deleted"

            await eventually_async(deleted)
            await sandbox.settle()
            assert await pods_of(client, "app", 0) == []
            assert (await pe_status(client, "app-0"))["launchCount"] == 1


async def test_a_relaunch_is_not_held_back_by_a_report_the_operator_has_not_seen(
    sandbox: Sandbox, client: KubeClient
) -> None:
    # Connectivity reports change a PE all through an upgrade; a relaunch decided on a cache that
    # has not shown the last one is still the right one, and is written ahead at once.
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        await create_pe(client, job, 0, restartDeletedPod=True)
        await create_pe_config_map(client, job, 0)
        first = await running_pod(client, "app", 0, 1)
        with sandbox.faults.watches_stalled("streamspes") as stalled:
            assert stalled >= 1
            await client.patch_status(PES, "app-0", {"connectivity": "Partial"}, NS)
            await client.delete(PODS, first["metadata"]["name"], NS)

            async def relaunched() -> bool:
                pods = await pods_of(client, "app", 0)
                return [p["metadata"]["labels"][LAUNCH_COUNT_LABEL] for p in pods] == ["2"]

            await eventually_async(relaunched, within=5)
            status = await pe_status(client, "app-0")
            assert (status["launchCount"], status["connectivity"]) == (2, "None")
            assert "nodeName" not in status  # the relaunch's null unsets it, as on a real API server
        await running_pod(client, "app", 0, 2)


async def test_content_change_replaces_the_pod(sandbox: Sandbox, client: KubeClient) -> None:
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        await create_pe(client, job, 0, content="c1")
        await create_pe_config_map(client, job, 0, content="c1")
        first = await running_pod(client, "app", 0, 1)
        await client.patch(
            CONFIGMAPS, "app-0", {"metadata": {"annotations": {CONTENT_ID_ANNOTATION: "c2"}}}, NS
        )
        await client.patch(PES, "app-0", {"spec": {"contentId": "c2"}}, NS)
        second = await running_pod(client, "app", 0, 2)
        assert second["metadata"]["annotations"][CONTENT_ID_ANNOTATION] == "c2"
        assert await _gone(client, first["metadata"]["name"])


async def test_recreated_pe_continues_the_launch_count(sandbox: Sandbox, client: KubeClient) -> None:
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        await create_pe(client, job, 0)
        await create_pe_config_map(client, job, 0)
        first = await running_pod(client, "app", 0, 1)
        await client.delete(PES, "app-0", NS)
        await eventually_async(lambda: _gone(client, first["metadata"]["name"]))

        async def kept() -> bool:
            cm = await client.get(CONFIGMAPS, "app-0", NS)
            return cm["metadata"].get("annotations", {}).get("streams.ibm.com/launch-count") == "1"

        await eventually_async(kept)
        await create_pe(client, job, 0)  # what the job controller does for a deleted PE
        await running_pod(client, "app", 0, 2)


async def test_job_deletion_removes_pes_and_pods(sandbox: Sandbox, client: KubeClient) -> None:
    async with running_pe_controllers(sandbox):
        job = await create_job(client)
        for pe_id in range(3):
            await create_pe(client, job, pe_id)
            await create_pe_config_map(client, job, pe_id)
        for pe_id in range(3):
            await running_pod(client, "app", pe_id, 1)
        await client.delete(JOBS, "app", NS)

        async def empty() -> bool:
            pods, _ = await client.list_all(PODS, NS, label_selector=f"{JOB_LABEL}=app")
            pes, _ = await client.list_all(PES, NS)
            return not pods and not pes

        await eventually_async(empty)
