"""Chaos: the operator process is SIGKILLed at random points of a 200-PE submission and restarted.

The job must converge with exactly the right objects: one of each child, all owned by the Job,
ConfigMaps matching their PEs' content ids, nothing else labelled with the job, and the job id
the first incarnation recorded (never a second one).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from operator_support import SUBMITTED, job_manifest, job_status, wait_for_phase
from streams_k8s.api.contract import CONTENT_ID_ANNOTATION, JOB_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.jobs.job_ids import COUNTER_NAME
from streams_k8s.controller.kinds import HOSTPOOLS, JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import CONFIGMAPS, SERVICES
from streams_k8s.sandbox import Sandbox

KILLS = int(os.environ.get("STREAMS_K8S_CHAOS_KILLS", "20"))
PES_WANTED = 200


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def spawn(sandbox: Sandbox, cache: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "STREAMS_K8S_API_PORT": "0",
        "STREAMS_K8S_REPOSITORY_PORT": "0",
        "STREAMS_K8S_BUNDLE_CACHE": str(cache),
    }
    command = [
        sys.executable, "-c", "from streams_k8s.cli import main; main()", "run",
        "--kubeconfig", str(sandbox.kubeconfig_path), "--namespace", "default",
        "--health-port", "0", "--metrics-port", "0", "--bind-address", "127.0.0.1",
        "--no-leader-election", "--log-format", "text", "--log-level", "WARNING",
    ]  # fmt: skip
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.sandbox(nodes=3)
async def test_killed_anywhere_the_submission_converges_without_duplicates_or_orphans(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    bundle = write_sab(tmp_path / "chaos.sab", SyntheticSpec(chains=50, length=4))
    job = await client.create(JOBS, job_manifest("chaos", bundle, fusion={"manual": PES_WANTED}))
    rng = random.Random(20261121)
    ids_seen: set[int] = set()
    for _ in range(KILLS):
        process = spawn(sandbox, tmp_path / "cache")
        try:
            # the process needs about a second to start: kill anywhere from startup to completion
            await asyncio.sleep(rng.uniform(0.8, 3.5))
        finally:
            process.send_signal(signal.SIGKILL)
            await asyncio.to_thread(process.wait)
        if (job_id := (await job_status(client, "chaos")).get("id")) is not None:
            ids_seen.add(job_id)
    process = spawn(sandbox, tmp_path / "cache")
    try:
        status = await wait_for_phase(client, "chaos", *SUBMITTED, within=120)
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.to_thread(process.wait)

    ids_seen.add(status["id"])
    assert ids_seen == {0}, "the job id changed across restarts"
    counter = await client.get(CONFIGMAPS, COUNTER_NAME, "default")
    assert counter["data"]["next"] == "1"
    assert status["processingElements"] == PES_WANTED

    selector = f"{JOB_LABEL}=chaos"
    pes, _ = await client.list_all(PES, "default", label_selector=selector)
    maps, _ = await client.list_all(CONFIGMAPS, "default", label_selector=selector)
    services, _ = await client.list_all(SERVICES, "default", label_selector=selector)
    pools, _ = await client.list_all(HOSTPOOLS, "default", label_selector=selector)
    expected = {f"chaos-{i}" for i in range(PES_WANTED)}
    assert {p["metadata"]["name"] for p in pes} == expected
    assert {s["metadata"]["name"] for s in services} == expected
    assert {m["metadata"]["name"] for m in maps} == expected | {"chaos"}
    assert [p["metadata"]["name"] for p in pools] == ["chaos-0"]
    uid = job["metadata"]["uid"]
    for obj in [*pes, *maps, *services, *pools]:
        assert obj["metadata"]["ownerReferences"][0]["uid"] == uid
        assert obj["metadata"].get("deletionTimestamp") is None
    content = {p["metadata"]["name"]: p["spec"]["contentId"] for p in pes}
    for cm in maps:
        if cm["metadata"]["name"] != "chaos":
            assert cm["metadata"]["annotations"][CONTENT_ID_ANNOTATION] == content[cm["metadata"]["name"]]
