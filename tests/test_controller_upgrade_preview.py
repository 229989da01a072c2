"""`streams-k8s plan NEW --against OLD`: what an edit of a running job does, PE by PE, offline,
with the diff the job controller applies (`jobs.upgrade_diff`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import yaml
from click.testing import CliRunner

from operator_support import job_manifest
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.cli import main


def manifest(tmp_path: Path, name: str, sab: Path, **spec: Any) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(job_manifest("job", sab, **spec)))
    return path


def preview(new: Path, old: Path, *extra: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["plan", str(new), "--against", str(old), "-o", "json", *extra])
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = orjson.loads(result.output)
    return found


def test_a_pod_setting_edit_replaces_every_pe_for_its_pod_template_and_keeps_their_ids(
    tmp_path: Path,
) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=3, length=2))
    old = manifest(tmp_path, "old.yaml", sab, fusion={"manual": 3})
    new = manifest(
        tmp_path, "new.yaml", sab, fusion={"manual": 3}, processingElement={"runtimeTraceLevel": "TRACE"}
    )
    found = preview(new, old)
    assert [(r["id"], r["reasons"]) for r in found["replaced"]] == [(i, ["pod template"]) for i in range(3)]
    assert (found["kept"], found["added"], found["removed"]) == ([], [], [])
    policy = manifest(
        tmp_path, "policy.yaml", sab, fusion={"manual": 3}, processingElement={"restartCompletedPod": True}
    )
    found = preview(policy, old)
    assert (found["updated"], found["replaced"]) == ([0, 1, 2], [])


def test_a_bundle_upgrade_keeps_pe_ids_where_operators_stay_and_adds_the_rest(tmp_path: Path) -> None:
    v1 = write_sab(tmp_path / "v1.sab", SyntheticSpec(chains=2, length=2, fan_in=False))
    v2 = write_sab(tmp_path / "v2.sab", SyntheticSpec(chains=3, length=2, fan_in=False))
    old = manifest(tmp_path, "old.yaml", v1, fusion={"legacy": True})
    new = manifest(tmp_path, "new.yaml", v2, fusion={"legacy": True})
    found = preview(new, old)
    assert found["added"]
    assert not found["removed"]
    assert found["kept"] or found["replaced"]
    text = CliRunner().invoke(main, ["plan", str(new), "--against", str(old)])
    assert text.exit_code == 0
    assert text.output.splitlines()[0] == found["summary"]


def test_against_needs_two_job_manifests(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=1))
    old = manifest(tmp_path, "old.yaml", sab)
    result = CliRunner().invoke(main, ["plan", str(sab), "--against", str(old)])
    assert result.exit_code == 1
    assert "two Job manifests" in result.output


def test_the_preview_names_the_upgrade_mode_and_the_operators_that_keep_their_state(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "cr.sab", SyntheticSpec(chains=2, length=2, consistent_chains=2))
    old = manifest(tmp_path, "old.yaml", sab)
    new = manifest(tmp_path, "new.yaml", sab, processingElement={"appTraceLevel": "DEBUG"})
    found = preview(new, old)
    assert found["upgradeMode"] == "last-checkpoint"  # the default for a job with consistent regions
    assert found["stateKept"] == ["C0_0", "C0_1", "C1_0", "C1_1"]
    chosen = manifest(tmp_path, "first.yaml", sab, upgradeMode="checkpoint-first")
    assert preview(chosen, old)["upgradeMode"] == "checkpoint-first"
    plain = write_sab(tmp_path / "plain.sab", SyntheticSpec(chains=1, length=1))
    assert preview(manifest(tmp_path, "p2.yaml", plain), manifest(tmp_path, "p1.yaml", plain))[
        "upgradeMode"
    ] == ("stateless")
