"""`streams-k8s plan`: output formats, diff and one-line errors."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.cli import main


def test_plan_json_and_diff(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, regions=1, width=2))
    result = CliRunner().invoke(main, ["plan", str(sab), "--fusion", "legacy", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = orjson.loads(result.output)
    assert len(data["pes"]) == 1 + 2 * 3 + 1 + 1
    diff = CliRunner().invoke(main, ["plan", str(sab), "--fusion", "legacy", "--diff", "--width", "C0_1=3"])
    assert diff.exit_code == 0, diff.output
    assert "added" in diff.output
    for flag in (["--diff", "--width", "C0_1=3"], ["--against", str(sab)]):  # a diff is no graph
        picture = CliRunner().invoke(main, ["plan", str(sab), *flag, "-o", "html"])
        assert picture.exit_code == 2
        assert "a diff prints as a table, json or yaml" in picture.output


def test_plan_errors_are_one_line(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=2))
    result = CliRunner().invoke(main, ["plan", str(sab), "--width", "Nope=2"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "error: no parallel region matches alias 'Nope' (regions: none)"
    ]
    missing = CliRunner().invoke(main, ["plan", str(tmp_path / "absent.sab")])
    assert missing.exit_code == 1
    assert "no such bundle" in missing.output


def test_plan_a_job_manifest(tmp_path: Path) -> None:
    write_sab(tmp_path / "app.sab", SyntheticSpec(chains=3, length=4, regions=1, width=2))
    (tmp_path / "job.yaml").write_text(
        "apiVersion: streams.ibm.com/v1\nkind: Job\nmetadata: {name: demo}\n"
        "spec:\n  bundle: {name: app.sab, file: {path: .}}\n  fusion: {manual: 2}\n"
        "  parallelRegions: [{alias: 'C0_*', width: 3}]\n"
    )
    result = CliRunner().invoke(main, ["plan", str(tmp_path / "job.yaml"), "-o", "yaml"])
    assert result.exit_code == 0, result.output
    import yaml

    data = yaml.safe_load(result.output)
    assert len(data["pes"]) == 2
    maps = {m["metadata"]["name"]: m for m in data["configMaps"]}
    assert set(maps) == {"demo-0", "demo-1", "demo"}
    assert "operator_port_labels.properties" in maps["demo"]["data"]
    assert (
        maps["demo-0"]["metadata"]["annotations"]["streams.ibm.com/contentId"] == data["pes"][0]["contentId"]
    )
    nodes = CliRunner().invoke(
        main, ["plan", str(tmp_path / "job.yaml"), "--fusion", "automatic", "--nodes", "1"]
    )
    assert nodes.exit_code == 0, nodes.output
    assert len(nodes.output.strip().splitlines()) == 2  # header + one PE


def test_invalid_job_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text("spec: {bundle: {}}\n")
    result = CliRunner().invoke(main, ["plan", str(tmp_path / "job.yaml")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == ["error: invalid Job: spec.bundle.name: Field required"]


def test_bad_fusion_and_width_options_are_refused_by_name(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=3, regions=1))
    for fusion in ("manual=0", "manual=x", "manual=", "fast"):
        result = CliRunner().invoke(main, ["plan", str(sab), "--fusion", fusion])
        assert result.exit_code == 2, fusion
        assert (
            "Invalid value for --fusion: use manual=N (N PEs, at least 1), legacy or automatic"
            in result.output
        )
    for width in ("x", "-1", "1.5", ""):
        result = CliRunner().invoke(main, ["plan", str(sab), "--width", f"C0_1={width}"])
        assert result.exit_code == 2, width
        assert f"Invalid value for --width: '{width}' is not a width (a whole number)" in result.output
    for width, why in (("0", "width 0 is below 1"), ("1001", "width 1001 is above 1000, the most channels")):
        result = CliRunner().invoke(main, ["plan", str(sab), "--width", f"C0_1={width}"])
        assert result.exit_code == 1
        assert result.output.startswith(f"error: parallel region C0_1: {why}")
        assert len(result.output.strip().splitlines()) == 1
