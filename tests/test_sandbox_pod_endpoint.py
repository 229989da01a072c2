"""A simulated pod's HTTP endpoint frees its address however it stops: served and closed, or its
start cancelled at any point (the kubelet's worker stopped while the pod comes up). A listener
left behind outlived its simulation: the next one's PE at the same address could not serve, and a
scraper reaching it waited for ever (the flow tests timed out late in full runs)."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import aiohttp
import pytest
from aiohttp import web

from streams_k8s.sandbox.cluster.pod_endpoint import PodEndpoint

ADDRESS = "127.246.0.1"  # outside the sandbox's pod addresses (127.245.0.0/16)


def free(port: int) -> bool:
    probe = socket.socket()
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # only a listener stops the bind
    try:
        probe.bind((ADDRESS, port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def hello() -> web.Application:
    app = web.Application()

    async def answer(_: web.Request) -> web.Response:
        return web.Response(text="hello")

    app.router.add_get("/", answer)
    return app


async def test_an_endpoint_serves_then_frees_its_address() -> None:
    endpoint = PodEndpoint(hello(), ADDRESS, 19696)
    await endpoint.start()
    async with aiohttp.ClientSession() as http, http.get(f"http://{ADDRESS}:19696/") as answer:
        assert await answer.text() == "hello"
    assert not free(19696)
    await endpoint.close()
    assert free(19696)


async def test_a_taken_address_is_refused_when_the_endpoint_is_made() -> None:
    endpoint = PodEndpoint(hello(), ADDRESS, 19697)
    await endpoint.start()
    try:
        with pytest.raises(OSError, match="in use"):
            PodEndpoint(hello(), ADDRESS, 19697)
    finally:
        await endpoint.close()


@pytest.mark.parametrize("steps", range(8))  # each point the start can be cut at
async def test_a_start_cancelled_anywhere_leaves_no_listener(steps: int) -> None:
    port = 19700 + steps
    endpoint = PodEndpoint(hello(), ADDRESS, port)
    start = asyncio.create_task(endpoint.start())
    for _ in range(steps):
        await asyncio.sleep(0)
    start.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await start
    await endpoint.close()
    assert free(port)
