"""The client over HTTP against the sandbox: every verb, limits, Retry-After, credential reload."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from k8s_support import eventually
from streams_k8s.api.job import Job
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.objects import ObjectKey
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.kubeconfig import write_kubeconfig

REPO = Path(__file__).resolve().parents[1]
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
STATEFULSETS = Resource("apps", "v1", "statefulsets", "StatefulSet")


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def test_crud_round_trip(client: KubeClient) -> None:
    created = await client.create(CONFIGMAPS, configmap("a", x="1"), "default")
    assert created["metadata"]["uid"]
    assert created["data"] == {"x": "1"}
    got = await client.get(CONFIGMAPS, "a", "default")
    assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    got["data"]["x"] = "2"
    replaced = await client.replace(CONFIGMAPS, got)
    assert replaced["data"] == {"x": "2"}
    with pytest.raises(ApiError) as stale:
        await client.replace(CONFIGMAPS, got)  # the old resourceVersion
    assert stale.value.conflict
    assert not stale.value.already_exists

    merged = await client.patch(CONFIGMAPS, "a", {"data": {"y": "3"}}, "default")
    assert merged["data"] == {"x": "2", "y": "3"}
    json_patched = await client.patch(
        CONFIGMAPS, "a", [{"op": "remove", "path": "/data/x"}], "default", patch_type="json"
    )
    assert json_patched["data"] == {"y": "3"}
    with pytest.raises(ApiError) as failed_test:
        await client.patch(
            CONFIGMAPS,
            "a",
            [{"op": "test", "path": "/data/y", "value": "nope"}],
            "default",
            patch_type="json",
        )
    assert failed_test.value.status in (409, 422)

    with pytest.raises(ApiError) as exists:
        await client.create(CONFIGMAPS, configmap("a"), "default")
    assert exists.value.already_exists

    with pytest.raises(ApiError) as precondition:
        await client.delete(CONFIGMAPS, "a", "default", uid="not-the-uid")
    assert precondition.value.conflict
    await client.delete(CONFIGMAPS, "a", "default", uid=created["metadata"]["uid"], propagation="Foreground")
    with pytest.raises(ApiError) as missing:
        await client.get(CONFIGMAPS, "a", "default")
    assert missing.value.not_found


async def test_idempotent_create_and_delete(client: KubeClient) -> None:
    first = await client.create_if_absent(CONFIGMAPS, configmap("once", x="1"), "default")
    assert first is not None
    again = await client.create_if_absent(CONFIGMAPS, configmap("once", x="2"), "default")
    assert again is None  # it exists: kept as it was
    assert (await client.get(CONFIGMAPS, "once", "default"))["data"] == {"x": "1"}
    await client.delete_if_present(CONFIGMAPS, "once", "default")
    await client.delete_if_present(CONFIGMAPS, "once", "default")  # gone already: no error
    with pytest.raises(ApiError) as raised:
        await client.get(CONFIGMAPS, "once", "default")
    assert raised.value.not_found


async def test_server_side_apply(client: KubeClient) -> None:
    applied = await client.apply(
        CONFIGMAPS, configmap("ssa", k="v"), field_manager="streams-test", namespace="default"
    )
    assert applied["data"] == {"k": "v"}
    again = await client.apply(
        CONFIGMAPS, configmap("ssa", k="w"), field_manager="streams-test", namespace="default"
    )
    assert again["data"] == {"k": "w"}


async def test_custom_resources_decode_into_the_api_models(client: KubeClient) -> None:
    jobs = JOBS
    manifest = yaml.safe_load((REPO / "examples" / "jobs" / "parallel.yaml").read_text())
    await client.create(jobs, manifest, "default")
    job = await client.get_model(Job, jobs, "parallel", "default")
    assert isinstance(job, Job)
    assert job.metadata.name == "parallel"
    assert [j.metadata.name for j in await client.list_models(Job, jobs, "default")] == ["parallel"]


async def test_paginated_list_returns_everything_and_a_resource_version(client: KubeClient) -> None:
    for i in range(23):
        await client.create(CONFIGMAPS, configmap(f"p{i}"), "default")
    pages = [p async for p in client.list_pages(CONFIGMAPS, "default", page_size=10)]
    assert len(pages) == 3
    items, version = await client.list_all(CONFIGMAPS, "default", page_size=10)
    assert sorted(i["metadata"]["name"] for i in items) == sorted(f"p{i}" for i in range(23))
    assert version


async def test_status_and_scale_subresources(client: KubeClient) -> None:
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    await client.create(STATEFULSETS, sts, "default")
    scale = await client.scale(STATEFULSETS, "web", 3, "default")
    assert scale["spec"]["replicas"] == 3
    assert (await client.get(STATEFULSETS, "web", "default", subresource="scale"))["spec"]["replicas"] == 3
    status = await client.patch_status(STATEFULSETS, "web", {"observedGeneration": 7}, "default")
    assert status["status"]["observedGeneration"] == 7
    assert (await client.get(STATEFULSETS, "web", "default"))["spec"]["replicas"] == 3


async def test_retry_after_is_honoured_on_429(sandbox: Sandbox, client: KubeClient) -> None:
    await client.create(CONFIGMAPS, configmap("r"), "default")
    sandbox.faults.fail(429, 1, verb="get", resource="configmaps", retry_after=1)
    started = time.monotonic()
    assert (await client.get(CONFIGMAPS, "r", "default"))["metadata"]["name"] == "r"
    assert time.monotonic() - started >= 0.9
    codes = client.metrics.registry.get_sample_value
    assert (
        codes("streams_k8s_api_requests_total", {"verb": "get", "resource": "configmaps", "code": "429"}) == 1
    )


async def test_5xx_is_retried_for_reads_but_not_for_creates(sandbox: Sandbox, client: KubeClient) -> None:
    await client.create(CONFIGMAPS, configmap("s"), "default")
    sandbox.faults.fail(500, 2, verb="get")
    assert (await client.get(CONFIGMAPS, "s", "default"))["metadata"]["name"] == "s"
    sandbox.faults.fail(500, 1, verb="create")
    with pytest.raises(ApiError) as raised:
        await client.create(CONFIGMAPS, configmap("t"), "default")
    assert raised.value.status == 500  # the caller decides; a retried create would answer 409


async def test_a_5xx_with_retry_after_is_retried_even_for_creates(
    sandbox: Sandbox, client: KubeClient
) -> None:
    sandbox.faults.fail(503, 1, verb="create", resource="configmaps", retry_after=1)
    created = await client.create(CONFIGMAPS, configmap("u"), "default")  # the server asked us back
    assert created["metadata"]["name"] == "u"


async def test_a_create_by_its_own_name_is_retried_after_a_5xx_or_a_conflict(
    sandbox: Sandbox, client: KubeClient
) -> None:
    sandbox.faults.fail(500, 1, verb="create", resource="configmaps")
    sandbox.faults.fail(409, 1, verb="create", resource="configmaps")  # a conflict, not AlreadyExists
    sandbox.faults.fail(500, 1, verb="create", resource="configmaps", after_commit=True)  # a lost answer
    assert await client.create_if_absent(CONFIGMAPS, configmap("v"), "default") is None  # made, then 409
    assert (await client.get(CONFIGMAPS, "v", "default"))["metadata"]["name"] == "v"


async def test_a_create_waiting_out_a_retry_after_lets_the_callers_other_creates_go(
    sandbox: Sandbox, client: KubeClient
) -> None:
    """A caller's bound on its creates in flight (`slot`) holds for each attempt only: with one
    slot, a create told to come back in a second does not keep a second create waiting."""
    sandbox.faults.fail(429, 1, verb="create", resource="configmaps", retry_after=1)
    slot = asyncio.Semaphore(1)
    first = asyncio.create_task(client.create_if_absent(CONFIGMAPS, configmap("w1"), "default", slot=slot))
    await asyncio.sleep(0.2)  # the first was answered 429 and waits out its Retry-After
    await asyncio.wait_for(client.create_if_absent(CONFIGMAPS, configmap("w2"), "default", slot=slot), 0.7)
    assert not first.done()
    assert (await first) is not None  # then created on its retry


async def test_a_watch_request_answered_429_or_5xx_is_sent_again(
    sandbox: Sandbox, client: KubeClient
) -> None:
    sandbox.faults.fail(500, 1, verb="watch", resource="configmaps")
    sandbox.faults.fail(429, 1, verb="watch", resource="configmaps", retry_after=1)
    query = {"watch": "true", "timeoutSeconds": 1}
    async with client.stream(CONFIGMAPS, CONFIGMAPS.path("default"), query, 5.0) as response:
        assert response.status == 200
    sandbox.faults.fail(410, 1, verb="watch", resource="configmaps")  # Gone: the informer relists
    with pytest.raises(ApiError) as gone:
        async with client.stream(CONFIGMAPS, CONFIGMAPS.path("default"), query, 5.0):
            pass
    assert gone.value.gone


async def test_concurrency_and_qps_limits(sandbox: Sandbox) -> None:
    sandbox.faults.delay(0.2, verb="list")
    async with await KubeClient.connect(str(sandbox.kubeconfig_path), max_concurrency=2) as limited:
        started = time.monotonic()
        await asyncio.gather(*(limited.list_all(CONFIGMAPS, "default") for _ in range(6)))
        assert time.monotonic() - started >= 0.55  # three waves of two
    sandbox.faults.clear()
    async with await KubeClient.connect(str(sandbox.kubeconfig_path), qps=10, burst=1) as paced:
        started = time.monotonic()
        await asyncio.gather(*(paced.list_all(CONFIGMAPS, "default") for _ in range(6)))
        assert time.monotonic() - started >= 0.45


@pytest.mark.sandbox(token="first-token")
async def test_401_reloads_credentials_without_killing_open_watches(sandbox: Sandbox) -> None:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        informer = Informer(client, CONFIGMAPS, namespace="default", inactivity_timeout=30)
        task = asyncio.create_task(informer.run())
        try:
            await asyncio.wait_for(informer.synced.wait(), 5)
            await client.create(CONFIGMAPS, configmap("before"), "default")
            await eventually(lambda: ObjectKey("default", "before") in informer.store)

            # Rotate: the server now wants a new token, and the kubeconfig carries it.
            sandbox.server.token = "second-token"
            write_kubeconfig(sandbox.kubeconfig_path, sandbox.url, "second-token")
            await client.create(CONFIGMAPS, configmap("after"), "default")  # 401, reload, retry

            await eventually(lambda: ObjectKey("default", "after") in informer.store)
            sample = client.metrics.registry.get_sample_value
            assert (
                sample(
                    "streams_k8s_api_requests_total",
                    {"verb": "create", "resource": "configmaps", "code": "401"},
                )
                == 1
            )
            assert sample("streams_k8s_watch_relists_total", {"watch": informer.name}) == 1
            # The open watch survived the rotation: no watch error of any kind, no reconnect.
            errors = [
                m for m in client.metrics.watch_errors.collect()[0].samples if m.name.endswith("_total")
            ]
            assert errors == []
            reopened = [r for r in sandbox.requests if r.query.get("watch") == "true" and r.status != 200]
            assert reopened == []
        finally:
            task.cancel()


async def test_an_unreachable_server_is_an_api_error_with_status_0(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}", None)
    async with await KubeClient.connect(str(tmp_path / "kubeconfig"), max_retries=1) as client:
        with pytest.raises(ApiError) as raised:
            await client.get(CONFIGMAPS, "x", "default")
    assert raised.value.status == 0
    assert raised.value.retryable
    assert raised.value.message  # says what failed (connection refused)


@pytest.mark.sandbox(tls=True, token="secret")
async def test_tls_and_bearer_token_from_the_kubeconfig(sandbox: Sandbox) -> None:
    assert sandbox.url.startswith("https://")
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        informer = Informer(client, CONFIGMAPS, namespace="default")
        task = asyncio.create_task(informer.run())
        try:
            await asyncio.wait_for(informer.synced.wait(), 5)
            await client.create(CONFIGMAPS, configmap("secure"), "default")
            await eventually(lambda: ObjectKey("default", "secure") in informer.store)
        finally:
            task.cancel()
