"""Failed submissions retried from a clean slate, and the bundle digest a job is pinned to (sandbox)."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from k8s_support import eventually_async
from operator_support import (
    SUBMITTED,
    condition,
    drop_job_name_rules,
    job_manifest,
    job_status,
    operator,
    sab_from_adl,
    wait_for_phase,
)
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl, write_sab
from streams_k8s.controller.jobs.submission import RETRY_MAX_DELAY, retry_backoff
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.controller.placement.constraints import HOSTPOOL_TAG_LABEL
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.events import EVENTS
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.nodes import NodeSpec

RETRY_DELAY = 0.3  # the first automatic retry in these tests (10 s in production)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


@asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[str]:
    """An HTTP bundle origin; yields the bundle's URL."""
    app = web.Application()
    app.router.add_get("/bundles/app.sab", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/bundles/app.sab"
    finally:
        await runner.cleanup()


def http_manifest(name: str, url: str, **spec: Any) -> dict[str, Any]:
    manifest = job_manifest(name, Path("app.sab"), **spec)
    manifest["spec"]["bundle"] = {"name": "app.sab", "http": {"url": url}}
    return manifest


async def notes(client: KubeClient, name: str, reason: str) -> list[str]:
    items, _ = await client.list_all(EVENTS, "default")
    return [
        str(e.get("note"))
        for e in items
        if e.get("regarding", {}).get("name") == name and e.get("reason") == reason
    ]


async def pe_objects(client: KubeClient, job: str) -> dict[str, dict[str, Any]]:
    """PEs and PE ConfigMaps by kind/name: what a re-plan from other content would change."""
    found = {}
    for resource in (PES, CONFIGMAPS):
        items, _ = await client.list_all(resource, "default", label_selector=f"{JOB_LABEL}={job}")
        for item in items:
            found[f"{resource.plural}/{item['metadata']['name']}"] = item.get("spec") or item.get("data")
    return found


def pool_of_three(path: Path) -> Path:
    """An application whose host pool (tag pool0) needs 3 nodes."""
    adl = synthetic_adl(SyntheticSpec(chains=2, length=2, pools=1)).decode()
    return sab_from_adl(path, adl.replace('name="pool0">', 'name="pool0" size="3">', 1).encode())


def tagged(name: str) -> NodeSpec:
    return NodeSpec(name, labels={HOSTPOOL_TAG_LABEL: "pool0"})


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [retry_backoff(10.0, n) for n in (1, 2, 3, 4, 5)] == [10.0, 20.0, 40.0, 80.0, 160.0]
    assert retry_backoff(10.0, 6) == retry_backoff(10.0, 60) == RETRY_MAX_DELAY == 300.0


@pytest.mark.sandbox(nodes=1)
async def test_a_bundle_origin_failing_for_a_while_is_retried_until_the_job_runs(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2)).read_bytes()
    answered: list[int] = []

    async def flaky(request: web.Request) -> web.Response:
        # The fetcher tries 4 times per attempt: the whole first attempt meets 503s.
        answered.append(503 if len(answered) < 4 else 200)
        if answered[-1] == 503:
            return web.Response(status=503)
        return web.Response(body=data, content_type="application/octet-stream")

    async with (
        serving(flaky) as url,
        operator(sandbox, monkeypatch, tmp_path / "cache", job_retry_delay=RETRY_DELAY),
    ):
        await client.create(JOBS, http_manifest("flaky", url, fusion={"manual": 2}))
        status = await wait_for_phase(client, "flaky", "Running", within=60)
        assert answered == [503, 503, 503, 503, 200]
        assert status["submissionAttempts"] == 2
        assert "nextAttempt" not in status
        assert status["bundleDigest"] == hashlib.sha256(data).hexdigest()
        assert condition(status, "BundleFetched")["status"] == "True"
        failed = await notes(client, "flaky", "SubmissionFailed")
        assert len(failed) == 1
        assert failed[0].startswith("BundleFetchFailed: GET ")
        assert "answered 503; attempt 2 at " in failed[0]
        assert await notes(client, "flaky", "SubmissionRetrying") == [
            "attempt 2: starting again from a clean slate after BundleFetchFailed"
        ]


