"""The job graph's flow scheme in a real browser (headless Chromium): a running six-PE job of the
sandbox whose PEs' metrics (local HTTP endpoints serving the runtime's exposition for the job's
operators) are read by the console's `FlowScraper`; the picture fits the page, health is the
default scheme, the flow scheme colours operators and streams by rate (no flow black), thickens
edges by rate and marks a congested connection, the figures are in the hover titles, and a new
reading updates the page without a reload. Screenshots of both schemes go to pytest's tmp dir, the
congested job's also to ``FLOW_SCREENSHOT`` when set."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from chromium import Page, browser, chromium_or_skip, page
from console_support import console, get_json
from flow_expositions import OperatorCounts, pe_text
from operator_support import free_port, job_manifest, operator, wait_for_phase
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.flow.scraper import FlowScraper
from streams_k8s.controller.flow.targets import Target
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.objects import ObjectKey
from streams_k8s.sandbox import Sandbox

API_PORT = free_port()
JOB = ObjectKey("default", "demo")
EDGES = "[...document.querySelectorAll('#graph [data-edge]')]"
# Edges between operators of two PEs (both ends drawn as operators), as [key, src PE, dst PE].
CROSSING = f"""{EDGES}.map(e => {{
  const [src, dst] = e.dataset.edge.split('->');
  const pe = n => document.querySelector(`#graph [data-operator="${{n}}"]`)?.dataset.pe;
  return [e.dataset.edge, pe(src), pe(dst)];
}}).filter(([, a, b]) => a && b && a !== b)"""


class PeEndpoints:
    """What each PE of the job serves on its metrics port: ``texts[pe]``."""

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}
        self.base = ""

    async def handle(self, request: web.Request) -> web.Response:
        pe = int(request.match_info["pe"])
        if pe not in self.texts:
            return web.Response(status=500, text="the runtime is not up")
        return web.Response(text=self.texts[pe], content_type="text/plain")


@pytest.fixture
async def endpoints() -> AsyncIterator[PeEndpoints]:
    found = PeEndpoints()
    app = web.Application()
    app.router.add_get("/pe/{pe}", found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    found.base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield found
    await runner.cleanup()


def _readings(
    operators: dict[int, list[str]], at: float, stalled: str, congested: tuple[int, int]
) -> dict[int, str]:
    """Each PE's text ``at`` seconds in: operator n moves 100 * (n + 1) tuples/s, ``stalled`` none;
    PE congested[0]'s connection to congested[1] is 90% congested."""
    texts = {}
    for pe, names in operators.items():
        ops = []
        for n, name in enumerate(names):
            rate = 0 if name == stalled else 100 * (n + 1)
            ops.append(OperatorCounts(name, rate * at, rate * at, queued=900 if name == stalled else 10))
        links = {congested[1]: 90.0} if pe == congested[0] else {}
        texts[pe] = pe_text(1, pe, ops, links)
    return texts


@contextlib.asynccontextmanager
async def _demo_in_the_console(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: SyntheticSpec, pes: int
) -> AsyncIterator[tuple[FlowScraper, list[Target], list[float], Any, str, dict[int, list[str]]]]:
    """Job `demo` of ``spec`` fused into ``pes`` PEs, Running, in a console whose flow is a scraper
    of the test's targets on the test's clock; its PEs' operators by id. The operator's own
    reading is off: the test serves the PEs' metrics."""
    chromium_or_skip()
    monkeypatch.setenv("STREAMS_K8S_FLOW_INTERVAL", "0")
    bundle = write_sab(tmp_path / "app.sab", spec)
    targets: list[Target] = []
    clock = [0.0]
    scraper = FlowScraper(lambda: targets, clock=lambda: clock[0])
    async with (
        await KubeClient.connect(str(sandbox.kubeconfig_path)) as client,
        operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT),
        console(sandbox, tmp_path / "cache", flow=scraper) as live,
        browser(width=1280, height=900) as address,
    ):
        await client.create(JOBS, job_manifest("demo", bundle, fusion={"manual": pes}))
        await wait_for_phase(client, "demo", "Running")
        _, job = await get_json(f"{live.url}/api/jobs/default/demo")
        operators = {int(p["id"]): list(p["operators"]) for p in job["pes"]}
        try:
            yield scraper, targets, clock, live, address, operators
        finally:
            await scraper.stop()


