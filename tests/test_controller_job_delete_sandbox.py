"""A Job deleted in the middle of its submission: the reconcile in flight stops creating children;
children a delete orphaned are adopted by the Job re-created under the same name."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from job_inventory import synthetic_job
from k8s_support import eventually_async
from operator_support import operator, wait_for_phase
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.controller.jobs.keeping import CREATE_CONCURRENCY
from streams_k8s.controller.kinds import HOSTPOOLS, JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS, SERVICES
from streams_k8s.sandbox import Sandbox
from watch_support import added_since

CHILD_KINDS = (PES, CONFIGMAPS, SERVICES, HOSTPOOLS)


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


@pytest.mark.parametrize("propagation", ["Background", "Foreground"])
@pytest.mark.sandbox(nodes=2)
async def test_a_job_deleted_mid_submission_gets_no_more_children(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, propagation: str
) -> None:
    # A slow API server: time to delete, and a slot of the creates frees a second after it was
    # taken, so next to nothing starts between the delete and the operator seeing it.
    sandbox.faults.delay(1.0, verb="create", resource="services")
    selector = f"{JOB_LABEL}=mid"
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, synthetic_job("mid", tmp_path, 60))

        async def creating() -> bool:
            found, _ = await client.list_all(SERVICES, "default", label_selector=selector)
            return len(found) >= CREATE_CONCURRENCY

        await eventually_async(creating, within=30)
        await client.delete(JOBS, "mid", "default", propagation=propagation)  # type: ignore[arg-type]
        _, version = await client.list_all(SERVICES, "default", label_selector=selector)
        later = await asyncio.gather(
            *(added_since(client, r, version, 4.0, label_selector=selector) for r in (SERVICES, PES, PODS))
        )
    services, pes, pods = ([o["metadata"]["name"] for o in found] for found in later)
    # Only the creates already sent when the delete was seen may land; nothing of a later batch.
    assert len(services) <= CREATE_CONCURRENCY, services
    assert pes == []
    assert pods == []


@pytest.mark.sandbox(nodes=2)
async def test_creates_waiting_for_the_rate_limit_are_called_off_by_the_delete(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 200-PE submission at 20 requests/s: its batch of creates waits in the client's rate limit,
    # each taken before it knew of the delete. None may go out once the operator has seen it; only
    # a create on the wire then (at most one, 50 ms apart) and one the watch had not yet told of.
    selector = f"{JOB_LABEL}=queued"
    async with operator(sandbox, monkeypatch, tmp_path / "cache", qps=20.0, burst=1):
        await client.create(JOBS, synthetic_job("queued", tmp_path, 200))

        async def creating() -> bool:
            found, _ = await client.list_all(CONFIGMAPS, "default", label_selector=selector)
            return len(found) >= 2 * CREATE_CONCURRENCY

        await eventually_async(creating, within=60)
        await client.delete(JOBS, "queued", "default")
        _, version = await client.list_all(CONFIGMAPS, "default", label_selector=selector)
        later = await asyncio.gather(
            *(
                added_since(client, r, version, 3.0, label_selector=selector)
                for r in (CONFIGMAPS, SERVICES, PES)
            )
        )
    created = [o["metadata"]["name"] for found in later for o in found]
    assert len(created) <= 2, created


async def labelled(client: KubeClient, job: str) -> dict[str, list[dict[str, Any]]]:
    found = {}
    for resource in (*CHILD_KINDS, PODS):
        items, _ = await client.list_all(resource, "default", label_selector=f"{JOB_LABEL}={job}")
        found[str(resource)] = [i for i in items if not i["metadata"].get("deletionTimestamp")]
    return found


@pytest.mark.sandbox(nodes=2)
async def test_children_orphaned_by_a_delete_are_adopted_by_the_job_re_created(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, synthetic_job("again", tmp_path, 2))
        await wait_for_phase(client, "again", "Running")
        await client.delete(JOBS, "again", "default", propagation="Orphan")

        async def orphaned() -> bool:
            children = await labelled(client, "again")
            return bool(children[str(PES)]) and all(
                not c["metadata"].get("ownerReferences") for c in children[str(PES)]
            )

        await eventually_async(orphaned, within=10)
        job = await client.create(JOBS, synthetic_job("again", tmp_path, 2))
        await wait_for_phase(client, "again", "Running")
        uid = job["metadata"]["uid"]

        async def adopted() -> bool:
            children = await labelled(client, "again")
            owned = [c for kind in CHILD_KINDS for c in children[str(kind)]]
            return bool(owned) and all(
                [r["uid"] for r in c["metadata"].get("ownerReferences") or ()] == [uid] for c in owned
            )

        await eventually_async(adopted, within=10)
        await client.delete(JOBS, "again", "default")

        async def nothing_left() -> bool:
            return not any((await labelled(client, "again")).values())

        await eventually_async(nothing_left, within=15)
