"""Chaos during an edit: the operator process is SIGKILLed at random points while an edit of a
running job is applied, then restarted; the job converges to the edited spec with every PE on the
new content and settings, one pod per PE, each replaced once per edit (launch count + edits), and
no orphan."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from k8s_support import eventually_async
from operator_process import OperatorProcess, require_operator
from operator_support import job_manifest, job_status
from streams_k8s.api.contract import CONTENT_ID_ANNOTATION, JOB_LABEL, LAUNCH_COUNT_LABEL, PE_LABEL, SVC_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS
from streams_k8s.sandbox import Sandbox

KILLS = int(os.environ.get("STREAMS_K8S_CHAOS_KILLS", "12"))
PES_WANTED = 48


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def launches(client: KubeClient) -> dict[int, list[int]]:
    """Launch counts of the live PE pods, by PE id."""
    pods, _ = await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}=chaos,{SVC_LABEL}=pe")
    found: dict[int, list[int]] = {}
    for pod in pods:
        if not pod["metadata"].get("deletionTimestamp"):
            labels = pod["metadata"]["labels"]
            found.setdefault(int(labels[PE_LABEL]), []).append(int(labels[LAUNCH_COUNT_LABEL]))
    return found


async def version(client: KubeClient) -> str:
    return str((await client.get(JOBS, "chaos", "default"))["metadata"]["resourceVersion"])


async def progressed(client: KubeClient, seen: str, generation: int) -> bool:
    """The Job changed since ``seen``, or ``generation`` runs (nothing more to write)."""
    return await version(client) != seen or await settled(client, generation)


async def settled(client: KubeClient, generation: int) -> bool:
    status = await job_status(client, "chaos")
    ready = next((c for c in status.get("conditions") or () if c["type"] == "Ready"), {})
    return status.get("appliedGeneration") == generation and ready.get("status") == "True"


@pytest.mark.sandbox(nodes=3)
async def test_killed_anywhere_during_an_edit_the_job_converges_to_it_without_duplicates(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    require_operator()
    bundle = write_sab(tmp_path / "chaos.sab", SyntheticSpec(chains=24, length=2))
    manifest = job_manifest("chaos", bundle, fusion={"manual": PES_WANTED}, maxUnavailable=1)
    rng = random.Random(20261124)
    with OperatorProcess(sandbox.kubeconfig_path, tmp_path / "operator.log") as operator:
        await client.create(JOBS, manifest)
        await eventually_async(lambda: settled(client, 1), within=120)
        before = await launches(client)
        assert sorted(before) == list(range(PES_WANTED))
        # Edits one after the other (each restarts every pod once), so that every kill lands in one.
        edits, mid_edit = 0, 0
        for _ in range(KILLS):
            status = await job_status(client, "chaos")
            if status.get("appliedGeneration") == 1 + edits:
                edits += 1
                edit = {
                    "spec": {"restartNonce": str(edits), "processingElement": {"runtimeTraceLevel": "DEBUG"}}
                }
                await client.patch(JOBS, "chaos", edit, "default")
            seen = await version(client)
            # once this incarnation has written something (startup takes a second or more, longer
            # under load), anywhere in what follows
            await eventually_async(lambda: progressed(client, seen, 1 + edits), within=20)  # noqa: B023
            await asyncio.sleep(rng.uniform(0.0, 0.4))
            operator.kill()
            mid_edit += "upgrade" in await job_status(client, "chaos")
            operator.start()
        assert mid_edit >= KILLS // 2, f"only {mid_edit} kills came while an edit was applied"
        await eventually_async(lambda: settled(client, 1 + edits), within=180)

    after = await launches(client)
    assert {i: len(found) for i, found in after.items()} == dict.fromkeys(range(PES_WANTED), 1)
    assert {i: found[0] for i, found in after.items()} == {i: found[0] + edits for i, found in before.items()}
    pes, _ = await client.list_all(PES, "default", label_selector=f"{JOB_LABEL}=chaos")
    assert {p["spec"]["runtimeTraceLevel"] for p in pes} == {"DEBUG"}
    assert len(pes) == PES_WANTED
    maps, _ = await client.list_all(CONFIGMAPS, "default", label_selector=f"{JOB_LABEL}=chaos")
    content = {p["metadata"]["name"]: p["spec"]["contentId"] for p in pes}
    for cm in maps:
        if cm["metadata"]["name"] != "chaos":
            assert cm["metadata"]["annotations"][CONTENT_ID_ANNOTATION] == content[cm["metadata"]["name"]]
    status = await job_status(client, "chaos")
    assert "upgrade" not in status
    assert status["phase"] == "Running"