async def _shot(tab: Page, *paths: Path) -> None:
    image = await tab.screenshot()
    for path in paths:
        await asyncio.to_thread(path.write_bytes, image)


async def _scheme(tab: Page, value: str) -> None:
    await tab.evaluate(
        f"(() => {{ const s = document.getElementById('scheme'); s.value = '{value}';"
        " s.dispatchEvent(new Event('change')); return true; })()"
    )


@pytest.mark.sandbox(nodes=2, controller_url=f"http://127.0.0.1:{API_PORT}", start_delay=0.2)
async def test_the_flow_view_in_the_browser(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, endpoints: PeEndpoints
) -> None:
    async with _demo_in_the_console(
        sandbox, tmp_path, monkeypatch, SyntheticSpec(chains=2, length=2, regions=1, width=2), 6
    ) as (scraper, targets, clock, live, address, operators):
        assert len(operators) == 6
        async with page(address, f"{live.url}/jobs/default/demo") as tab:
            await tab.wait_for("document.querySelectorAll('#graph [data-operator]').length > 0")
            await tab.wait_for(
                "[...document.querySelectorAll('#graph [data-pe]')].some(e => e.dataset.health === 'ok')"
            )
            # it fits: no horizontal scroll of the page or of the graph
            assert await tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
            graph = "document.getElementById('graph')"
            assert await tab.evaluate(f"{graph}.scrollWidth <= {graph}.clientWidth")
            assert await tab.evaluate("document.getElementById('graph').dataset.scheme") == "health"
            crossing = await tab.evaluate(CROSSING)
            assert crossing, "the job has streams between PEs"
            edge, src_pe, dst_pe = crossing[0]
            stalled = edge.split("->")[1]  # the congested stream's receiver moves nothing
            congested = (int(src_pe), int(dst_pe))

            targets[:] = [Target(JOB, pe, f"{endpoints.base}/pe/{pe}") for pe in operators]
            for at in (0.0, 10.0):
                clock[0] = at
                endpoints.texts = _readings(operators, at, stalled, congested)
                await scraper.scrape_once()
            await tab.wait_for(
                f"document.querySelector('#graph [data-operator=\"{stalled}\"]').dataset.flow === 'none'"
            )
            await _shot(tab, tmp_path / "flow-health-scheme.png")

            await _scheme(tab, "flow")
            assert await tab.evaluate("document.getElementById('graph').dataset.scheme") == "flow"
            stalled_rect = f"document.querySelector('#graph [data-operator=\"{stalled}\"] > rect')"
            assert await tab.evaluate(f"getComputedStyle({stalled_rect}).fill") == "rgb(17, 17, 17)"
            levels = await tab.evaluate(
                "[...document.querySelectorAll('#graph [data-operator]')].map(e => e.dataset.flow)"
            )
            assert "none" in levels
            assert {"low", "mid", "high"} & set(levels)
            assert "unknown" not in levels
            marked = f"document.querySelector('#graph [data-edge=\"{edge}\"]')"
            assert await tab.evaluate(f"{marked}.dataset.congested") == "true"
            assert await tab.evaluate(
                f"getComputedStyle({marked}.querySelector('path') || {marked}).stroke"
            ) == ("rgb(214, 39, 40)")
            widths = await tab.evaluate(
                f"{EDGES}.map(e => parseFloat(getComputedStyle(e.querySelector('path') || e).strokeWidth))"
            )
            assert max(widths) > min(widths)  # thickness follows the rate
            title = await tab.evaluate(f"{stalled_rect}.parentNode.querySelector('title').textContent")
            assert "in 0/s" in title
            assert "queue 90%" in title
            shot = os.environ.get("FLOW_SCREENSHOT")
            await _shot(tab, tmp_path / "flow-congested.png", *([Path(shot)] if shot else []))

            # a reading in which the stalled operator moves again: recoloured without a reload
            await tab.evaluate("window.notReloaded = true")
            clock[0] = 20.0
            endpoints.texts = _readings(operators, 20.0, "", congested)
            await scraper.scrape_once()
            await tab.wait_for(
                f"document.querySelector('#graph [data-operator=\"{stalled}\"]').dataset.flow !== 'none'"
            )
            assert await tab.evaluate("window.notReloaded === true")

            # a PE whose reading fails: its operators unknown (not no flow), the reason on hover
            drawn = await tab.evaluate(
                "[...document.querySelectorAll('#graph [data-operator]')].map(e => Number(e.dataset.pe))"
            )
            failing = max(set(drawn) - {congested[0], congested[1]})
            clock[0] = 30.0
            endpoints.texts = _readings(operators, 30.0, "", congested)
            del endpoints.texts[failing]
            await scraper.scrape_once()
            lost = f"document.querySelector('#graph [data-operator][data-pe=\"{failing}\"]')"
            await tab.wait_for(f"{lost}.dataset.flow === 'unknown'")
            title = await tab.evaluate(f"{lost}.querySelector('title').textContent")
            assert f"reading PE {failing} failed" in title
            assert "HTTP 500" in title
            await _scheme(tab, "health")
            assert await tab.evaluate(f"getComputedStyle({stalled_rect}).fill") != "rgb(17, 17, 17)"


