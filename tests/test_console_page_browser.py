"""``plan -o html`` in a real browser (headless Chromium): the page draws the expected PEs and
operators, and pan, zoom, select and collapse/expand work with real mouse input."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from chromium import Page, browser, chromium_or_skip, page
from repo_paths import shared_testdata
from streams_k8s.cli import main

COUNTS = """(() => ({
  pes: document.querySelectorAll('#graph [data-pe]:not([data-operator])').length,
  operators: document.querySelectorAll('#graph [data-operator]').length,
  imports: document.querySelectorAll('#graph [data-import]').length,
  exports: document.querySelectorAll('#graph [data-export]').length,
}))()"""


def _page(tmp_path: Path, bundle: str, *options: str) -> str:
    chromium_or_skip()
    out = tmp_path / f"{bundle}.html"
    result = CliRunner().invoke(
        main, ["plan", str(shared_testdata("apps", bundle)), *options, "-o", "html"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    out.write_text(result.output)
    return out.as_uri()


async def _drawn(tab: Page) -> dict[str, int]:
    await tab.wait_for("document.body && document.body.dataset.drawnMs")
    counts: dict[str, int] = await tab.evaluate(COUNTS)
    return counts


async def test_the_pubsub_samples_render_with_their_pes_and_streams_to_other_jobs(tmp_path: Path) -> None:
    importer = _page(tmp_path, "apps.pubsub.Importer.sab")
    exporter = _page(tmp_path, "apps.pubsub.Exporter.sab")
    async with browser() as address:
        async with page(address, importer) as tab:
            assert await _drawn(tab) == {"pes": 1, "operators": 2, "imports": 3, "exports": 0}
        async with page(address, exporter) as tab:
            assert await _drawn(tab) == {"pes": 4, "operators": 4, "imports": 0, "exports": 3}


async def test_the_parallel_sample_selects_collapses_pans_and_zooms(tmp_path: Path) -> None:
    url = _page(tmp_path, "apps.parallel.Parallel.sab", "--width", "Result.Region2=3")
    async with browser() as address, page(address, url) as tab:
        # collapsed by default: channel 0 of the width-3 region stands for all three
        assert await _drawn(tab) == {"pes": 5, "operators": 5, "imports": 0, "exports": 0}
        region = '#graph [data-region="Result.Region2"]'
        assert await tab.evaluate(f"document.querySelector('{region}').dataset.width") == "3"

        await tab.click_element('#graph [data-operator="Result.Region2[0]"] rect')
        panel = await tab.evaluate("document.getElementById('panel').innerText")
        assert "spl.relational::Functor" in panel
        assert "Result.Region2[0]" in panel

        await tab.click_element(f"{region} .region-label")
        await tab.wait_for("document.querySelectorAll('#graph [data-operator]').length === 7")
        assert await _drawn(tab) == {"pes": 7, "operators": 7, "imports": 0, "exports": 0}
        channels = await tab.evaluate(
            "[...document.querySelectorAll('#graph g.channel')].map(c => c.dataset.channel)"
        )
        assert {c for c in channels if c.startswith("Result.Region2/")} == {
            f"Result.Region2/{n}" for n in range(3)
        }
        # the clicked region stays selected across the re-layout
        assert await tab.evaluate("document.querySelector('#graph .selected').dataset.region") == (
            "Result.Region2"
        )
        assert "width" in await tab.evaluate("document.getElementById('panel').innerText")

        before = await tab.evaluate("document.querySelector('#graph svg').getAttribute('viewBox')")
        await tab.wheel(700, 400, -300)
        zoomed = await tab.evaluate("document.querySelector('#graph svg').getAttribute('viewBox')")
        assert float(zoomed.split()[2]) < float(before.split()[2])  # zoomed in: a narrower view
        await tab.send(
            "Input.dispatchMouseEvent", type="mousePressed", x=700, y=600, button="left", clickCount=1
        )
        await tab.send("Input.dispatchMouseEvent", type="mouseMoved", x=600, y=600, button="left")
        await tab.send(
            "Input.dispatchMouseEvent", type="mouseReleased", x=600, y=600, button="left", clickCount=1
        )
        panned = await tab.evaluate("document.querySelector('#graph svg').getAttribute('viewBox')")
        assert float(panned.split()[0]) > float(zoomed.split()[0])  # dragged left: the view moved right
        (tmp_path / "parallel.png").write_bytes(await tab.screenshot())  # an artefact, not committed
