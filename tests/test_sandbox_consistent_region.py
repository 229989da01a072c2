"""The simulated PE runtime's consistent-region participant against a stand-in CR operator API:
drains are answered with checkpoints, resets with reset completions, and skipped answers let
timeouts be tested."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio.client import ApiClient, CoreV1Api

from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.consistent_region import ConsistentRegionParticipant, parse_message


class FakeRegionOperator:
    """The CR operator's REST API: a notification board per PE and the PEs' answers."""

    def __init__(self) -> None:
        self.board: dict[str, dict[str, dict[str, str]]] = {}
        self.answers: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.url = ""

    async def notifications(self, request: web.Request) -> web.Response:
        entries = self.board.get(request.match_info["pe"])
        return web.json_response(entries) if entries else web.Response(status=404)

    async def answer(self, request: web.Request) -> web.Response:
        await self.answers.put((request.path, orjson.loads(await request.read())))
        return web.Response(status=204)

    def notify(self, pe: str, region: str, kind: str, message: str) -> None:
        self.board.setdefault(pe, {})[region] = {"type": kind, "message": message}


@pytest.fixture
async def operator() -> AsyncIterator[FakeRegionOperator]:
    fake = FakeRegionOperator()
    app = web.Application()
    app.router.add_get("/api/consistentregion/pe/{pe}", fake.notifications)
    app.router.add_put("/api/consistentregion/region/{r}/pe/{pe}/{what}", fake.answer)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    fake.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield fake
    await runner.cleanup()


def cr_pod(job: str, pe: str) -> dict[str, Any]:
    labels = {
        "app": "streams",
        "svc": "pe",
        "streams.ibm.com/job": job,
        "streams.ibm.com/pe": pe,
        "streams.ibm.com/cr": "true",
    }
    return {
        "metadata": {"name": f"{job}-{pe}", "labels": labels},
        "spec": {"containers": [{"name": "pe", "image": "runtime:1"}]},
    }


@contextlib.asynccontextmanager
async def running_pe(participant: ConsistentRegionParticipant) -> AsyncIterator[Sandbox]:
    """A sandbox whose one PE pod (job j, PE 2, in a consistent region) is Running."""
    async with Sandbox(pe_hooks=participant) as sb, ApiClient(await sb.client_configuration()) as api:
        await CoreV1Api(api).create_namespaced_pod("default", cr_pod("j", "2"))
        await sb.settle()
        yield sb


def test_messages_parse_positionally() -> None:
    assert parse_message("seqId=5;retId=2;pendCkpt=1") == {"seqId": "5", "retId": "2", "pendCkpt": "1"}


async def test_drain_and_reset_are_answered(operator: FakeRegionOperator) -> None:
    participant = ConsistentRegionParticipant(operator.url, poll_interval=0.02)
    async with running_pe(participant):
        operator.notify("2", "0", "triggerDrain", "seqId=5")
        path, body = await asyncio.wait_for(operator.answers.get(), 5)
        assert (path, body) == ("/api/consistentregion/region/0/pe/2/checkpoint", 5)
        operator.notify("2", "0", "triggerReset", "seqId=5;resetAttempt=1")
        path, body = await asyncio.wait_for(operator.answers.get(), 5)
        assert path == "/api/consistentregion/region/0/pe/2/reset"
        assert body == {"progress": {"seqId": "5", "resetAttempt": "1"}}
        # Both in one poll, region 0 first: once region 1's drain is answered, the resume was seen.
        operator.notify("2", "0", "resumeSubmission", "seqId=5;retId=1;pendCkpt=0")
        operator.notify("2", "1", "triggerDrain", "seqId=9")
        path, _ = await asyncio.wait_for(operator.answers.get(), 5)
        assert path == "/api/consistentregion/region/1/pe/2/checkpoint"
    assert [n.type for n in participant.seen] == [
        "triggerDrain",
        "triggerReset",
        "resumeSubmission",
        "triggerDrain",
    ]
    assert operator.answers.empty()


async def test_skipped_drain_goes_unanswered_then_the_next_is_answered(operator: FakeRegionOperator) -> None:
    participant = ConsistentRegionParticipant(operator.url, poll_interval=0.02, skip_drains=1)
    async with running_pe(participant):
        operator.notify("2", "0", "triggerDrain", "seqId=7")
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(operator.answers.get(), 0.3)
        operator.notify("2", "0", "triggerDrain", "seqId=8")
        _, body = await asyncio.wait_for(operator.answers.get(), 5)
        assert body == 8


async def test_region_operator_address_given_later(operator: FakeRegionOperator) -> None:
    async with Sandbox() as sb, ApiClient(await sb.client_configuration()) as api:
        await CoreV1Api(api).create_namespaced_pod("default", cr_pod("j", "3"))
        await sb.settle()
        assert sb.consistent_regions is not None
        sb.consistent_regions.poll_interval = 0.02
        sb.consistent_regions.connect(operator.url)
        operator.notify("3", "0", "triggerDrain", "seqId=1")
        path, body = await asyncio.wait_for(operator.answers.get(), 5)
    assert (path, body) == ("/api/consistentregion/region/0/pe/3/checkpoint", 1)
