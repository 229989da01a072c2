"""Health and metrics endpoints over HTTP."""

from __future__ import annotations

import socket

import aiohttp
import pytest

from streams_k8s.k8s.api_errors import ApiServerState, next_api_server_state
from streams_k8s.k8s.health import HealthServer
from streams_k8s.k8s.metrics import RuntimeMetrics


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Flags:
    def __init__(self) -> None:
        self.live: list[str] = []
        self.ready: list[str] = ["cache pods not synced"]


@pytest.mark.parametrize("same_port", [True, False])
async def test_health_readiness_and_metrics(same_port: bool) -> None:
    flags = Flags()
    metrics = RuntimeMetrics()
    metrics.leader.labels("ns/lease").set(1)
    health_port, metrics_port = (0, 0) if same_port else (free_port(), free_port())
    server = HealthServer(
        liveness=lambda: flags.live,
        readiness=lambda: flags.ready,
        registry=metrics.registry,
        host="127.0.0.1",
        health_port=health_port,
        metrics_port=metrics_port,
    )
    await server.start()
    assert (server.health_port == server.metrics_port) is same_port
    try:
        base = f"http://127.0.0.1:{server.health_port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(base + "/healthz") as r:
                assert r.status == 200
                assert (await r.json()) == {"status": "ok"}
            async with http.get(base + "/readyz") as r:
                assert r.status == 503
                assert (await r.json())["problems"] == ["cache pods not synced"]
            flags.live.append("watch pods silent for 200s (budget 150s)")
            flags.ready.clear()
            async with http.get(base + "/livez") as r:
                assert r.status == 503
            async with http.get(base + "/readyz") as r:
                assert r.status == 200
            async with http.get(f"http://127.0.0.1:{server.metrics_port}/metrics") as r:
                assert r.status == 200
                text = await r.text()
                assert 'streams_k8s_leader{lease="ns/lease"} 1.0' in text
            if not same_port:
                async with http.get(f"http://127.0.0.1:{server.metrics_port}/healthz") as r:
                    assert r.status == 404  # the metrics listener serves metrics only
    finally:
        await server.stop()


async def test_every_error_is_json_even_a_failing_check() -> None:
    """No plain-text page: an unknown path is a JSON 404, a check that raises a JSON 500."""

    def broken() -> list[str]:
        raise RuntimeError("the cache is gone")

    server = HealthServer(
        liveness=broken,
        readiness=list,
        registry=RuntimeMetrics().registry,
        host="127.0.0.1",
        health_port=0,
        metrics_port=0,
    )
    await server.start()
    try:
        base = f"http://127.0.0.1:{server.health_port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(base + "/nothing") as r:
                assert (r.status, r.content_type) == (404, "application/json")
                assert (await r.json())["reason"] == "NotFound"
            async with http.post(base + "/readyz") as r:
                assert (r.status, r.content_type) == (405, "application/json")
            async with http.get(base + "/healthz") as r:
                assert (r.status, r.content_type) == (500, "application/json")
                assert "the cache is gone" in (await r.json())["message"]
    finally:
        await server.stop()


def test_the_api_server_fails_at_the_budget_and_answers_again_below_half_of_it() -> None:
    failing, answering = ApiServerState.FAILING, ApiServerState.ANSWERING
    assert next_api_server_state(answering, 0.19, 0.2) is answering
    assert next_api_server_state(answering, 0.2, 0.2) is failing
    assert next_api_server_state(failing, 0.15, 0.2) is failing  # hovering near the budget: no flip
    assert next_api_server_state(failing, 0.09, 0.2) is answering
