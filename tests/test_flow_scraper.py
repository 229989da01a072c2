"""The operator's reading of PE metrics over HTTP, and the job-level series it serves on /metrics."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from flow_expositions import OperatorCounts, pe_text, recorded
from streams_k8s.app.flow import PeState
from streams_k8s.controller.autoscaling.observations import read_scrape, window
from streams_k8s.controller.autoscaling.reading import flow_reader
from streams_k8s.controller.flow.exported import FlowCollector
from streams_k8s.controller.flow.scraper import FlowScraper
from streams_k8s.controller.flow.targets import Target
from streams_k8s.k8s.objects import ObjectKey
from streams_k8s.sandbox.flow.exposition import pe_ids, pe_metrics
from streams_k8s.sandbox.flow.graph import build_graph
from streams_k8s.sandbox.flow.model import start, step
from streams_k8s.sandbox.flow.workload import parse_workload

JOB = ObjectKey("ns", "shop")
AUTOSCALED = parse_workload(
    {
        "operators": {
            "Src": {"source": {"rate": 2000}},
            "Score": {"inputs": ["Src"], "cost": 1 / 600, "region": "S"},
            "Sink": {"inputs": ["Score"], "cost": 1 / 5000},
        }
    }
)


class PeServers:
    """PE metric endpoints on one local server: /pe/<n> serves what ``texts[n]`` holds now."""

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}
        self.base = ""
        self.requests = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        pe = int(request.match_info["pe"])
        if pe not in self.texts:
            return web.Response(status=503, text="not up")
        return web.Response(text=self.texts[pe], content_type="text/plain")

    def target(self, pe: int) -> Target:
        return Target(JOB, pe, f"{self.base}/pe/{pe}")


@pytest.fixture
async def servers() -> AsyncIterator[PeServers]:
    found = PeServers()
    app = web.Application()
    app.router.add_get("/pe/{pe}", found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    found.base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield found
    await runner.cleanup()


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_the_scraper_reads_each_pe_and_derives_the_job_flow(servers: PeServers) -> None:
    clock = Clock()
    targets = [servers.target(1), servers.target(2), Target(JOB, 3, None)]
    scraper = FlowScraper(lambda: targets, clock=clock)
    told: list[set[ObjectKey]] = []
    scraper.add_listener(told.append)
    servers.texts[1] = recorded("pe-1-at-0s.prom")
    try:
        await scraper.scrape_once()
        flow = scraper.flow("ns", "shop")
        assert flow is not None
        assert flow.pes == {1: PeState.PENDING, 2: PeState.FAILING, 3: PeState.PENDING}
        assert "HTTP 503" in flow.problems[2]
        clock.now = 10.0
        servers.texts[1] = recorded("pe-1-at-10s.prom")
        await scraper.scrape_once()
    finally:
        await scraper.stop()
    flow = scraper.flow("ns", "shop")
    assert flow is not None
    assert flow.pes[1] is PeState.READ
    route = flow.operator("main.route")
    assert route is not None
    assert (route.tuples_in, route.tuples_out) == (400, 400)
    assert told == [{JOB}, {JOB}]
    assert (scraper.counts.reads, scraper.counts.failures) == (2, 2)


async def test_no_pe_is_read_while_the_controllers_are_busy(servers: PeServers) -> None:
    busy = True
    scraper = FlowScraper(lambda: [servers.target(1), servers.target(2)], idle=lambda: not busy)
    servers.texts[1] = servers.texts[2] = pe_text(1, 2, [OperatorCounts("a", 10, 10)], {})
    try:
        reading = asyncio.create_task(scraper.scrape_once())
        await asyncio.sleep(0.3)
        assert servers.requests == 0
        assert scraper.flow("ns", "shop") is None
        busy = False
        await asyncio.wait_for(reading, 5.0)
    finally:
        await scraper.stop()
    assert servers.requests == 2
    assert scraper.counts.reads == 2


async def test_a_pe_serving_no_exposition_is_failing_and_a_gone_pe_is_forgotten(servers: PeServers) -> None:
    targets = [servers.target(1), servers.target(2)]
    clock = Clock()
    scraper = FlowScraper(lambda: list(targets), clock=clock)
    servers.texts[1] = 'op_input_n_tuples_processed{name="a" 12\n'
    servers.texts[2] = pe_text(1, 2, [OperatorCounts("a", 10, 10)], {})
    try:
        await scraper.scrape_once()
        flow = scraper.flow("ns", "shop")
        assert flow is not None
        assert flow.pes[1] is PeState.FAILING
        assert "unclosed labels" in flow.problems[1]
        targets.pop()  # PE 2's pod is gone
        clock.now = 5.0
        await scraper.scrape_once()
    finally:
        await scraper.stop()
    assert scraper.last_samples(JOB) == {}
    flow = scraper.flow("ns", "shop")
    assert flow is not None
    assert set(flow.pes) == {1}


async def test_the_operator_serves_job_series_named_as_the_streams_exporter(servers: PeServers) -> None:
    clock = Clock()
    channels = [2, 3, 4]
    scraper = FlowScraper(lambda: [servers.target(n) for n in channels], clock=clock)
    registry = CollectorRegistry()
    registry.register(FlowCollector(scraper, max_operators=1))
    try:
        for at in (0.0, 10.0):
            clock.now = at
            for n in channels:
                ops = [OperatorCounts(f"par[{n}].work", 100 * at, 90 * at), OperatorCounts("z", at, at)]
                servers.texts[n] = pe_text(1, n, ops, {9: 10.0 * n})
            await scraper.scrape_once()
    finally:
        await scraper.stop()
    served = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for sample in family.samples
    }

    def value(name: str, **labels: str) -> float | None:
        key = tuple(sorted({"instancename": "ns", "jobname": "shop", **labels}.items()))
        return served.get((name, key))

    # three channels summed into their logical operator: one series however wide the region
    work = {"operatorname": "par.work"}
    assert value("streams_operator_ip_nTuplesProcessed", **work, inputportname="0") == 3000
    assert value("streams_operator_op_nTuplesSubmitted", **work, outputportname="0") == 2700
    assert value("streams_k8s_flow_operator_tuples_in_per_second", **work) == 300
    assert value("streams_k8s_flow_stream_tuples_per_second", **work, outputportname="0") == 270
    assert value("streams_job_max_congestionFactor") == 40
    assert value("streams_k8s_flow_pes", state="read") == 3
    assert not any("par[" in str(labels) for _, labels in served)
    # over the limit of logical operators per job: counted, not served
    assert value("streams_k8s_flow_operators_not_exported") == 1
    assert value("streams_k8s_flow_operator_tuples_in_per_second", operatorname="z") is None
    assert served[("streams_k8s_flow_reads_total", ())] == 6


async def test_the_autoscaler_takes_the_latest_round_of_the_same_reading(
    servers: PeServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One read of each PE serves the flow and the autoscaler: its scrape is the scraper's latest
    round, PEs whose reading failed in it left out, timed by the wall clock at the round."""
    graph = build_graph(AUTOSCALED, {"S": 2})
    ids = pe_ids(graph)
    pes = sorted(int(i) for i in ids.values())
    clock, state = Clock(), start(graph)
    scraper = FlowScraper(lambda: [servers.target(pe) for pe in pes], clock=clock)
    read = flow_reader(scraper)
    assert read(JOB) is None  # nothing read yet
    texts = {}
    try:
        for at in (0.0, 30.0):
            while state.t < at:
                state = step(graph, state, 0.1)
            texts[at] = {pe: pe_metrics(graph, state, "shop", pe, ids=ids) for pe in ids}
            servers.texts = {int(ids[pe]): text for pe, text in texts[at].items()}
            if at:
                del servers.texts[pes[-1]]  # its reading fails in the second round
            clock.now = at
            monkeypatch.setattr("time.time", lambda at=at: 1_000_000 + at)
            await scraper.scrape_once()
            if not at:
                first = read(JOB)
    finally:
        await scraper.stop()
    second = read(JOB)
    assert first is not None
    assert second is not None
    assert (first.t, second.t) == (1_000_000, 1_000_030)
    expected = window(
        read_scrape(0.0, {ids[pe]: text for pe, text in texts[0.0].items()}),
        read_scrape(30.0, {ids[pe]: t for pe, t in texts[30.0].items() if ids[pe] != str(pes[-1])}),
    )
    got = window(first, second)
    assert got.instances == expected.instances
    assert {i.operator for i in got.instances} == {"Src", "Score"}  # the failing PE's Sink left out
