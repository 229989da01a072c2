"""Streams job configuration overlays: what each field becomes on the Job, and every field that would
be dropped refused by name; `plan -g` plans with the overlay's settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from streams_k8s.api.job import JobSpec
from streams_k8s.app.job_overlays import OverlayError, read_overlay
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.cli import main


def overlay(job: dict[str, Any] | None = None, deployment: dict[str, Any] | None = None) -> dict[str, Any]:
    one: dict[str, Any] = {}
    if job is not None:
        one["jobConfig"] = job
    if deployment is not None:
        one["deploymentConfig"] = deployment
    return {"jobConfigOverlays": [one], "comment": "nightly run"}


def test_an_overlay_becomes_the_jobs_settings_and_the_job_model_accepts_them() -> None:
    read = read_overlay(
        overlay(
            {
                "jobName": "nightly",
                "submissionParameters": [{"name": "rate", "value": "10"}, {"name": "debug", "value": True}],
                "dataDirectory": "/data/in",
                "tracing": "debug",
            },
            {
                "fusionScheme": "manual",
                "fusionTargetPeCount": 3,
                "parallelRegionConfig": {"fusionType": "channelIsolation"},
                "threadingModel": "dynamic",
                "dynamicThreadingThreadCount": 4,
                "dynamicThreadingElastic": False,
            },
        )
    )
    assert read.job_name == "nightly"
    patch = read.spec_patch()
    assert patch == {
        "submissionTimeValues": {"rate": "10", "debug": "true"},
        "fusion": {"manual": 3, "type": "channelIsolation"},
        "threadingModel": {"dynamic": {"threadCount": 4, "elastic": False}},
        "processingElement": {"dataPath": "/data/in", "appTraceLevel": "DEBUG"},
    }
    spec = JobSpec.model_validate({"bundle": {"name": "app.sab"}, **patch})
    assert (spec.fusion.manual, spec.threading_model.mode, spec.processing_element.data_path) == (
        3,
        "dynamic",
        "/data/in",
    )


@pytest.mark.parametrize(
    ("document", "refusal"),
    [
        (overlay({"jobName": "x", "priority": 3}), "jobConfig.priority: unknown field"),
        (
            overlay(deployment={"fusionSchemeWeights": {}}),
            "deploymentConfig.fusionSchemeWeights: unknown field",
        ),
        (
            overlay({"jobGroup": "ops"}),
            "jobConfig.jobGroup: who may do what to a job is the namespace's RBAC",
        ),
        (
            overlay(deployment={"placementScheme": "balanced"}),
            "deploymentConfig.placementScheme: kube-scheduler",
        ),
        ({"jobConfigOverlays": [{"operatorConfigs": []}]}, "operatorConfigs: per-operator overlays"),
        ({"jobConfigOverlays": [], "extra": 1}, "extra: unknown field"),
        (
            overlay(deployment={"parallelRegionConfig": {"fusionType": "channelIsolation", "width": 2}}),
            "deploymentConfig.parallelRegionConfig.width: unknown field",
        ),
        (
            overlay({"submissionParameters": [{"name": "a", "value": "1", "secret": True}]}),
            "jobConfig.submissionParameters[0].secret: unknown field",
        ),
        (overlay(deployment={"fusionScheme": "manual"}), "manual needs fusionTargetPeCount"),
        (overlay(deployment={"fusionScheme": "legacy", "fusionTargetPeCount": 2}), "of fusionScheme manual"),
        (overlay(deployment={"threadingModel": "fast"}), "threadingModel: 'fast' is none of"),
        (
            overlay(deployment={"fusionScheme": "manual", "fusionTargetPeCount": True}),
            "a PE count (1 or more)",
        ),
        (overlay({"tracing": "loud"}), "jobConfig.tracing: 'loud' is none of"),
        ({"jobConfigOverlays": [{}, {}]}, "more than one overlay"),
        ([], "the overlay document: must be a JSON object"),
    ],
)
def test_a_field_with_no_meaning_here_is_refused_by_name(document: Any, refusal: str) -> None:
    with pytest.raises(OverlayError) as refused:
        read_overlay(document)
    assert refusal in str(refused.value)


def test_plan_plans_with_the_overlays_fusion_and_refuses_an_unknown_field(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=4, length=3))
    path = tmp_path / "overlay.json"
    path.write_text(
        json.dumps(overlay({"jobName": "nightly"}, {"fusionScheme": "manual", "fusionTargetPeCount": 2}))
    )
    done = CliRunner().invoke(main, ["plan", str(sab), "-g", str(path), "-o", "json"])
    assert done.exit_code == 0, done.output
    assert len(json.loads(done.stdout)["pes"]) == 2
    path.write_text(json.dumps(overlay({"jobName": "nightly", "priority": 1})))
    done = CliRunner().invoke(main, ["plan", str(sab), "-g", str(path)])
    assert done.exit_code == 1
    assert done.stderr == "error: jobConfig.priority: unknown field, not applied by streams-k8s\n"
