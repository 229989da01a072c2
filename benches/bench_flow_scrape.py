"""The operator reading its PEs' metrics (issue 32, point 2): PEs read per second and the reader's
CPU at 1,000 PEs. The PEs are a farm of local HTTP servers in a process of their own
(``flow_pe_farm.py``: six operators a PE, the runtime's families plus the ones it skips), so this
process's CPU time is the reader's: HTTP, parsing, windows, the job's flow and the ``/metrics``
text of the job series.

Run: ``pytest benches/bench_flow_scrape.py --benchmark-enable -s`` (figures in benches/README.md).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from streams_k8s.controller.flow.exported import FlowCollector
from streams_k8s.controller.flow.readers import PodReader
from streams_k8s.controller.flow.scraper import DEFAULT_INTERVAL, FlowScraper
from streams_k8s.controller.flow.targets import Target
from streams_k8s.k8s.objects import ObjectKey

PES = 1000
SERVERS = 8
ROUNDS = 6
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def farm() -> Any:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE.parent / "tests"), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "flow_pe_farm.py"), str(PES), str(SERVERS)],
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    ports = orjson.loads(proc.stdout.readline())["ports"]
    yield ports
    proc.terminate()
    proc.wait(10)


def test_read_1000_pes(benchmark: Any, farm: list[int]) -> None:
    job = ObjectKey("bench", "flow")
    targets = [Target(job, pe, f"http://127.0.0.1:{farm[pe % len(farm)]}/pe/{pe}") for pe in range(PES)]
    registry = CollectorRegistry()
    results: dict[str, float] = {}

    async def rounds() -> None:
        scraper = FlowScraper(lambda: targets, reader=PodReader(concurrency=64, timeout=10.0))
        registry.register(FlowCollector(scraper))
        try:
            await scraper.scrape_once()  # connections opened, first readings
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(ROUNDS):
                await scraper.scrape_once()
                generate_latest(registry)  # what Prometheus takes once a round
            results["wall"] = (time.perf_counter() - wall) / ROUNDS
            results["cpu"] = (time.process_time() - cpu) / ROUNDS
            assert scraper.counts.failures == 0
            flow = scraper.flow("bench", "flow")
            assert flow is not None
            assert len(flow.operators) == 6 * PES
        finally:
            await scraper.stop()

    benchmark.pedantic(lambda: asyncio.run(rounds()), rounds=1, iterations=1)
    per_second = PES / results["wall"]
    share = results["cpu"] / DEFAULT_INTERVAL
    print(
        f"\n{PES} PEs: a round {results['wall']:.2f} s wall, {results['cpu']:.2f} s CPU; "
        f"{per_second:,.0f} PEs read/s; {results['cpu'] / PES * 1e3:.2f} ms CPU a PE; "
        f"{share:.0%} of a core at one round per {DEFAULT_INTERVAL:.0f} s"
    )
    benchmark.extra_info.update(results | {"pes_per_second": per_second, "core_share": share})


def test_parse_a_pe_text_against_prometheus_client() -> None:
    """The reader's parser (the families it reads only) against prometheus_client's full parser,
    on one farm PE's text, interleaved: what parsing costs a round of 1,000 PEs either way."""
    from prometheus_client.parser import text_string_to_metric_families

    from flow_pe_farm import _texts
    from streams_k8s.app.flow_samples import parse_exposition

    text = _texts(7)[3]
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(200):
        started = time.perf_counter()
        parse_exposition(text)
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        list(text_string_to_metric_families(text))
        theirs.append(time.perf_counter() - started)
    a, b = sorted(ours)[100], sorted(theirs)[100]
    print(
        f"\none PE's text ({len(text.splitlines())} lines): parse_exposition {a * 1e6:.0f} µs, "
        f"prometheus_client {b * 1e6:.0f} µs (x{b / a:.1f}); at 1,000 PEs {a * PES:.2f} s vs {b * PES:.2f} s"
    )
    assert a < b
