"""Console graph benchmarks: layout + SVG of 1,000 and 10,000 operators, and first paint and
frame time of ``plan -o html``'s page in headless Chromium (skipped without ``chromium``).

Run: ``pytest benches/bench_console_graph.py --benchmark-enable -s`` (figures in benches/README.md).
"""

from __future__ import annotations

import asyncio
import statistics
from pathlib import Path
from typing import Any

import pytest

from chromium import browser, chromium_or_skip, page
from streams_k8s.api.job import Fusion
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.plan import plan_application
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl
from streams_k8s.console.graph import JobGraph, graph_from_plan
from streams_k8s.console.layout import layout
from streams_k8s.console.render import render_svg
from streams_k8s.console.render_page import page_html

SIZES = {
    # 20 chains x 50 Functors + source/sink, 4 regions of width 3: 1,010 operators
    "1k": SyntheticSpec(chains=20, length=50, regions=4, width=3),
    # 100 chains x 100 Functors + source/sink, 10 regions of width 4: 10,032 operators
    "10k": SyntheticSpec(chains=100, length=100, regions=10, width=4),
}
# legacy: one PE per operator, the most boxes; automatic: a few PEs of hundreds of operators
FUSIONS = {"legacy": Fusion(legacy=True), "automatic": Fusion()}
CASES = [(size, fusion) for size in SIZES for fusion in FUSIONS]
ROUNDS = 3  # browser rounds: each opens a fresh tab

# One zoom step, then two frames: the time the browser takes to redraw the picture.
FRAME = """new Promise((done) => {
  const host = document.getElementById('graph');
  const t0 = performance.now();
  host.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, clientX: 400, clientY: 300, bubbles: true}));
  requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
})"""


@pytest.fixture(scope="module")
def graphs() -> dict[tuple[str, str], JobGraph]:
    found = {}
    for size, spec in SIZES.items():
        app = parse_adl(synthetic_adl(spec))
        for name, fusion in FUSIONS.items():
            found[(size, name)] = graph_from_plan(plan_application(app, fusion, job_name="bench"))
    return found


@pytest.mark.parametrize(("size", "fusion"), CASES)
def test_layout_and_svg(
    benchmark: Any, graphs: dict[tuple[str, str], JobGraph], size: str, fusion: str
) -> None:
    graph = graphs[(size, fusion)]
    svg = benchmark(lambda: render_svg(graph, layout(graph)))
    print(
        f"\n{size}/{fusion}: {len(graph.operators)} operators, {len(graph.pes)} PEs, "
        f"SVG {len(svg) / 1e6:.2f} MB"
    )
    assert svg.count("data-pe=") >= 1


def test_graph_from_plan_10k(benchmark: Any) -> None:
    plan = plan_application(parse_adl(synthetic_adl(SIZES["10k"])), FUSIONS["legacy"], job_name="bench")
    graph = benchmark(lambda: graph_from_plan(plan))
    assert len(graph.operators) >= 10_000


@pytest.mark.parametrize(("size", "fusion"), CASES)
def test_first_paint_in_chromium(
    benchmark: Any, graphs: dict[tuple[str, str], JobGraph], tmp_path: Path, size: str, fusion: str
) -> None:
    """First paint (navigation start to the graph's first frame, as the page records it) and the
    frame time of a zoom step; pytest-benchmark times the whole open-to-drawn round trip."""
    chromium_or_skip()
    html = tmp_path / "graph.html"
    html.write_text(page_html(graphs[(size, fusion)]))
    paints: list[float] = []
    frames: list[float] = []

    async def visit(address: str) -> None:
        async with page(address, html.as_uri()) as tab:
            await tab.wait_for("document.body && document.body.dataset.drawnMs", within=120)
            paints.append(float(await tab.evaluate("document.body.dataset.drawnMs")))
            frames.append(float(await tab.evaluate(FRAME)))

    async def run() -> None:
        async with browser() as address:
            await visit(address)  # warm-up: the browser's own start is not the page's
            paints.clear()
            frames.clear()
            for _ in range(ROUNDS):
                await visit(address)

    benchmark.pedantic(lambda: asyncio.run(run()), rounds=1, iterations=1)
    benchmark.extra_info.update(first_paint_ms=paints, frame_ms=frames, html_mb=html.stat().st_size / 1e6)
    print(
        f"\n{size}/{fusion}: page {html.stat().st_size / 1e6:.1f} MB, first paint median "
        f"{statistics.median(paints):.0f} ms (all {paints}), "
        f"zoom frame median {statistics.median(frames):.0f} ms"
    )
    assert len(paints) == ROUNDS
