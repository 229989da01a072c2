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


def test_two_bundles_are_a_job_of_default_settings_running_each(tmp_path: Path) -> None:
    """A rebuilt operator (new code, same graph): only its PE is replaced, for its content."""
    (tmp_path / "v2").mkdir()
    v1 = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2))
    v2 = write_sab(tmp_path / "v2" / "app.sab", SyntheticSpec(chains=2, length=2, rebuilt=frozenset({1})))
    found = preview(v2, v1)
    assert found == preview(manifest(tmp_path, "new.yaml", v2), manifest(tmp_path, "old.yaml", v1))
    assert [r["reasons"] for r in found["replaced"]] == [["content"]]
    assert found["kept"]
    assert (found["added"], found["removed"], found["updated"]) == ([], [], [])


def test_a_bundle_against_a_job_manifest_is_that_job_running_it(tmp_path: Path) -> None:
    """Either side: the bundle takes the manifest's settings, so only the code changes."""
    (tmp_path / "v2").mkdir()
    v1 = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=3, length=2))
    v2 = write_sab(tmp_path / "v2" / "app.sab", SyntheticSpec(chains=3, length=2, rebuilt=frozenset({1, 3})))
    settings: dict[str, Any] = {"fusion": {"manual": 3}, "processingElement": {"runtimeTraceLevel": "TRACE"}}
    old, new = manifest(tmp_path, "old.yaml", v1, **settings), manifest(tmp_path, "new.yaml", v2, **settings)
    found = preview(v2, old)
    assert found == preview(new, old) == preview(new, v1)
    assert [r["reasons"] for r in found["replaced"]] == [["content"]] * len(found["replaced"])
    assert found["replaced"]
    assert found["kept"]
    # a bare bundle would be a Job of default settings: the trace level and fusion would change
    assert preview(v2, v1) != found


def test_against_fails_in_one_line_on_a_bundle_that_does_not_parse_or_a_missing_file(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=1))
    broken = tmp_path / "broken.sab"
    broken.write_bytes(b"not a zip")
    for new, old in [(sab, broken), (broken, sab), (sab, tmp_path / "gone.sab")]:
        result = CliRunner().invoke(main, ["plan", str(new), "--against", str(old)])
        assert result.exit_code == 1
        assert result.output.startswith("error: ")
        assert len(result.output.splitlines()) == 1, result.output


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


def test_plan_diff_and_plan_against_print_one_diff_for_one_width_change(tmp_path: Path) -> None:
    """A width change given with ``--diff --width`` or as an edit of the Job's parallelRegions:
    the same PEs kept, replaced (with the same reasons), added and removed, printed alike."""
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, regions=1, width=2))
    old = manifest(tmp_path, "old.yaml", sab, fusion={"legacy": True})
    wider = [{"alias": "C0_1", "width": 3}]
    new = manifest(tmp_path, "new.yaml", sab, fusion={"legacy": True}, parallelRegions=wider)
    against = preview(new, old)
    result = CliRunner().invoke(main, ["plan", str(old), "--diff", "--width", "C0_1=3", "-o", "json"])
    assert result.exit_code == 0, result.output
    diff = orjson.loads(result.output)
    pe_level = ("kept", "updated", "replaced", "added", "removed", "summary")
    assert {k: diff[k] for k in pe_level} == {k: against[k] for k in pe_level}
    assert (len(against["kept"]), len(against["added"]), against["removed"]) == (5, 1, [])
    # the splitter's PE gains an output port; the channel and the merger change their code
    reasons = sorted(r["reasons"] for r in against["replaced"])
    assert reasons == [["content"]] * 3 + [["content", "ports"]]
    table = CliRunner().invoke(main, ["plan", str(old), "--diff", "--width", "C0_1=3"]).output.splitlines()
    against_table = CliRunner().invoke(main, ["plan", str(new), "--against", str(old)]).output.splitlines()
    assert table == against_table[:-1]  # --against adds the state line: the job's, not its PEs'
    assert against_table[-1] == "state kept: - (upgradeMode stateless)"


def test_resources_and_a_suspend_replace_every_pe_for_reasons_of_their_own(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=3, length=2))
    old = manifest(tmp_path, "old.yaml", sab, fusion={"manual": 3})
    more = {"processingElement": {"resources": {"requests": {"cpu": "200m"}}}}
    found = preview(manifest(tmp_path, "cpu.yaml", sab, fusion={"manual": 3}, **more), old)
    assert [(r["id"], r["reasons"]) for r in found["replaced"]] == [(i, ["resources"]) for i in range(3)]
    job_wide = manifest(tmp_path, "job.yaml", sab, fusion={"manual": 3}, resources={"requests": {"cpu": "3"}})
    found = preview(job_wide, old)  # a third of the Job's each
    assert [(r["id"], r["reasons"]) for r in found["replaced"]] == [(i, ["resources"]) for i in range(3)]
    suspended = manifest(tmp_path, "suspended.yaml", sab, fusion={"manual": 3}, state="Suspended")
    found = preview(suspended, old)
    assert [(r["id"], r["reasons"]) for r in found["replaced"]] == [(i, ["state"]) for i in range(3)]
