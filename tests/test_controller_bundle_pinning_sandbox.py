"""A PE pod gets its own job's build from the bundle repository, even after another job fetched a
newer build under the same bundle name (`pullPolicy: Always`); jobs whose same-named bundles come
from different sources each run their own."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from k8s_support import eventually_async
from operator_support import job_manifest, operator, wait_for_phase
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import PODS
from streams_k8s.sandbox import Sandbox
from test_controller_bundle_repository import exchange, resp


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def always(name: str, sab: Path) -> dict[str, Any]:
    manifest = job_manifest(name, sab, fusion={"manual": 1})
    manifest["spec"]["bundle"]["pullPolicy"] = "Always"
    return manifest


@pytest.mark.sandbox(nodes=2)
async def test_a_pe_pod_gets_the_build_its_job_was_submitted_with(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sab = tmp_path / "app.sab"
    first = write_sab(sab, SyntheticSpec(chains=1, length=2)).read_bytes()
    async with operator(sandbox, monkeypatch, tmp_path / "cache") as running:
        port = running.operator.repository.port
        await client.create(JOBS, always("old", sab))
        status = await wait_for_phase(client, "old", "Running")
        assert status["bundleDigest"] == hashlib.sha256(first).hexdigest()

        # This test connects from 127.0.0.1: let that be the address of the old job's PE pod.
        (pod,) = (await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}=old"))[0]
        local = {"status": {"podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}}
        await client.patch(PODS, pod["metadata"]["name"], local, "default", subresource="status")

        # A new build under the same name, fetched by a second job: the name now means it.
        second = write_sab(sab, SyntheticSpec(chains=2, length=2)).read_bytes()
        assert second != first
        await client.create(JOBS, always("new", sab))
        await wait_for_phase(client, "new", "Running")

        async def answered(content: bytes) -> bool:
            expected = b"$%d\r\n%b\r\n" % (len(content), content)
            return await exchange(port, resp(b"HGET", b"apps", b"app.sab"), len(expected)) == expected

        await eventually_async(lambda: answered(first), within=10)  # the old job's pod: its build
        # Once the address is no PE pod's, the request gets the bundle by name: the new build.
        await client.patch(
            PODS,
            pod["metadata"]["name"],
            {"status": {"podIP": "10.9.9.9", "podIPs": [{"ip": "10.9.9.9"}]}},
            "default",
            subresource="status",
        )
        await eventually_async(lambda: answered(second), within=10)


@pytest.mark.sandbox(nodes=2)
async def test_jobs_with_same_named_bundles_from_different_sources_run_their_own(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two generated applications, both `app.sab`, in different places, of different sizes.
    for place in ("small", "big"):
        (tmp_path / place).mkdir()
    small = write_sab(tmp_path / "small" / "app.sab", SyntheticSpec(name="small::App", chains=1, length=1))
    big = write_sab(tmp_path / "big" / "app.sab", SyntheticSpec(name="big::App", chains=3, length=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache", job_retry_delay=30) as running:
        port = running.operator.repository.port
        await client.create(JOBS, job_manifest("small", small, fusion={"legacy": True}))
        await wait_for_phase(client, "small", "Running")
        await client.create(JOBS, job_manifest("big", big, fusion={"legacy": True}))
        status = await wait_for_phase(client, "big", "Running")
        assert status["bundleDigest"] == hashlib.sha256(big.read_bytes()).hexdigest()
        assert status["applicationName"] == "big::App"
        small_status = await wait_for_phase(client, "small", "Running")
        assert small_status["bundleDigest"] == hashlib.sha256(small.read_bytes()).hexdigest()
        assert small_status["processingElements"] < status["processingElements"]

        # Each job's PE pod gets its own build from the repository (pinned by the pod's job).
        pod = (await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}=small"))[0][0]
        local = {"status": {"podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}}
        await client.patch(PODS, pod["metadata"]["name"], local, "default", subresource="status")
        content = small.read_bytes()
        expected = b"$%d\r\n%b\r\n" % (len(content), content)

        async def served() -> bool:
            return await exchange(port, resp(b"HGET", b"apps", b"app.sab"), len(expected)) == expected

        await eventually_async(served, within=10)

        # A source that cannot be reached does not run the same-named bundle fetched from a file.
        unreachable = job_manifest("offline", small)
        unreachable["spec"]["bundle"] = {"name": "app.sab", "http": {"url": "http://127.0.0.1:9/app.sab"}}
        await client.create(JOBS, unreachable)
        failed = await wait_for_phase(client, "offline", "Failed", within=60)
        fetched = next(c for c in failed["conditions"] if c["type"] == "BundleFetched")
        assert (fetched["status"], fetched["reason"]) == ("False", "BundleFetchFailed")
        assert failed.get("nextAttempt")  # transient: retried, and never from another source
