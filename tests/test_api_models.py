"""The API models: what users write loads, gets its defaults, and dumps back intact; bad specs
are refused with messages that name the fields at fault."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from api_documents import INVALID_JOB_SPECS, USER_DOCUMENTS, invalid_job
from repo_paths import REPO
from streams_k8s.api import (
    KINDS,
    Job,
    ProcessingElement,
    Resource,
)
from streams_k8s.api.processing_element import BuildType
from streams_k8s.api.spec_values import FusionMode, ThreadingMode


def _job_documents() -> dict[str, dict[str, Any]]:
    """The example Jobs by name."""
    return {
        doc["metadata"]["name"]: doc
        for p in sorted((REPO / "examples" / "jobs").glob("*.yaml"))
        for doc in yaml.safe_load_all(p.read_text())
        if doc
    }


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_leaves(item, f"{path}.{key}"))
        return out
    if isinstance(value, list) and value:
        out = {}
        for index, item in enumerate(value):
            out.update(_leaves(item, f"{path}[{index}]"))
        return out
    return {path: value}


def _round_trip(kind: type[Resource], document: dict[str, Any]) -> None:  # type: ignore[type-arg]
    model = kind.from_wire(document)
    dumped = model.to_wire()
    written, kept = _leaves(document), _leaves(dumped)
    for path, value in written.items():
        assert path in kept, f"{path} lost in the round trip"
        # Timestamps come back normalised; everything else verbatim.
        if "Time" not in path:
            assert kept[path] == value, path
    assert kind.from_wire(dumped) == model


@pytest.mark.parametrize("name", sorted(_job_documents()))
def test_job_examples_round_trip(name: str) -> None:
    _round_trip(Job, _job_documents()[name])


@pytest.mark.parametrize("kind", list(USER_DOCUMENTS), ids=lambda k: k.kind_name)
def test_every_kind_round_trips(kind: type[Resource]) -> None:  # type: ignore[type-arg]
    _round_trip(kind, yaml.safe_load(USER_DOCUMENTS[kind]))


def test_every_kind_has_a_round_trip_case() -> None:
    assert set(KINDS) == {*USER_DOCUMENTS, Job}


def test_seed_example_gets_defaults() -> None:
    job = Job.from_wire(_job_documents()["parallel"])
    assert job.spec.fusion.mode is FusionMode.MANUAL
    assert job.spec.fusion.manual == 5
    assert job.spec.submission_time_out_in_seconds == 300
    assert job.spec.transport_certificate_validity_in_days == 30
    assert job.spec.bundle.pull_policy == "IfNotPresent"
    pe = job.spec.processing_element
    assert pe.resources.requests == {"cpu": "100m", "memory": "128Mi"}
    assert (pe.runtime_trace_level, pe.delete_failed_pod, pe.restart_failed_pod) == ("INFO", True, None)
    assert (pe.initial_probe_delay_in_seconds, pe.probe_failure_threshold, pe.probe_interval_in_seconds) == (
        30,
        1,
        10,
    )
    dumped = job.to_wire()["spec"]
    assert dumped["submissionTimeOutInSeconds"] == 300
    assert dumped["processingElement"]["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}}


def test_fusion_defaults_to_automatic() -> None:
    job = Job.from_wire({"kind": "Job", "spec": {"bundle": {"name": "a.sab"}}})
    assert job.spec.fusion.mode is FusionMode.AUTOMATIC
    assert job.spec.threading_model.mode is None
    assert job.status is None


def test_python_names_work_too() -> None:
    job = Job.from_wire(
        {"kind": "Job", "spec": {"bundle": {"name": "a.sab"}, "submission_time_out_in_seconds": 9}}
    )
    assert job.to_wire()["spec"]["submissionTimeOutInSeconds"] == 9


def test_valgrind_implies_debug_and_ptrace() -> None:
    pe = ProcessingElement.from_wire(yaml.safe_load(USER_DOCUMENTS[ProcessingElement]))
    assert pe.spec.effective_build_type is BuildType.DEBUG
    assert pe.spec.needs_ptrace
    plain = Job.from_wire({"kind": "Job", "spec": {"bundle": {"name": "a.sab"}}}).spec.processing_element
    assert plain.effective_build_type is None
    assert not plain.needs_ptrace


def test_threading_model_choice() -> None:
    job = Job.from_wire(_job_documents()["hostpools"])
    assert job.spec.threading_model.mode is ThreadingMode.DYNAMIC


@pytest.mark.parametrize(
    ("case", "fragment", "words"), INVALID_JOB_SPECS, ids=[c[0] for c in INVALID_JOB_SPECS]
)
def test_invalid_job_is_refused_with_a_clear_message(
    case: str, fragment: dict[str, Any], words: list[str]
) -> None:
    with pytest.raises(ValidationError) as info:
        Job.from_wire(invalid_job(fragment))
    message = str(info.value)
    for word in words:
        assert word in message, f"{case}: {word!r} not in {message}"


def test_fusion_conflict_message_names_both_fields() -> None:
    with pytest.raises(ValidationError) as info:
        Job.from_wire(invalid_job({"fusion": {"automatic": True, "manual": 3}}))
    errors = info.value.errors()
    assert len(errors) == 1
    assert errors[0]["loc"] == ("spec", "fusion")
    assert "fusion.automatic and fusion.manual are mutually exclusive" in errors[0]["msg"]


def test_false_flags_do_not_count_as_a_choice() -> None:
    job = Job.from_wire(invalid_job({"fusion": {"automatic": False, "legacy": False, "manual": 2}}))
    assert job.spec.fusion.mode is FusionMode.MANUAL
