"""Pods the cluster takes (drain, node loss, NoExecute) are restarted whatever restartDeletedPod says;
a pod a user deletes follows the policy, and the Job says it is degraded and how to get the PE back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from job_inventory import synthetic_job
from k8s_support import eventually_async
from operator_support import condition, operator, wait_for_phase
from streams_k8s.api.contract import JOB_LABEL, PE_LABEL, SVC_LABEL
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.event_delivery import CORE_EVENTS
from streams_k8s.k8s.kinds import PODS
from streams_k8s.sandbox import Sandbox

NS = "default"


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def pe_pod(client: KubeClient, job: str, pe: int) -> dict[str, Any] | None:
    selector = f"{JOB_LABEL}={job},{PE_LABEL}={pe},{SVC_LABEL}=pe"
    pods, _ = await client.list_all(PODS, NS, label_selector=selector)
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return live[0] if live else None


async def relaunched_elsewhere(client: KubeClient, job: str, pe: int, old: dict[str, Any]) -> dict[str, Any]:
    """The PE's next pod, running (on another node than ``old``'s when that one is unusable)."""
    found: list[dict[str, Any]] = []

    async def running() -> bool:
        pod = await pe_pod(client, job, pe)
        found[:] = [pod] if pod is not None else []
        return (
            pod is not None
            and pod["metadata"]["name"] != old["metadata"]["name"]
            and pod["status"].get("phase") == "Running"
        )

    await eventually_async(running, within=20)
    return found[0]


@pytest.mark.sandbox(nodes=4)
async def test_pods_the_cluster_takes_come_back_without_restart_deleted_pod(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, synthetic_job("maint", tmp_path, 3))
        await wait_for_phase(client, "maint", "Running")

        # kubectl drain: cordon, then the Eviction API
        drained = await pe_pod(client, "maint", 0)
        assert drained is not None
        node = drained["spec"]["nodeName"]
        await sandbox.cluster.cordon(node)
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": drained["metadata"]["name"]},
        }
        await client.request(
            "POST", PODS, PODS.path(NS, drained["metadata"]["name"], "eviction"), verb="create", body=eviction
        )
        moved = await relaunched_elsewhere(client, "maint", 0, drained)
        assert moved["spec"]["nodeName"] != node

        # a NoExecute taint
        tainted = await pe_pod(client, "maint", 1)
        assert tainted is not None
        await sandbox.cluster.taint(tainted["spec"]["nodeName"], "maintenance", "now", "NoExecute")
        await relaunched_elsewhere(client, "maint", 1, tainted)

        # the node goes away
        lost = await pe_pod(client, "maint", 2)
        assert lost is not None
        await sandbox.cluster.remove_node(lost["spec"]["nodeName"])
        await relaunched_elsewhere(client, "maint", 2, lost)

        status = await wait_for_phase(client, "maint", "Running")
        assert condition(status, "Degraded")["status"] == "False"


@pytest.mark.sandbox(nodes=2)
async def test_a_pod_deleted_by_a_user_leaves_the_job_degraded_with_the_way_back(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, synthetic_job("manual", tmp_path, 2))
        await wait_for_phase(client, "manual", "Running")
        pod = await pe_pod(client, "manual", 1)
        assert pod is not None
        await client.delete(PODS, pod["metadata"]["name"], NS)

        async def degraded() -> bool:
            status = (await client.get(JOBS, "manual", NS)).get("status") or {}
            found = [c for c in status.get("conditions") or () if c["type"] == "Degraded"]
            return bool(found) and found[0]["status"] == "True" and status.get("podsReady") == 1

        await eventually_async(degraded, within=15)
        status = (await client.get(JOBS, "manual", NS))["status"]
        assert status["phase"] == "Submitted"
        assert status["processingElementsReady"] < 2  # READY counts what runs
        message = condition(status, "Degraded")["message"]
        assert "manual-1" in message
        assert "kubectl patch stp manual-1" in message
        events, _ = await client.list_all(CORE_EVENTS, NS)
        warnings = [e for e in events if e["reason"] == "PodDeleted"]
        assert len(warnings) == 1
        assert warnings[0]["type"] == "Warning"
        assert warnings[0]["involvedObject"]["name"] == "manual"
        assert "PE 1 (manual-1)" in warnings[0]["message"]

        # the way back the message gives
        await client.patch(PES, "manual-1", {"spec": {"restartDeletedPod": True}}, NS)
        status = await wait_for_phase(client, "manual", "Running")
        assert condition(status, "Degraded")["status"] == "False"
