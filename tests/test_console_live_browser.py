"""The live console in a real browser (headless Chromium) against the sandbox with a generated job:
the graph's PE boxes, operators, channels and edges; a killed PE pod recoloured without a reload;
a width change redrawn without a reload. Screenshots of the views go to pytest's tmp dir."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from chromium import Page, browser, chromium_or_skip, page
from console_support import console, get_json
from operator_support import free_port, job_manifest, operator, wait_for_phase
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox

API_PORT = free_port()
PE_BOXES = "#graph [data-pe]:not([data-operator])"
# Every change of a PE box's data-health, recorded by the page's own DOM (a MutationObserver).
RECORD_HEALTH = """(() => {
  window.healthLog = [];
  new MutationObserver(changes => changes.forEach(c => window.healthLog.push(
    [c.target.getAttribute('data-pe'), c.target.getAttribute('data-health')])))
    .observe(document.getElementById('graph'),
             {attributes: true, attributeFilter: ['data-health'], subtree: true});
  window.notReloaded = true;
  return true;
})()"""


async def _shot(tab: Page, path: Path) -> None:
    image = await tab.screenshot()
    await asyncio.to_thread(path.write_bytes, image)


def _operators_in(pe: str) -> str:
    found = f"document.querySelectorAll('#graph [data-pe=\"{pe}\"][data-operator]')"
    return f"[...{found}].map(e => e.dataset.operator)"


@pytest.mark.sandbox(nodes=2, controller_url=f"http://127.0.0.1:{API_PORT}", start_delay=0.5)
async def test_the_job_graph_lives_in_the_browser(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium_or_skip()
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2, regions=1, width=2))
    async with (
        await KubeClient.connect(str(sandbox.kubeconfig_path)) as client,
        operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT),
        console(sandbox, tmp_path / "cache") as live,
        browser() as address,
    ):
        await client.create(JOBS, job_manifest("demo", bundle, fusion={"manual": 3}))
        await wait_for_phase(client, "demo", "Running")
        async with page(address, f"{live.url}/jobs") as tab:
            await tab.wait_for("document.querySelector('[data-job=\"default/demo\"]') !== null")
            await _shot(tab, tmp_path / "jobs.png")

        _, job = await get_json(f"{live.url}/api/jobs/default/demo")
        async with page(address, f"{live.url}/jobs/default/demo") as tab:
            await tab.wait_for(f"document.querySelectorAll('{PE_BOXES}').length === 3")
            for pe in job["pes"]:  # one box per PE, with its operators inside (channels collapsed)
                drawn = set(await tab.evaluate(_operators_in(str(pe["id"]))))
                assert drawn, pe
                assert drawn <= set(pe["operators"]) | {op.split("[")[0] + "[0]" for op in pe["operators"]}
            region = "document.querySelector('#graph [data-region]')"
            assert await tab.evaluate(f"{region}.dataset.width") == "2"
            edges = await tab.evaluate(
                "[...document.querySelectorAll('#graph [data-edge]')].map(e => e.dataset.edge)"
            )
            assert edges
            await tab.wait_for(
                f"[...document.querySelectorAll('{PE_BOXES}')].every(e => e.dataset.health === 'ok')"
            )
            await _shot(tab, tmp_path / "job.png")

            # Kill a PE's pod: its box changes colour without a reload.
            assert await tab.evaluate(RECORD_HEALTH)
            victim = job["pes"][0]
            async with aiohttp.ClientSession() as session:
                body = {"action": "killPod", "namespace": "default", "pod": victim["pod"]}
                async with session.post(f"{sandbox.url}/_sandbox/cluster", json=body) as answer:
                    assert answer.status == 200
            await tab.wait_for(
                f"window.healthLog.some(([pe, h]) => pe === '{victim['id']}' && h !== 'ok')", within=10
            )
            await _shot(tab, tmp_path / "job-pe-killed.png")

            # Change the width: the graph is redrawn with it, still without a reload.
            alias = job["parallelRegions"][0]["alias"]
            regions, _ = await client.list_all(PARALLEL_REGIONS, "default")
            name = next(r["metadata"]["name"] for r in regions if r["spec"]["alias"] == alias)
            await client.patch(PARALLEL_REGIONS, name, {"spec": {"width": 3}}, "default")
            await tab.wait_for(f"{region} && {region}.dataset.width === '3'", within=30)
            assert await tab.evaluate("window.notReloaded === true")
            await _shot(tab, tmp_path / "job-width-3.png")
