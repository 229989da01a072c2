"""Fault injection (Python and HTTP forms), bearer-token auth, the request log and object history."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio.client import ApiClient, CoreV1Api
from kubernetes_asyncio.client.exceptions import ApiException

from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.authn import ADMIN, SIMULATION

CMS = "/api/v1/namespaces/default/configmaps"


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


async def test_injected_429_carries_retry_after_then_requests_pass(
    sandbox: Sandbox, sandbox_api: ApiClient
) -> None:
    core = CoreV1Api(sandbox_api)
    sandbox.faults.fail(429, count=1, verb="create", resource="configmaps", retry_after=3)
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_config_map("default", cm("a"))
    assert caught.value.status == 429
    assert caught.value.headers["Retry-After"] == "3"
    assert orjson.loads(caught.value.body)["reason"] == "TooManyRequests"
    await core.create_namespaced_config_map("default", cm("a"))
    assert sandbox.faults.rules == []


async def test_injected_errors_match_only_their_target(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    core = CoreV1Api(sandbox_api)
    await core.create_namespaced_config_map("default", cm("target"))
    await core.create_namespaced_config_map("default", cm("other"))
    sandbox.faults.fail(500, count=2, verb="get", name="target")
    sandbox.faults.fail(409, count=1, verb="update", resource="configmaps")
    await core.read_namespaced_config_map("other", "default")
    for _ in range(2):
        with pytest.raises(ApiException) as caught:
            await core.read_namespaced_config_map("target", "default")
        assert caught.value.status == 500
    current = await core.read_namespaced_config_map("target", "default")
    with pytest.raises(ApiException) as caught:
        await core.replace_namespaced_config_map("target", "default", current)
    assert caught.value.status == 409
    await core.replace_namespaced_config_map("target", "default", current)


async def test_injected_latency_trips_client_timeouts(sandbox: Sandbox) -> None:
    sandbox.faults.delay(5.0, count=1, verb="list")
    async with aiohttp.ClientSession() as session:
        with pytest.raises(asyncio.TimeoutError):
            async with session.get(sandbox.url + CMS, timeout=aiohttp.ClientTimeout(total=0.2)):
                pass
    assert sandbox.faults.rules == []


async def open_watch(
    session: aiohttp.ClientSession, sandbox: Sandbox, **query: str
) -> aiohttp.ClientResponse:
    return await session.get(sandbox.url + CMS, params={"watch": "true", **query})


async def test_dropped_watch_breaks_the_stream(sandbox: Sandbox) -> None:
    async with aiohttp.ClientSession() as session:
        response = await open_watch(session, sandbox, resourceVersion="1")
        await sandbox.wait_for_watches(1, "configmaps")
        assert sandbox.faults.drop_watches("configmaps") == 1
        with pytest.raises((aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError)):
            async for _ in response.content:
                pass
        response.release()


@pytest.mark.sandbox(bookmark_interval=0.05)
async def test_stalled_watch_is_silent_until_resumed(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    core = CoreV1Api(sandbox_api)
    async with aiohttp.ClientSession() as session:
        response = await open_watch(session, sandbox, resourceVersion="1", allowWatchBookmarks="true")
        await response.content.readline()  # a bookmark: the stream is live
        sandbox.faults.stall_watches()
        with contextlib.suppress(asyncio.TimeoutError):  # drain what was sent before the stall
            while True:
                await asyncio.wait_for(response.content.readline(), 0.2)
        await core.create_namespaced_config_map("default", cm("during-stall"))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(response.content.readline(), 0.3)
        sandbox.faults.resume_watches()
        lines = [orjson.loads(await asyncio.wait_for(response.content.readline(), 2)) for _ in range(2)]
        added = [e for e in lines if e["type"] == "ADDED"]
        assert added[0]["object"]["metadata"]["name"] == "during-stall"
        response.release()


async def test_expired_watch_gets_an_in_stream_410(sandbox: Sandbox) -> None:
    async with aiohttp.ClientSession() as session:
        response = await open_watch(session, sandbox, resourceVersion="1")
        await sandbox.wait_for_watches(1, "configmaps")
        sandbox.faults.expire_watches()
        events = [orjson.loads(line) async for line in response.content if line.strip()]
        assert events[-1]["type"] == "ERROR"
        assert events[-1]["object"]["code"] == 410
        assert events[-1]["object"]["reason"] == "Expired"


async def test_a_lost_answer_is_an_error_for_a_write_that_happened(
    sandbox: Sandbox, sandbox_api: ApiClient
) -> None:
    core = CoreV1Api(sandbox_api)
    sandbox.faults.fail(500, verb="create", resource="configmaps", after_commit=True)
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_config_map("default", cm("committed"))
    assert caught.value.status == 500
    assert (await core.read_namespaced_config_map("committed", "default")).data == {"k": "v"}
    with pytest.raises(ApiException) as again:  # the client's retry meets its own write
        await core.create_namespaced_config_map("default", cm("committed"))
    assert again.value.status == 409


async def test_random_failures_hit_about_their_share_and_repeat_with_the_seed(
    sandbox: Sandbox, sandbox_api: ApiClient
) -> None:
    core = CoreV1Api(sandbox_api)

    async def outcomes() -> list[int]:
        found = []
        for _ in range(200):
            try:
                await core.list_namespaced_config_map("default")
                found.append(200)
            except ApiException as err:
                found.append(err.status)
        return found

    sandbox.faults.random.seed(7)
    sandbox.faults.fail(503, None, verb="list", resource="configmaps", probability=0.3)
    first = await outcomes()
    assert 40 <= first.count(503) <= 80
    sandbox.faults.random.seed(7)
    assert await outcomes() == first


async def test_http_control_endpoints(sandbox: Sandbox) -> None:
    async with aiohttp.ClientSession() as session:
        control = sandbox.url + "/_sandbox"
        async with session.post(
            f"{control}/faults", json={"action": "fail", "status": 500, "verb": "list"}
        ) as r:
            assert r.status == 200
        lost = {"action": "fail", "status": 500, "verb": "create", "afterCommit": True, "probability": 1}
        async with session.post(f"{control}/faults", json=lost) as r:
            assert r.status == 200
        async with session.post(sandbox.url + CMS, json=cm("lost")) as r:
            assert r.status == 500
        assert (
            sandbox.registry.find(sandbox.registry.types[("", "configmaps")], "default", "lost") is not None
        )
        async with session.get(sandbox.url + CMS) as r:
            assert r.status == 500
            assert (await r.json())["reason"] == "InternalError"
        async with session.post(f"{control}/cluster", json={"action": "cordon", "node": "node-0"}) as r:
            assert r.status == 200
        node = sandbox.registry.get(sandbox.registry.types[("", "nodes")], None, "node-0")
        assert node["spec"]["unschedulable"] is True
        async with session.post(
            sandbox.url + CMS, json={**cm("doomed"), "metadata": {"name": "doomed", "finalizers": ["x/y"]}}
        ) as r:
            assert r.status == 201
        body = {"resource": "configmaps", "name": "doomed", "namespace": "default", "force": True}
        async with session.post(f"{control}/delete", json=body) as r:
            assert r.status == 200
        assert sandbox.registry.find(sandbox.registry.types[("", "configmaps")], "default", "doomed") is None
        async with session.post(f"{control}/faults", json={"action": "teleport"}) as r:
            assert r.status == 400
            assert (await r.json())["kind"] == "Status"
        async with session.get(f"{control}/requests") as r:
            log = await r.json()
        assert any(entry["verb"] == "create" and entry["status"] == 201 for entry in log)


@pytest.mark.sandbox(token="s3cret")
async def test_bearer_token_is_required(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    async with aiohttp.ClientSession() as session, session.get(sandbox.url + CMS) as r:
        assert r.status == 401
        assert (await r.json())["reason"] == "Unauthorized"
    listing = await CoreV1Api(sandbox_api).list_namespaced_config_map("default")
    assert listing.items == []


async def test_request_log_and_object_history(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    core = CoreV1Api(sandbox_api)
    await core.create_namespaced_config_map("default", cm("h"))
    await core.patch_namespaced_config_map("h", "default", {"data": {"k": "w"}})
    await core.delete_namespaced_config_map("h", "default")
    ours = [r for r in sandbox.requests if r.user != SIMULATION]  # not the simulated cluster's
    verbs = [(r.method, r.info.verb if r.info else None, r.status) for r in ours]
    assert verbs == [("POST", "create", 201), ("PATCH", "patch", 200), ("DELETE", "delete", 200)]
    assert ours[1].content_type == "application/strategic-merge-patch+json"
    assert {r.user for r in ours} == {"system:admin"}
    history = sandbox.history("configmaps", "h", "default")
    assert [e.type for e in history] == ["ADDED", "MODIFIED", "DELETED"]
    assert history[1].obj["data"] == {"k": "w"}


@pytest.mark.sandbox(disabled_apis=["events.k8s.io/v1"])
async def test_discovery_can_fail_and_api_groups_can_be_switched_off(sandbox: Sandbox) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(sandbox.url + "/apis") as r:
            groups = {g["name"] for g in (await r.json())["groups"]}
        assert "events.k8s.io" not in groups
        async with session.get(sandbox.url + "/apis/events.k8s.io/v1") as r:
            assert r.status == 404
        sandbox.faults.fail(503, 1, path="/apis/apps/v1")
        async with session.get(sandbox.url + "/apis/apps/v1") as r:
            assert r.status == 503
        async with session.get(sandbox.url + "/apis/apps/v1") as r:
            assert r.status == 200


@pytest.mark.sandbox(tls=True, token="t0k")
async def test_tls_with_a_self_signed_certificate(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    assert sandbox.url.startswith("https://")
    listing = await CoreV1Api(sandbox_api).list_namespace()
    assert "default" in [ns.metadata.name for ns in listing.items]
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.get(sandbox.url + "/version")


async def test_paused_workers_hold_and_step_garbage_collection(
    sandbox: Sandbox, sandbox_api: ApiClient
) -> None:
    core = CoreV1Api(sandbox_api)
    owner = await core.create_namespaced_config_map("default", cm("owner"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    for name in ("dep-1", "dep-2"):
        await core.create_namespaced_config_map(
            "default", {**cm(name), "metadata": {"name": name, "ownerReferences": [ref]}}
        )
    async with sandbox.paused("garbage-collector"):
        await core.delete_namespaced_config_map("owner", "default")
        await sandbox.settle()
        names = [c.metadata.name for c in (await core.list_namespaced_config_map("default")).items]
        assert names == ["dep-1", "dep-2"]  # the collector has not run yet
        assert sandbox.step("garbage-collector") >= 2
        assert (await core.list_namespaced_config_map("default")).items == []
    with pytest.raises(KeyError):
        sandbox.step("no-such-worker")


async def test_a_fault_mix_fails_reads_and_writes_of_one_user_with_drawn_statuses(sandbox: Sandbox) -> None:
    sandbox.faults.random.seed(35)
    sandbox.faults.fail_mix((409, 429, 500), 0.5, user=ADMIN)
    seen: dict[str, set[tuple[int, float | None]]] = {"get": set(), "create": set()}
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        client.max_retries = 0
        for i in range(60):
            body = {"metadata": {"name": f"m{i}", "namespace": "default"}}
            for verb, call in (
                ("get", client.get(CONFIGMAPS, "absent", "default")),
                ("create", client.create(CONFIGMAPS, body)),
            ):
                try:
                    await call
                except ApiError as err:
                    seen[verb].add((err.status, err.retry_after))
    assert seen["get"] == {(404, None), (429, 1), (500, None)}  # never a 409 on a read
    assert seen["create"] == {(409, None), (429, 1), (500, None)}
