"""Plans bigger than a cluster accepts: widths are bounded, rendered children are checked against
the API server's limits before anything is written, a server's refusal of a child is a clear
failure (never retried as it stands), and the operator keeps nothing of a Job once it is gone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from api_documents import invalid_job
from k8s_support import eventually_async
from operator_support import condition, job_manifest, job_status, operator, wait_for_phase
from repo_paths import real_adl
from streams_k8s.api import Job, ParallelRegion
from streams_k8s.api.contract import JOB_LABEL, PE_LABEL
from streams_k8s.api.job import ParallelRegionWidth
from streams_k8s.api.parallel_region import ParallelRegionSpec
from streams_k8s.api.spec_values import MAX_WIDTH
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.submission import SubmissionError, resolve_values, resolve_widths
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl, write_sab
from streams_k8s.app.topology import MAX_CONNECTIONS, TopologyError, build_topology
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.children.limits import (
    MAX_CONFIG_MAP_DATA,
    OBJECT_REFUSED,
    PLAN_TOO_LARGE,
    check_children,
    child_problem,
    refused,
)
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS, PES
from streams_k8s.controller.planning import JobFailure
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS, SERVICES
from streams_k8s.k8s.objects import ObjectKey
from streams_k8s.sandbox import Sandbox
from test_api_crds import crd_rejections
from test_controller_job_sandbox import events_of
from test_controller_submission import children

# --- widths -------------------------------------------------------------------------------------


def test_widths_are_bounded_by_the_models_and_the_crds() -> None:
    assert MAX_WIDTH == 1000
    assert ParallelRegionWidth(alias="*", width=MAX_WIDTH).width == MAX_WIDTH
    with pytest.raises(ValidationError, match="less than or equal to 1000"):
        ParallelRegionWidth(alias="*", width=MAX_WIDTH + 1)
    with pytest.raises(ValidationError, match="less than or equal to 1000"):
        ParallelRegionSpec(index=0, alias="R", width=MAX_WIDTH + 1)
    job = invalid_job({"parallelRegions": [{"alias": "*", "width": MAX_WIDTH + 1}]})
    assert crd_rejections(Job, job)
    assert crd_rejections(Job, invalid_job({"parallelRegions": [{"alias": "*", "width": MAX_WIDTH}]})) == []
    region = {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "ParallelRegion",
        "metadata": {"name": "j-0"},
        "spec": {"index": 0, "alias": "R", "width": MAX_WIDTH + 1},
    }
    assert crd_rejections(ParallelRegion, region)


def test_a_width_from_a_submission_time_value_is_bounded() -> None:
    app = parse_adl(synthetic_adl(SyntheticSpec(chains=1, length=3, regions=1, width_values=True)))
    assert resolve_widths(app, resolve_values(app, {"width0": str(MAX_WIDTH)})) == {0: MAX_WIDTH}
    with pytest.raises(
        SubmissionError, match="width 1001 is above 1000, the most channels a region may have"
    ):
        resolve_widths(app, resolve_values(app, {"width0": "1001"}))


def test_nested_regions_multiply_their_channels_up_to_the_bound() -> None:
    app = parse_adl(real_adl("spl.runtime.udpNestedPEBoundary.adl"))
    widths = resolve_widths(app, {})
    outer, middle, inner = sorted(widths)
    build_topology(app, {outer: 10, middle: 10, inner: 10})  # 1,000 channels in the innermost
    with pytest.raises(TopologyError, match=r"would have 1100 channels .*: at most 1000"):
        build_topology(app, {outer: 10, middle: 10, inner: 11})
    first = build_topology(app, widths)
    with pytest.raises(TopologyError, match="1100 channels"):  # a width change checks the same
        build_topology(app, {outer: 10, middle: 10, inner: 11}, first)


def test_connections_are_bounded_before_anything_is_expanded() -> None:
    app = parse_adl(real_adl("apps.parallel.Parallel.sab"))
    # Adjacent regions are full meshes: w + w*w + w*w + w connections.
    fits = build_topology(app, {0: 300, 1: 300, 2: 300})
    assert len(fits.edges) == 300 + 2 * 300 * 300 + 300 <= MAX_CONNECTIONS
    with pytest.raises(TopologyError, match="320,800 connections at these widths, more than the 200,000"):
        build_topology(app, {0: 400, 1: 400, 2: 400})


# --- rendered children --------------------------------------------------------------------------


def config_map(name: str, data: dict[str, str], pe: str | None = None) -> Desired:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "labels": {JOB_LABEL: "j"}}
    if pe is not None:
        metadata["labels"][PE_LABEL] = pe
    return Desired(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data})


def test_a_config_map_holds_at_most_one_mib() -> None:
    key = "aadl.xml"
    full = config_map("j-0", {key: "x" * (MAX_CONFIG_MAP_DATA - len(key))}, pe="0")
    assert child_problem(full) is None
    over = config_map("j-0", {key: "x" * (MAX_CONFIG_MAP_DATA - len(key) + 1)}, pe="0")
    assert child_problem(over) == (
        "ConfigMap j-0 would hold 1.0 MiB of data, more than the 1.0 MiB a ConfigMap may: PE 0 holds too "
        "much of the application: fuse its operators into more, smaller PEs (a larger fusion.manual count, "
        "or fusion.legacy) or lower the widths of the job's parallel regions"
    )
    table = config_map("j", {"operator_port_labels.properties": "é" * MAX_CONFIG_MAP_DATA})  # bytes count
    assert "the job's name table has a line per operator port" in str(child_problem(table))


def test_names_and_label_values_the_server_refuses() -> None:
    service = Desired(SERVICES, {"metadata": {"name": "j-" + "9" * 62, "namespace": "ns"}, "spec": {}})
    assert "DNS-1035 label of at most 63" in str(child_problem(service))
    labelled = config_map("j-1", {})
    labelled.body["metadata"]["labels"]["streams.ibm.com/cr"] = "x" * 64
    assert "is not a label value" in str(child_problem(labelled))
    assert "DNS-1123 subdomain" in str(child_problem(config_map("J-1", {})))


def test_a_plan_whose_pe_is_too_big_is_refused_with_what_to_change() -> None:
    spec = SyntheticSpec(chains=2, length=3, regions=2, width=600)
    objects = children(spec, fusion={"manual": 1})
    with pytest.raises(JobFailure) as failure:
        check_children(objects)
    assert (failure.value.condition, failure.value.reason) == ("Planned", PLAN_TOO_LARGE)
    assert failure.value.message.startswith("ConfigMap unit-0 would hold 1.6 MiB of data")
    assert "fusion.manual" in failure.value.message
    check_children(children(spec, fusion={"manual": 8}))  # the same application in more PEs fits


def test_a_refusal_by_the_server_says_what_and_why() -> None:
    child = config_map("j-3", {}, pe="3")
    too_large = refused(child, ApiError(413, "RequestEntityTooLarge", "the request is too large"))
    assert (too_large.condition, too_large.reason, too_large.retryable) == (
        "Submitted",
        OBJECT_REFUSED,
        False,
    )
    assert too_large.message.startswith("the API server refused ConfigMap j-3 (413 RequestEntityTooLarge")
    assert "fuse its operators into more, smaller PEs" in too_large.message
    invalid = refused(child, ApiError(422, "Invalid", 'metadata.labels: Invalid value: "x"'))
    assert invalid.message.endswith("this cluster does not accept it; fix the cause and edit the Job")


# --- against the sandbox ------------------------------------------------------------------------


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def child_writes(sandbox: Sandbox, job: str) -> list[str]:
    """Creates and updates of the job's children in the request log (the Job's own writes aside)."""
    return [
        f"{r.method} {r.path}"
        for r in sandbox.requests
        if r.method in ("POST", "PUT", "PATCH")
        and f"/{job}" in r.path
        and "/streamsjobs/" not in r.path
        and "/events" not in r.path
    ]


@pytest.mark.sandbox(nodes=2)
async def test_a_plan_too_big_for_the_cluster_fails_before_anything_is_written(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, regions=2, width=600))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("huge", bundle, fusion={"manual": 1}))
        status = await wait_for_phase(client, "huge", "Failed")
        planned = condition(status, "Planned")
        assert (planned["status"], planned["reason"]) == ("False", PLAN_TOO_LARGE)
        assert "ConfigMap huge-0 would hold 1.6 MiB of data" in planned["message"]
        assert status["message"].startswith(f"{PLAN_TOO_LARGE}: ConfigMap huge-0")
        assert "nextAttempt" not in status  # the same spec would fail the same way

        async def failure_notes() -> list[str]:
            return [e["note"] for e in await events_of(client, "huge") if e["reason"] == "SubmissionFailed"]

        # Events are delivered on their own queue: the status can be seen before its Event lands.
        async def reported() -> bool:
            return bool(await failure_notes())

        await eventually_async(reported, within=10)
        assert "fusion.manual" in (await failure_notes())[0]
        assert child_writes(sandbox, "huge") == []


@pytest.mark.sandbox(nodes=2)
async def test_a_child_the_server_refuses_fails_the_submission_once(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=3))
    # What a real API server answers for a request body over its limit (a create's name is in its
    # body, so the fault matches every Service created: the job's come after its ConfigMaps).
    sandbox.faults.fail(413, count=None, verb="create", resource="services")
    async with operator(sandbox, monkeypatch, tmp_path / "cache", job_retry_delay=0.2):
        await client.create(JOBS, job_manifest("refused", bundle, fusion={"manual": 2}))
        status = await wait_for_phase(client, "refused", "Failed")
        submitted = condition(status, "Submitted")
        assert (submitted["status"], submitted["reason"]) == ("False", OBJECT_REFUSED)
        assert submitted["message"].startswith("the API server refused Service refused-")
        assert "(413 " in submitted["message"]
        assert "nextAttempt" not in status
        tries = len([r for r in sandbox.requests if r.method == "POST" and r.path.endswith("/services")])
        await asyncio.sleep(2)  # many retry periods of the operator's 0.05 s backoff
        again = len([r for r in sandbox.requests if r.method == "POST" and r.path.endswith("/services")])
        assert again == tries
        assert (await job_status(client, "refused"))["phase"] == "Failed"
        reasons = [e["reason"] for e in await events_of(client, "refused")]
        assert "SubmissionFailed" in reasons


@pytest.mark.sandbox(nodes=2)
async def test_a_width_change_the_server_refuses_is_rolled_back_and_the_job_runs_on(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, regions=1, width=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("steady", bundle, fusion={"legacy": True}))
        await wait_for_phase(client, "steady", "Running")
        (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
        name = region["metadata"]["name"]
        before = {p["metadata"]["name"]: p["spec"]["contentId"] for p in (await pes(client, "steady"))}
        sandbox.faults.fail(422, count=None, verb="create", resource="services")
        await client.patch(PARALLEL_REGIONS, name, {"spec": {"width": 4}}, "default")

        async def refused_change() -> dict[str, Any] | None:
            status = (await client.get(PARALLEL_REGIONS, name, "default")).get("status") or {}
            found = [c for c in status.get("conditions") or () if c["type"] == "Resized"]
            return found[0] if found and found[0]["reason"] == "ResizeFailed" else None

        await eventually_async(refused_change, within=20)
        resized = await refused_change()
        assert resized is not None
        assert "to width 4: the API server refused Service steady-" in resized["message"]
        sandbox.faults.clear()
        after = {p["metadata"]["name"]: p["spec"]["contentId"] for p in (await pes(client, "steady"))}
        assert after == before  # the running plan, whole
        assert (await client.get(PARALLEL_REGIONS, name, "default"))["status"]["width"] == 2
        configmaps, _ = await client.list_all(CONFIGMAPS, "default", label_selector=f"{JOB_LABEL}=steady")
        assert {c["metadata"]["name"] for c in configmaps} == {"steady", *before}
        await wait_for_phase(client, "steady", "Running")
        warnings = {e["reason"] for e in await events_of(client, "steady") if e["type"] == "Warning"}
        assert "ResizeFailed" in warnings


async def pes(client: KubeClient, job: str) -> list[dict[str, Any]]:
    return (await client.list_all(PES, "default", label_selector=f"{JOB_LABEL}={job}"))[0]


@pytest.mark.sandbox(nodes=2)
async def test_the_operator_keeps_nothing_of_a_job_once_it_is_gone(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pooled = write_sab(tmp_path / "pooled.sab", SyntheticSpec(chains=2, length=2, pools=1))
    plain = write_sab(tmp_path / "plain.sab", SyntheticSpec(chains=2, length=2, regions=1, width=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache") as running:
        held = running.operator.retained()
        assert set(held.values()) == {0}
        await client.create(JOBS, job_manifest("pooled", pooled, fusion={"legacy": True}))
        await client.create(JOBS, job_manifest("plain", plain, fusion={"legacy": True}))
        await wait_for_phase(client, "plain", "Running")
        await wait_for_phase(client, "pooled", "Submitted", "Running")
        held = running.operator.retained()
        assert held["plans"] == 2
        assert held["parsed-jobs"] == 2
        assert held["pod-owners"] >= 2
        assert held["placed-pes"] > 0  # the pooled job's placement
        for job in ("pooled", "plain"):
            await client.delete(JOBS, job, "default")

        async def gone() -> bool:
            items, _ = await client.list_all(PES, "default")
            return (
                not items and not await job_status(client, "pooled") and not await job_status(client, "plain")
            )

        await eventually_async(gone, within=20)

        async def released() -> bool:
            return set(running.operator.retained().values()) == {0}

        await eventually_async(released, within=10)
        queue = running.operator.jobs.controller.queue
        assert [queue.retries(ObjectKey("default", job)) for job in ("pooled", "plain")] == [0, 0]