@pytest.mark.sandbox(nodes=[tagged("node-a"), tagged("node-b")])
async def test_a_pool_larger_than_the_cluster_is_retried_until_a_node_joins(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = pool_of_three(tmp_path / "app.sab")
    async with operator(sandbox, monkeypatch, tmp_path / "cache", job_retry_delay=RETRY_DELAY):
        await client.create(JOBS, job_manifest("pool", bundle))
        seen: dict[str, Any] = {}

        async def failed_twice() -> bool:
            latest = await job_status(client, "pool")
            seen.clear()
            seen.update(latest)
            return seen.get("phase") == "Failed" and int(seen.get("submissionAttempts") or 0) >= 2

        await eventually_async(failed_twice, within=30)
        planned = condition(seen, "Planned")
        assert planned["reason"] == "PlacementFailed"
        assert "host pool 'pool0' needs 3 node(s) but only 2" in planned["message"]
        # what failed, and when the next attempt is, in the condition and the message
        attempt = int(seen["submissionAttempts"]) + 1
        assert f"; attempt {attempt} at {seen['nextAttempt']}" in planned["message"]
        assert seen["message"] == f"PlacementFailed: {planned['message']}"
        id_before = seen["id"]

        assert sandbox.cluster is not None
        await sandbox.cluster.add_node(tagged("node-c"))  # a node joins (its kubelet runs its pods)
        status = await wait_for_phase(client, "pool", "Running", within=60)
    assert status["id"] == id_before  # the job keeps its id across attempts
    assert status["submissionAttempts"] >= 3
    assert "nextAttempt" not in status
    retrying = await notes(client, "pool", "SubmissionRetrying")
    assert (
        f"attempt {status['submissionAttempts']}: starting again from a clean slate after PlacementFailed"
        in (retrying)
    )
    pes, _ = await client.list_all(PES, "default", label_selector=f"{JOB_LABEL}=pool")
    assert len(pes) == status["processingElements"]


@pytest.mark.sandbox(nodes=[tagged("node-a")])
async def test_a_spec_change_starts_again_at_attempt_one(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with operator(sandbox, monkeypatch, tmp_path / "cache", job_retry_delay=RETRY_DELAY):
        await client.create(JOBS, job_manifest("edit", pool_of_three(tmp_path / "app.sab")))

        async def retried() -> bool:
            return int((await job_status(client, "edit")).get("submissionAttempts") or 0) >= 2

        await eventually_async(retried, within=30)
        fits = write_sab(tmp_path / "fits.sab", SyntheticSpec(chains=2, length=2))
        bundle = {"name": "fits.sab", "file": {"path": str(fits)}}
        await client.patch(JOBS, "edit", {"spec": {"bundle": bundle}}, "default")
        status = await wait_for_phase(client, "edit", *SUBMITTED)
    assert status["submissionAttempts"] == 1
    assert status["observedGeneration"] == 2


@pytest.mark.sandbox(nodes=1)
async def test_an_edit_while_submitting_starts_over_with_the_new_spec(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2))
    sandbox.faults.fail(500, None, verb="create", resource="streamspes")  # stuck before the PEs
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("moving", bundle, fusion={"manual": 2}))

        async def half_made() -> bool:
            return "configmaps/moving-1" in await pe_objects(client, "moving")

        await eventually_async(half_made, within=15)
        await client.patch(JOBS, "moving", {"spec": {"fusion": {"manual": 3}}}, "default")

        async def started_over() -> bool:
            return (await job_status(client, "moving")).get("observedGeneration") == 2

        await eventually_async(started_over, within=15)
        sandbox.faults.clear()
        status = await wait_for_phase(client, "moving", *SUBMITTED)
    assert (status["observedGeneration"], status["submissionAttempts"]) == (2, 1)
    assert status["processingElements"] == 3
    # what it says follows the phase: submitted, then nothing more once every PE pod is ready
    assert status.get("message") == ("3 PEs submitted" if status["phase"] == "Submitted" else None)
    pes, _ = await client.list_all(PES, "default", label_selector=f"{JOB_LABEL}=moving")
    assert sorted(p["metadata"]["name"] for p in pes) == ["moving-0", "moving-1", "moving-2"]
    assert await notes(client, "moving", "SubmissionRetrying") == []


def _invalid_name(url: str, bundle: Path) -> dict[str, Any]:
    write_sab(bundle, SyntheticSpec())
    return job_manifest("bad-" + "x" * 56, bundle)  # a label value, too long for PE names


def _not_a_bundle(url: str, bundle: Path) -> dict[str, Any]:
    bundle.write_bytes(b"PK\x03\x04 this is no zip file")
    return job_manifest("notsab", bundle)


def _refused(url: str, bundle: Path) -> dict[str, Any]:
    return http_manifest("gone", url)


@pytest.mark.sandbox(nodes=1)
@pytest.mark.parametrize(
    ("make", "reason"),
    [(_invalid_name, "InvalidName"), (_not_a_bundle, "InvalidBundle"), (_refused, "BundleFetchFailed")],
    ids=["invalid-spec", "not-a-bundle", "http-404"],
)
async def test_failures_only_a_new_spec_can_fix_are_not_retried(
    sandbox: Sandbox,
    client: KubeClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make: Callable[[str, Path], dict[str, Any]],
    reason: str,
) -> None:
    async def gone(request: web.Request) -> web.Response:
        return web.Response(status=404)

    async with (
        serving(gone) as url,
        operator(sandbox, monkeypatch, tmp_path / "cache", job_retry_delay=RETRY_DELAY),
    ):
        manifest = make(url, tmp_path / "app.sab")
        name = manifest["metadata"]["name"]
        if reason == "InvalidName":  # a Job made before the CRD had its name rules
            await drop_job_name_rules(client)
        await client.create(JOBS, manifest)
        status = await wait_for_phase(client, name, "Failed")
        await asyncio.sleep(RETRY_DELAY * 8)  # several backoff periods
        later = await job_status(client, name)
    assert (status["submissionAttempts"], later["submissionAttempts"]) == (1, 1)
    assert "nextAttempt" not in later
    assert later["message"].startswith(f"{reason}: ")
    assert " attempt " not in later["message"]
    assert later["conditions"] == status["conditions"]
    assert await notes(client, name, "SubmissionRetrying") == []