@pytest.mark.sandbox(nodes=2, controller_url=f"http://127.0.0.1:{API_PORT}", start_delay=0.2)
async def test_a_big_job_s_collapsed_pes_in_the_flow_scheme(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, endpoints: PeEndpoints
) -> None:
    """Over 1,500 operators every PE is drawn collapsed: a PE box takes the level of what the PE
    sends on its own ports, an edge between two the rate its source PE sends."""
    async with _demo_in_the_console(
        sandbox, tmp_path, monkeypatch, SyntheticSpec(chains=16, length=100), 4
    ) as (scraper, targets, clock, live, address, operators):
        stalled = min(operators)  # sends nothing on its own ports
        targets[:] = [Target(JOB, pe, f"{endpoints.base}/pe/{pe}") for pe in operators]
        for at in (0.0, 10.0):
            clock[0] = at
            endpoints.texts = {
                pe: pe_text(
                    1,
                    pe,
                    [OperatorCounts(n, 10 * at, 10 * at) for n in names],
                    {},
                    (100 * at, 0.0 if pe == stalled else 100 * (pe + 1) * at),
                )
                for pe, names in operators.items()
            }
            await scraper.scrape_once()
        async with page(address, f"{live.url}/jobs/default/demo") as tab:
            boxes = "[...document.querySelectorAll('#graph [data-pe][data-collapsed=true]')]"
            await tab.wait_for(f"{boxes}.length === {len(operators)}", within=60)
            await _scheme(tab, "flow")
            await tab.wait_for(f"{boxes}.every(e => e.dataset.flow && e.dataset.flow !== 'unknown')")
            levels = await tab.evaluate(
                f"Object.fromEntries({boxes}.map(e => [e.dataset.pe, e.dataset.flow]))"
            )
            assert levels[str(stalled)] == "none"
            assert levels[str(max(operators))] == "high"
            box = f"document.querySelector('#graph [data-pe=\"{stalled}\"][data-collapsed=true] > rect')"
            assert await tab.evaluate(f"getComputedStyle({box}).fill") == "rgb(17, 17, 17)"
            edges = await tab.evaluate(f"{EDGES}.map(e => [e.dataset.edge, e.dataset.flow])")
            assert edges
            assert all(level != "unknown" for _, level in edges), edges
            await _shot(tab, tmp_path / "flow-collapsed.png")
