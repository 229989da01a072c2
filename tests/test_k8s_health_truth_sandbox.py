"""Health that tells the truth: a stalled watch is found and mended within its documented bound,
and a failing API server is a warning of /readyz, never a 503 (readiness keeps the operator in its
Service: the PEs' REST API answers from the caches)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from k8s_support import eventually, eventually_async
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.k8s.objects import ObjectKey
from streams_k8s.k8s.settings import RuntimeSettings
from streams_k8s.sandbox import Sandbox
from test_k8s_manager_sandbox import parent, start

STALL_BOUND = RuntimeSettings().inactivity_timeout  # the documented default


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def test_a_stalled_watch_is_mended_within_the_default_bound(
    sandbox: Sandbox, client: KubeClient
) -> None:
    assert STALL_BOUND <= 15
    run = await start(sandbox, "stall", leader_election=False)  # default watch timings
    try:
        await eventually(lambda: all(i.synced.is_set() for i in run.manager.informers))
        await sandbox.wait_for_watches(2, "configmaps")
        assert sandbox.faults.stall_watches("configmaps") == 2
        stalled_at = time.monotonic()
        await client.create(CONFIGMAPS, parent("late", greeting="hi"))
        by_selector = {i.label_selector: i for i in run.manager.informers if i.resource == CONFIGMAPS}
        parents, children = by_selector["example=echo"], by_selector["example=echo-child"]

        def seen() -> bool:  # the parent, and the child the controller made of it (both watches mended)
            return ObjectKey("default", "late") in parents.store and len(children.store) == 1

        await eventually(seen, within=STALL_BOUND + 5)
        assert time.monotonic() - stalled_at <= STALL_BOUND + 2
    finally:
        run.manager.stop()
        await asyncio.wait_for(run.task, 10)


async def test_readyz_warns_but_stays_ready_while_a_third_of_api_requests_fail(
    sandbox: Sandbox, client: KubeClient
) -> None:
    run = await start(sandbox, "errors", leader_election=False)
    try:
        async with aiohttp.ClientSession() as http:
            url = run.base + "/readyz"
            await eventually(lambda: all(i.synced.is_set() for i in run.manager.informers))

            async def status() -> tuple[int, dict[str, object]]:
                async with http.get(url) as response:
                    return response.status, await response.json()

            assert await status() == (200, {"status": "ok"})
            sandbox.faults.random.seed(31)
            sandbox.faults.fail(500, None, verb="get", resource="configmaps", probability=0.31)
            operator_client = run.manager.client
            for _ in range(60):  # what the operator's own reconciles would do
                with contextlib.suppress(ApiError):
                    await operator_client.get(CONFIGMAPS, "absent", "default")

            async def warned() -> bool:
                code, body = await status()
                assert code == 200, body  # still serving
                return any("API server failing" in str(w) for w in body.get("warnings") or ())  # type: ignore[attr-defined]

            await eventually_async(warned, within=5)
            assert run.manager.metrics.registry.get_sample_value("streams_k8s_api_server_failing") == 1
            sandbox.faults.clear()
            for _ in range(300):  # healthy again: the share falls below half the budget
                with contextlib.suppress(ApiError):
                    await operator_client.get(CONFIGMAPS, "absent", "default")

            async def quiet() -> bool:
                return await status() == (200, {"status": "ok"})

            await eventually_async(quiet, within=5)
    finally:
        run.manager.stop()
        await asyncio.wait_for(run.task, 10)
