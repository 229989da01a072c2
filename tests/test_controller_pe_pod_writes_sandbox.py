"""The pod writes of PE replacements, counted in the sandbox's request log: each new pod is posted
once, and a replaced PE's old pod is removed before its new pod is created (a relaunch of failed
pods and a parallel region's width change)."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from k8s_support import eventually_async
from operator_support import job_manifest, operator, wait_for_phase
from streams_k8s.api.contract import CONTENT_ID_ANNOTATION, JOB_LABEL, SVC_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import PODS
from streams_k8s.sandbox import Sandbox

NS = "default"
PODS_PATH = f"/api/v1/namespaces/{NS}/pods"


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


@dataclass(frozen=True)
class PodWrite:
    method: str
    pod: str
    status: int


def pod_writes(sandbox: Sandbox, mark: int) -> list[PodWrite]:
    """Creations, deletions and relabels (zombies) of pods since request ``mark``, in order."""
    writes = []
    for r in list(sandbox.requests)[mark:]:
        if r.method == "POST" and r.path == PODS_PATH:
            writes.append(PodWrite("POST", orjson.loads(r.body)["metadata"]["name"], r.status))
        elif r.method in ("DELETE", "PATCH") and r.path.startswith(PODS_PATH + "/"):
            name, _, subresource = r.path.removeprefix(PODS_PATH + "/").partition("/")
            if not subresource:
                writes.append(PodWrite(r.method, name, r.status))
    return writes


async def pe_pods(client: KubeClient, job: str) -> dict[int, str]:
    """PE id -> name of its current pod: the one its status names, running the PE's content."""
    pes, _ = await client.list_all(PES, NS, label_selector=f"{JOB_LABEL}={job}")
    pods, _ = await client.list_all(PODS, NS, label_selector=f"{JOB_LABEL}={job},{SVC_LABEL}=pe")
    running = {
        p["metadata"]["name"]: p["metadata"].get("annotations", {}).get(CONTENT_ID_ANNOTATION)
        for p in pods
        if (p.get("status") or {}).get("phase") == "Running"
    }
    current = {}
    for pe in pes:
        status = pe.get("status") or {}
        pod = status.get("podName")
        if status.get("phase") == "Running" and pod in running and running[pod] == pe["spec"]["contentId"]:
            current[int(pe["spec"]["id"])] = str(pod)
    return current


def assert_replaced_once_old_first(writes: list[PodWrite], old: dict[int, str], new: dict[int, str]) -> None:
    posts = [w for w in writes if w.method == "POST"]
    assert all(w.status == 201 for w in posts), posts  # no pod posted twice (409 AlreadyExists)
    replaced = {i for i in old if i in new and new[i] != old[i]}
    assert Counter(w.pod for w in posts) == Counter(new[i] for i in new if new[i] != old.get(i))
    order = [w.pod for w in writes]
    for i in replaced:  # the old pod deleted (or relabelled a zombie) before the new one is posted
        assert old[i] in order, (i, writes)
        assert order.index(old[i]) < order.index(new[i]), (i, writes)


async def settled(client: KubeClient, job: str, pes: int, old: dict[int, str]) -> dict[int, str]:
    found: dict[int, str] = {}

    async def check() -> bool:
        found.clear()
        found.update(await pe_pods(client, job))
        return len(found) == pes and all(found[i] != old.get(i) for i in old if i in found)

    await eventually_async(check, within=30)
    return dict(found)


@pytest.mark.sandbox(nodes=2)
async def test_a_relaunch_posts_each_new_pod_once_after_removing_the_failed_one(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=6, length=1))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("relaunch", bundle, fusion={"manual": 6}))
        await wait_for_phase(client, "relaunch", "Running")
        old = await settled(client, "relaunch", 6, {})
        mark = len(sandbox.requests)
        for name in old.values():  # restartFailedPod unset: the PEs are restartable
            await sandbox.cluster.kill_pod(NS, name)
        new = await settled(client, "relaunch", 6, old)
    assert_replaced_once_old_first(pod_writes(sandbox, mark), old, new)


@pytest.mark.sandbox(nodes=2)
async def test_a_width_change_posts_each_new_pod_once_after_deleting_the_changed_pes_old_one(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, regions=1, width=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("wide", bundle, fusion={"legacy": True}))
        await wait_for_phase(client, "wide", "Running")
        regions, _ = await client.list_all(PARALLEL_REGIONS, NS, label_selector=f"{JOB_LABEL}=wide")
        region: dict[str, Any] = regions[0]
        pes_before = len((await client.list_all(PES, NS, label_selector=f"{JOB_LABEL}=wide"))[0])
        before = await settled(client, "wide", pes_before, {})
        mark = len(sandbox.requests)
        name = region["metadata"]["name"]
        await client.patch(PARALLEL_REGIONS, name, {"spec": {"replicas": 4}}, NS, subresource="scale")

        after: dict[int, str] = {}

        async def at_width_4() -> bool:
            status = (await client.get(PARALLEL_REGIONS, name, NS)).get("status") or {}
            after.clear()
            after.update(await pe_pods(client, "wide"))
            pes, _ = await client.list_all(PES, NS, label_selector=f"{JOB_LABEL}=wide")
            return status.get("width") == 4 and len(after) == len(pes) > pes_before

        await eventually_async(at_width_4, within=30)
    writes = pod_writes(sandbox, mark)
    changed = {i for i in before if after[i] != before[i]}
    assert changed  # the width change replaced some PEs' pods (the region's neighbours)
    assert all(after[i] == before[i] for i in before if i not in changed)
    assert_replaced_once_old_first(writes, before, after)
    assert {w.pod for w in writes if w.method == "DELETE"} == {before[i] for i in changed}