def replace_file(path: Path, content: bytes) -> None:
    """A new build dropped in place, as a CI job would (atomically)."""
    staged = path.with_suffix(".new")
    staged.write_bytes(content)
    os.replace(staged, path)


@pytest.mark.sandbox(nodes=2)
async def test_a_restarted_controller_plans_only_from_the_submitted_bundle(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2, regions=1, width=2))
    original = bundle.read_bytes()
    submitted = hashlib.sha256(original).hexdigest()
    cache = tmp_path / "cache"
    manifest = job_manifest("pin", bundle, fusion={"manual": 3})
    manifest["spec"]["bundle"]["pullPolicy"] = "Always"
    async with operator(sandbox, monkeypatch, cache):
        await client.create(JOBS, manifest)
        status = await wait_for_phase(client, "pin", *SUBMITTED)
    assert status["bundleDigest"] == submitted
    assert condition(status, "BundleFetched")["message"] == f"app.sab sha256:{submitted[:12]}"
    objects = await pe_objects(client, "pin")
    assert {f"streamspes/pin-{i}" for i in range(3)} | {f"configmaps/pin-{i}" for i in range(3)} <= set(
        objects
    )

    # A new build of the same bundle name: different operators, different PEs.
    replace_file(bundle, write_sab(tmp_path / "next.sab", SyntheticSpec(chains=3, length=4)).read_bytes())

    # Same replica (same cache): the deleted child comes back from the submitted content, unfetched.
    async with operator(sandbox, monkeypatch, cache):
        await client.delete(CONFIGMAPS, "pin-1", "default")

        async def restored() -> bool:
            return "configmaps/pin-1" in await pe_objects(client, "pin")

        await eventually_async(restored, within=15)
    assert await pe_objects(client, "pin") == objects
    status = await job_status(client, "pin")
    assert status["bundleDigest"] == submitted
    assert await notes(client, "pin", "BundleChanged") == []

    # A new replica (empty cache) must fetch: it finds other content and refuses to plan from it.
    async with operator(sandbox, monkeypatch, tmp_path / "other-replica-cache"):
        await client.delete(CONFIGMAPS, "pin-1", "default")

        async def warned() -> bool:
            return bool(await notes(client, "pin", "BundleChanged"))

        await eventually_async(warned, within=15)
        await asyncio.sleep(1.0)  # time enough to restore the ConfigMap, were it planned
        status = await job_status(client, "pin")
    assert "configmaps/pin-1" not in (left := await pe_objects(client, "pin"))
    assert left == {k: v for k, v in objects.items() if k != "configmaps/pin-1"}  # nothing mixed in
    assert status["phase"] in SUBMITTED
    assert status["bundleDigest"] == submitted
    fetched = condition(status, "BundleFetched")
    assert (fetched["status"], fetched["reason"]) == ("False", "BundleChanged")
    assert f"not sha256:{submitted[:12]} it was submitted with" in fetched["message"]
    assert "deleted children are not restored" in status["message"]
    assert [status["message"]] == await notes(client, "pin", "BundleChanged")  # said once

    # The submitted build is back at the source: the next replica restores from it, and says so.
    replace_file(bundle, original)
    async with operator(sandbox, monkeypatch, tmp_path / "third-replica-cache"):
        await eventually_async(restored, within=15)

        async def recovered() -> bool:
            return "not restored" not in ((await job_status(client, "pin")).get("message") or "")

        await eventually_async(recovered, within=15)
    assert await pe_objects(client, "pin") == objects
    assert condition(await job_status(client, "pin"), "BundleFetched")["status"] == "True"


@pytest.mark.sandbox(nodes=[tagged("node-a"), tagged("node-b")])
async def test_a_restarted_controller_keeps_the_retry_schedule(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = pool_of_three(tmp_path / "app.sab")
    async with operator(sandbox, monkeypatch, tmp_path / "cache", job_retry_delay=6.0):
        await client.create(JOBS, job_manifest("sched", bundle))
        failed = await wait_for_phase(client, "sched", "Failed")
    assert failed["submissionAttempts"] == 1
    assert sandbox.cluster is not None
    await sandbox.cluster.add_node(tagged("node-c"))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):  # its own delay is 10 s: the status rules
        status = await wait_for_phase(client, "sched", *SUBMITTED, within=30)
    assert status["submissionAttempts"] == 2
    started = datetime.fromisoformat(status["submissionStarted"])
    assert started >= datetime.fromisoformat(failed["nextAttempt"])  # not before its time...
    assert (started - datetime.fromisoformat(failed["nextAttempt"])).total_seconds() < 5  # ...nor 10 s late
    assert await notes(client, "sched", "SubmissionRetrying") == [
        "attempt 2: starting again from a clean slate after PlacementFailed"
    ]
