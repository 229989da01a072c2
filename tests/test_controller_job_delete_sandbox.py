"""A Job deleted in the middle of its submission: the reconcile in flight stops creating children."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from job_inventory import synthetic_job
from k8s_support import eventually_async
from operator_support import operator
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.controller.jobs.planned import CREATE_CONCURRENCY
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import PODS, SERVICES
from streams_k8s.sandbox import Sandbox
from watch_support import added_since


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


@pytest.mark.parametrize("propagation", ["Background", "Foreground"])
@pytest.mark.sandbox(nodes=2)
async def test_a_job_deleted_mid_submission_gets_no_more_children(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, propagation: str
) -> None:
    sandbox.faults.delay(0.25, verb="create", resource="services")  # a slow API server: time to delete
    selector = f"{JOB_LABEL}=mid"
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, synthetic_job("mid", tmp_path, 60))

        async def creating() -> bool:
            found, _ = await client.list_all(SERVICES, "default", label_selector=selector)
            return len(found) >= CREATE_CONCURRENCY

        await eventually_async(creating, within=30)
        _, version = await client.list_all(SERVICES, "default", label_selector=selector)
        await client.delete(JOBS, "mid", "default", propagation=propagation)  # type: ignore[arg-type]
        later = await asyncio.gather(
            *(added_since(client, r, version, 4.0, label_selector=selector) for r in (SERVICES, PES, PODS))
        )
    services, pes, pods = ([o["metadata"]["name"] for o in found] for found in later)
    # Only the creates already sent when the delete was seen may land; nothing of a later batch.
    assert len(services) <= CREATE_CONCURRENCY, services
    assert pes == []
    assert pods == []
