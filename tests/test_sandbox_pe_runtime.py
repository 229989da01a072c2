"""The simulated PE runtime reports connectivity to a controller REST API over HTTP, like the
Streams runtime's connectivity thread, retries when the controller fails, and is pluggable."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio.client import ApiClient, CoreV1Api

from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.pe_hooks import RuntimeHooks
from streams_k8s.sandbox.cluster.pe_identity import PeIdentity


class FakeControllerApi:
    """A loopback HTTP server standing in for the controller's instance REST API."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.failures_left = 0
        self.received = asyncio.Event()
        self.url = ""

    async def connectivity(self, request: web.Request) -> web.Response:
        self.calls.append((request.method, request.path, await request.text()))
        if self.failures_left:
            self.failures_left -= 1
            return web.json_response({"error": "not yet"}, status=503)
        self.received.set()
        return web.Response(status=204)


@pytest.fixture
async def controller() -> AsyncIterator[FakeControllerApi]:
    fake = FakeControllerApi()
    app = web.Application()
    app.router.add_put("/api/state/job/{job}/pe/{pe}/connectivity", fake.connectivity)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    fake.url = f"http://127.0.0.1:{port}"
    yield fake
    await runner.cleanup()


@pytest.fixture
async def sandbox_with_controller(controller: FakeControllerApi) -> AsyncIterator[Sandbox]:
    async with Sandbox(controller_url=controller.url) as sb:
        assert sb.pe_runtime is not None
        sb.pe_runtime.retry_interval = 0.05
        yield sb


def pe_pod(job: str, pe: str, name: str | None = None) -> dict[str, Any]:
    labels = {"app": "streams", "svc": "pe", "streams.ibm.com/job": job, "streams.ibm.com/pe": pe}
    return {
        "metadata": {"name": name or f"{job}-{pe}", "labels": labels},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "pe", "image": "streams-runtime:1"}]},
    }


async def test_running_pe_reports_full_connectivity(
    sandbox_with_controller: Sandbox, controller: FakeControllerApi
) -> None:
    async with ApiClient(await sandbox_with_controller.client_configuration()) as api:
        await CoreV1Api(api).create_namespaced_pod("default", pe_pod("wordcount", "3"))
        other = pe_pod("wordcount", "4")
        other["metadata"]["labels"]["svc"] = "not-a-pe"
        await CoreV1Api(api).create_namespaced_pod("default", other)
    await asyncio.wait_for(controller.received.wait(), 5)
    await sandbox_with_controller.settle()
    assert controller.calls == [("PUT", "/api/state/job/wordcount/pe/3/connectivity", '"Full"')]


async def test_connectivity_is_retried_until_the_controller_accepts(
    sandbox_with_controller: Sandbox, controller: FakeControllerApi
) -> None:
    controller.failures_left = 2
    async with ApiClient(await sandbox_with_controller.client_configuration()) as api:
        await CoreV1Api(api).create_namespaced_pod("default", pe_pod("j", "0"))
    await asyncio.wait_for(controller.received.wait(), 5)
    assert len(controller.calls) == 3
    runtime = sandbox_with_controller.pe_runtime
    assert runtime is not None
    assert len(runtime.failures) == 2
    assert "503" in runtime.failures[0][1]


async def test_each_launch_reports_again_and_hooks_see_start_and_stop() -> None:
    reports: list[tuple[str, str, str]] = []
    events: list[str] = []

    async def reporter(pe: PeIdentity, state: str) -> None:
        reports.append((pe.job, pe.pe, state))

    class Hooks(RuntimeHooks):
        async def pe_started(self, pe: PeIdentity, pod: dict[str, Any]) -> None:
            events.append(f"started {pe.pod}")

        async def pe_stopped(self, pe: PeIdentity) -> None:
            events.append(f"stopped {pe.pod}")

    async with (
        Sandbox(pe_reporter=reporter, pe_hooks=Hooks()) as sb,
        ApiClient(await sb.client_configuration()) as api,
    ):
        core = CoreV1Api(api)
        await core.create_namespaced_pod("default", pe_pod("j", "1"))
        await sb.settle()
        await core.delete_namespaced_pod("j-1", "default", grace_period_seconds=0)
        await sb.settle()
        await core.create_namespaced_pod("default", pe_pod("j", "1"))
        await sb.settle()
    assert reports == [("j", "1", "Full"), ("j", "1", "Full")]
    assert events == ["started j-1", "stopped j-1", "started j-1"]


async def test_controller_address_given_after_the_pes_started(controller: FakeControllerApi) -> None:
    async with Sandbox() as sb, ApiClient(await sb.client_configuration()) as api:
        await CoreV1Api(api).create_namespaced_pod("default", pe_pod("late", "5"))
        await sb.settle()
        assert controller.calls == []  # nowhere to report yet
        assert sb.pe_runtime is not None
        await sb.pe_runtime.report_to(controller.url)
        await asyncio.wait_for(controller.received.wait(), 5)
    assert controller.calls == [("PUT", "/api/state/job/late/pe/5/connectivity", '"Full"')]
