"""The PE metrics read from a Prometheus (its HTTP query API, served here from recorded PE texts as
Prometheus labels what it scrapes in Kubernetes): the same flow as reading the pods, a pod it has
no series for pending, Prometheus failing every PE with its answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from flow_expositions import recorded
from streams_k8s.app.flow import PeState
from streams_k8s.controller.flow.readers import PrometheusReader
from streams_k8s.controller.flow.scraper import FlowScraper
from streams_k8s.controller.flow.targets import Target
from streams_k8s.k8s.objects import ObjectKey

JOB = ObjectKey("ns", "shop")


class FakePrometheus:
    """``/api/v1/query``: every sample of ``texts`` (by pod) at time ``at``, labelled with the pod
    and its namespace (as a PodMonitor's defaults label them); ``status`` to fail."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.at = 0.0
        self.status = 200
        self.queries: list[str] = []
        self.url = ""

    async def query(self, request: web.Request) -> web.Response:
        self.queries.append(str((await request.post())["query"]))
        if self.status != 200:
            return web.json_response({"status": "error", "error": "overloaded"}, status=self.status)
        result: list[dict[str, Any]] = []
        for pod, text in self.texts.items():
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    labels = {"__name__": sample.name, **sample.labels, "namespace": "ns", "pod": pod}
                    result.append({"metric": labels, "value": [self.at, str(sample.value)]})
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": result}})


@pytest.fixture
async def prometheus() -> AsyncIterator[FakePrometheus]:
    found = FakePrometheus()
    app = web.Application()
    app.router.add_post("/api/v1/query", found.query)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    found.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield found
    await runner.cleanup()


def _targets() -> list[Target]:
    # the URL says the pod runs; Prometheus is asked instead of it
    return [Target(JOB, 1, "http://10.0.0.1:9696/metrics", "shop-1"), Target(JOB, 2, "unused", "shop-2")]


async def test_a_prometheus_gives_the_flow_the_pods_give(prometheus: FakePrometheus) -> None:
    scraper = FlowScraper(_targets, reader=PrometheusReader(prometheus.url))
    try:
        for at, text in ((1000.0, "pe-1-at-0s.prom"), (1010.0, "pe-1-at-10s.prom")):
            prometheus.at = at
            prometheus.texts = {"shop-1": recorded(text)}
            await scraper.scrape_once()
    finally:
        await scraper.stop()
    flow = scraper.flow("ns", "shop")
    assert flow is not None
    assert flow.pes == {1: PeState.READ, 2: PeState.PENDING}  # no series for shop-2: not failing
    route = flow.operator("main.route")
    assert route is not None
    assert (route.tuples_in, route.tuples_out, route.drops, route.queue_fill) == (400, 400, 5, 0.9)
    assert 'namespace=~"ns"' in prometheus.queries[0]
    assert "op_input_n_tuples_processed" in prometheus.queries[0]


async def test_a_failing_prometheus_fails_every_pe_with_its_answer(prometheus: FakePrometheus) -> None:
    prometheus.status = 503
    scraper = FlowScraper(_targets, reader=PrometheusReader(prometheus.url))
    try:
        await scraper.scrape_once()
    finally:
        await scraper.stop()
    flow = scraper.flow("ns", "shop")
    assert flow is not None
    assert flow.pes == {1: PeState.FAILING, 2: PeState.FAILING}
    assert "HTTP 503" in flow.problems[1]
    assert "overloaded" in flow.problems[1]
