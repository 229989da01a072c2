"""``streams-k8s plan -o svg|html``: the planned graph with its fusion as one self-contained file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
from click.testing import CliRunner
from lxml import html as lxml_html

from console_graphs import drawn
from repo_paths import shared_testdata
from streams_k8s.app.synthetic import Imported, SyntheticSpec, write_sab
from streams_k8s.cli import main


def _plan(*args: str) -> str:
    result = CliRunner().invoke(main, ["plan", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_svg_of_the_real_samples_has_their_pes_and_operators() -> None:
    parallel = drawn(_plan(str(shared_testdata("apps", "apps.parallel.Parallel.sab")), "-o", "svg"))
    assert len(parallel.pes) == 5
    assert set(parallel.operators) == {
        "Source",
        "Sink",
        "Result.Region1[0]",
        "Result.Region2[0]",
        "Result.Region3[0]",
    }
    importer = drawn(_plan(str(shared_testdata("apps", "apps.pubsub.Importer.sab")), "-o", "svg"))
    assert (len(importer.pes), len(importer.operators), len(importer.imports)) == (1, 2, 3)


def test_html_is_one_self_contained_deterministic_file(tmp_path: Path) -> None:
    spec = SyntheticSpec(
        chains=3, length=4, regions=1, width=3, imports=(Imported(application="a::B", stream="s"),)
    )
    sab = write_sab(tmp_path / "app.sab", spec)
    page = _plan(str(sab), "--fusion", "legacy", "-o", "html")
    assert page == _plan(str(sab), "--fusion", "legacy", "-o", "html")  # same job, same picture
    doc = lxml_html.fromstring(page)
    assert not doc.xpath("//script[@src] | //link[@href] | //img[@src]")  # nothing to fetch
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page)
    scripts = doc.xpath("//script[not(@type)]")
    assert len(scripts) == 1
    assert "streamsGraph" in scripts[0].text
    data = orjson.loads(doc.get_element_by_id("graph-data").text)
    assert len(data["pes"]) == 1 + 3 * 4 + 2 + 1  # legacy: one PE per operator, the region at width 3
    shown = doc.get_element_by_id("graph")
    assert shown.xpath(".//*[@data-region]/@data-width") == ["3"]
    # the region collapsed hides its channels' PEs; the expanded layout the page carries has them all
    assert len(doc.xpath("//div[@id='graph']//*[@data-pe and @data-collapsed]")) == len(data["pes"]) - 2
    assert len(doc.xpath("//template[@data-variant]")) == 1
    assert len(set(re.findall(r'class="pe" data-pe="(\d+)"', page))) == len(data["pes"])


def test_a_bad_bundle_is_still_one_line_with_a_picture_asked_for(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["plan", str(tmp_path / "absent.sab"), "-o", "html"])
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1
    assert result.output.startswith("error: ")


def test_the_picture_does_not_depend_on_string_hashing(tmp_path: Path) -> None:
    """Same job, same picture across processes: nothing in the layout follows a set's order."""
    spec = SyntheticSpec(chains=4, length=3, regions=2, width=3, colocate_pairs=True)
    sab = write_sab(tmp_path / "app.sab", spec)
    run = "from streams_k8s.cli import main; main()"
    pictures = {
        subprocess.run(
            [sys.executable, "-c", run, "plan", str(sab), "-o", "svg"],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            check=True,
            timeout=120,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(pictures) == 1
