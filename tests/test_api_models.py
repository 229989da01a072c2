"""The API models: what users write loads, gets its defaults, and dumps back intact; bad specs
are refused with messages that name the fields at fault."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from streams_k8s.api import (
    KINDS,
    ConsistentRegion,
    ConsistentRegionOperator,
    Export,
    HostPool,
    Import,
    Job,
    ParallelRegion,
    ProcessingElement,
    Resource,
)
from streams_k8s.api.job import FusionMode, ThreadingMode
from streams_k8s.api.processing_element import BuildType

from .conftest import REPO

USER_DOCUMENTS: dict[type[Resource], str] = {  # type: ignore[type-arg]
    ProcessingElement: """
        apiVersion: streams.ibm.com/v1
        kind: ProcessingElement
        metadata: {name: apps-parallel-2, namespace: streams, labels: {app: streams}}
        spec:
          id: 2
          contentId: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
          sabName: apps.parallel.Parallel.sab
          operators: ["Result.Region1.Op[0]", "Result.Region1.Op[1]"]
          regions: [0]
          imagePullPolicy: Always
          runWithValgrind: true
          placement:
            host: node-a
            coLocations: [together]
            exLocations: [apart]
            isolationLabels: [Sink]
            hostPoolLocation: {poolIndex: 1, inpoolIndex: 0}
          checkpointRepository:
            redis: {service: redis-ckpt, replicaCount: 1, shardCount: 3, shuffle: true}
        status:
          launchCount: 2
          connectivity: Full
          podName: apps-parallel-2-x7k2p
          conditions:
          - {type: Ready, status: "True", reason: PodRunning, lastTransitionTime: "2026-11-21T10:00:00Z"}
    """,
    HostPool: """
        apiVersion: streams.ibm.com/v1
        kind: HostPool
        metadata: {name: apps-hostpools-1}
        spec: {name: source_hosts, index: 1, tags: [source], membershipMode: exclusive, size: 2}
    """,
    ParallelRegion: """
        apiVersion: streams.ibm.com/v1
        kind: ParallelRegion
        metadata: {name: apps-parallel-0}
        spec: {index: 0, alias: Result.Region1, width: 3}
        status: {width: 2, selector: "streams.ibm.com/job=apps-parallel"}
    """,
    ConsistentRegion: """
        apiVersion: streams.ibm.com/v1
        kind: ConsistentRegion
        metadata: {name: apps-consistent-cr0}
        spec:
          regionIndex: 0
          trigger: periodic
          period: 2.5
          drainTimeout: 30
          maxConsecutiveResetAttempts: 3
          pesInRegion: [0, 1]
          operatorsToStartRegionMap: {Beacon: true}
          operatorsToTriggerMap: {Beacon: false}
        status:
          state: DRAINING
          currentSeqID: 4
          lastCompletedSeqID: 3
          peToCompletion: {"0": CheckpointDone, "1": None}
    """,
    ConsistentRegionOperator: """
        apiVersion: streams.ibm.com/v1
        kind: ConsistentRegionOperator
        metadata: {name: apps-consistent-consistent-region-operator}
        spec:
          jobName: apps-consistent
          jobUid: 0d9e1c6e-2f0b-4b8e-9a57-9f1c8f1d2a11
          numRegions: 1
          mode: shared
    """,
    Export: """
        apiVersion: streams.ibm.com/v1
        kind: Export
        metadata: {name: exporter-0-0}
        spec:
          jobId: 4
          peId: 0
          portId: 0
          type: ByProperties
          stream:
            exportOperName: Exp
            properties: [{name: topic, type: rstring, values: [weather]}]
    """,
    Import: """
        apiVersion: streams.ibm.com/v1
        kind: Import
        metadata: {name: importer-1-0}
        spec:
          jobId: 5
          peId: 1
          portId: 0
          portIndex: 0
          streams:
            nameBasedImports:
              "0": {applicationName: "apps.pubsub::Exporter", importOperName: Imp, streamName: Weather}
            filter: "temperature > 10"
    """,
}


def _job_documents() -> dict[str, dict[str, Any]]:
    return {
        p.name: yaml.safe_load(p.read_text()) for p in sorted((REPO / "examples" / "jobs").glob("*.yaml"))
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
    job = Job.from_wire(_job_documents()["apps-parallel.yaml"])
    assert job.spec.fusion.mode is FusionMode.MANUAL
    assert job.spec.fusion.manual == 3
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
    job = Job.from_wire(_job_documents()["hostpools-https.yaml"])
    assert job.spec.threading_model.mode is ThreadingMode.DYNAMIC


# Each case: a spec fragment merged into a valid Job spec, and the words the error must contain.
INVALID_JOB_SPECS: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "fusion-automatic-and-manual",
        {"fusion": {"automatic": True, "manual": 3}},
        ["fusion.automatic", "fusion.manual"],
    ),
    (
        "fusion-legacy-and-manual",
        {"fusion": {"legacy": True, "manual": 2}},
        ["fusion.legacy", "fusion.manual"],
    ),
    ("fusion-manual-zero", {"fusion": {"manual": 0}}, ["fusion.manual", "greater than or equal to 1"]),
    ("fusion-type-unknown", {"fusion": {"type": "channelMagic"}}, ["fusion.type", "channelIsolation"]),
    (
        "threading-two-models",
        {"threadingModel": {"dedicated": True, "dynamic": {"threadCount": 2}}},
        ["threadingModel.dedicated", "threadingModel.dynamic"],
    ),
    (
        "bundle-file-and-github",
        {"bundle": {"name": "a.sab", "file": {"path": "/a.sab"}, "github": {"url": "https://x/a.sab"}}},
        ["bundle.file", "bundle.github"],
    ),
    ("bundle-without-name", {"bundle": {"file": {"path": "/a.sab"}}}, ["bundle.name", "Field required"]),
    (
        "github-secret-without-url",
        {"bundle": {"name": "a.sab", "github": {"secret": "token"}}},
        ["bundle.github.secret", "url"],
    ),
    (
        "pull-policy-unknown",
        {"bundle": {"name": "a.sab", "pullPolicy": "Sometimes"}},
        ["pullPolicy", "IfNotPresent"],
    ),
    ("image-pull-policy-unknown", {"imagePullPolicy": "Maybe"}, ["imagePullPolicy", "Never"]),
    ("build-type-unknown", {"processingElement": {"buildType": "fast"}}, ["buildType", "release"]),
    (
        "transport-security-unknown",
        {"processingElement": {"transportSecurityType": "SSLv3"}},
        ["transportSecurityType", "TLSv1.2"],
    ),
    ("timeout-zero", {"submissionTimeOutInSeconds": 0}, ["submissionTimeOutInSeconds", "greater than 0"]),
    (
        "cert-validity-negative",
        {"transportCertificateValidityInDays": -1},
        ["transportCertificateValidityInDays"],
    ),
    ("probe-interval-zero", {"processingElement": {"probeIntervalInSeconds": 0}}, ["probeIntervalInSeconds"]),
    (
        "bad-quantity",
        {"resources": {"requests": {"cpu": "two cores"}}},
        ["resources.requests.cpu", "quantity"],
    ),
    ("width-zero", {"parallelRegions": [{"alias": "R", "width": 0}]}, ["parallelRegions.0.width"]),
    ("typo-field", {"fusion": {"manaul": 3}}, ["fusion.manaul", "Extra inputs are not permitted"]),
    (
        "two-checkpoint-stores",
        {"processingElement": {"checkpointRepository": {"fileSystem": {}, "redis": {"service": "r"}}}},
        ["fileSystem", "redis"],
    ),
]


def invalid_job(fragment: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": "bad"},
        "spec": {"bundle": {"name": "a.sab"}, **fragment},
    }


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
