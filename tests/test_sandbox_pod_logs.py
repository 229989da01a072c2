"""`pods/log` from what the simulated kubelet and PE runtime record (container, tailLines,
timestamps, previous, follow, and the API server's 4xx), and exec/attach/portforward answered
with an error that says the sandbox runs no containers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio.client import ApiClient, CoreV1Api

from streams_k8s.sandbox import Sandbox

NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"


@pytest.fixture
async def http(sandbox: Sandbox) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(sandbox.url) as session:
        yield session


def create_pod(sandbox: Sandbox, name: str, *containers: str, **spec: Any) -> dict[str, Any]:
    body = {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": c, "image": f"{c}:1"} for c in containers or ("main",)], **spec},
    }
    return sandbox.registry.create(sandbox.registry.types[("", "pods")], "v1", NS, body)


async def log(http: aiohttp.ClientSession, name: str, **query: Any) -> tuple[int, str]:
    params = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in query.items()}
    async with http.get(f"{PODS}/{name}/log", params=params) as response:
        return response.status, await response.text()


def message(body: str) -> str:
    status = orjson.loads(body)
    assert status["kind"] == "Status"
    return str(status["message"])


async def test_a_running_pod_logs_what_its_kubelet_did(sandbox: Sandbox, http: aiohttp.ClientSession) -> None:
    create_pod(sandbox, "web")
    await sandbox.settle()
    status, text = await log(http, "web")
    assert status == 200
    lines = text.splitlines()
    assert lines[0].startswith('sandbox kubelet: container "main" started on node-')
    pod = sandbox.registry.find(sandbox.registry.types[("", "pods")], "default", "web")
    assert pod is not None
    assert f"(image main:1, IP {pod['status']['podIP']})" in lines[0]
    assert lines[1] == "sandbox kubelet: ready"
    assert sandbox.cluster is not None
    await sandbox.cluster.set_ready(NS, "web", False)
    _, text = await log(http, "web", tailLines=1, timestamps=True)
    stamp, line = text.rstrip("\n").split(" ", 1)
    assert line == "sandbox kubelet: not ready (readiness probe failing)"
    assert stamp.endswith("Z")
    assert stamp.startswith("20")
    async with ApiClient(await sandbox.client_configuration()) as api:  # the typed client's call
        text = await CoreV1Api(api).read_namespaced_pod_log("web", NS, container="main", tail_lines=2)
    assert text.splitlines() == [lines[1], "sandbox kubelet: not ready (readiness probe failing)"]


async def test_a_restarted_container_keeps_its_previous_log(
    sandbox: Sandbox, http: aiohttp.ClientSession
) -> None:
    create_pod(sandbox, "web")
    await sandbox.settle()
    status, body = await log(http, "web", previous=True)
    assert (status, message(body)) == (400, 'previous terminated container "main" in pod "web" not found')
    assert sandbox.cluster is not None
    await sandbox.cluster.kill_pod(NS, "web")  # restartPolicy Always: the container restarts
    _, previous = await log(http, "web", previous=True)
    assert previous.splitlines()[-1] == "sandbox kubelet: exited with code 137 (Error)"
    _, current = await log(http, "web")
    assert current.splitlines() == ["sandbox kubelet: restarted (restart 1, restartPolicy Always)"]


async def test_log_errors_are_the_api_servers(sandbox: Sandbox, http: aiohttp.ClientSession) -> None:
    create_pod(sandbox, "two", "a", "b")
    create_pod(sandbox, "stuck", nodeName="no-such-node")  # bound, never started
    create_pod(sandbox, "unplaced", nodeSelector={"disk": "none"})  # never scheduled
    await sandbox.settle()
    status, body = await log(http, "two")
    assert (status, message(body)) == (
        400,
        "a container name must be specified for pod two, choose one of: [a b]",
    )
    status, body = await log(http, "two", container="c")
    assert (status, message(body)) == (400, "container c is not valid for pod two")
    status, body = await log(http, "stuck")
    assert (status, message(body)) == (
        400,
        'container "main" in pod "stuck" is waiting to start: ContainerCreating',
    )
    assert await log(http, "unplaced") == (200, "")  # no node, no kubelet to ask: an empty log
    status, body = await log(http, "missing")
    assert (status, message(body)) == (404, 'pods "missing" not found')
    status, body = await log(http, "two", container="a", tailLines=-1)
    assert status == 422
    assert "tailLines" in message(body)
    status, body = await log(http, "two", container="a", sinceSeconds=5, sinceTime="2026-01-01T00:00:00Z")
    assert status == 422


async def test_follow_streams_until_the_container_ends(sandbox: Sandbox, http: aiohttp.ClientSession) -> None:
    create_pod(sandbox, "job", restartPolicy="Never")
    await sandbox.settle()
    lines: list[str] = []
    caught_up = asyncio.Event()

    async def follow() -> None:
        async with http.get(f"{PODS}/job/log", params={"follow": "true"}) as response:
            assert response.status == 200
            async for raw in response.content:
                lines.append(raw.decode().rstrip("\n"))
                if len(lines) == 2:
                    caught_up.set()

    reader = asyncio.create_task(follow())
    await asyncio.wait_for(caught_up.wait(), 5)
    assert sandbox.cluster is not None
    await sandbox.cluster.exit_container(NS, "job", 3)
    await asyncio.wait_for(reader, 5)  # the stream ends with the container
    assert lines[-1] == "sandbox kubelet: exited with code 3 (Error)"


async def test_exec_attach_and_port_forward_say_there_is_no_container(
    sandbox: Sandbox, http: aiohttp.ClientSession
) -> None:
    create_pod(sandbox, "web")
    await sandbox.settle()
    for method, sub, verb in (
        ("POST", "exec?command=ls&stdout=true", "exec into"),
        ("GET", "exec?command=ls&stdout=true", "exec into"),
        ("POST", "attach?stdout=true", "attach to"),
        ("POST", "portforward?ports=80", "port-forward to"),
    ):
        async with http.request(method, f"{PODS}/web/{sub}") as response:
            assert response.status == 400
            assert message(await response.text()).startswith(
                f"the streams-k8s sandbox runs no containers: it cannot {verb} pod web"
            )
    async with http.post(f"{PODS}/missing/exec?command=ls") as response:
        assert response.status == 404
    async with http.get("/api/v1") as response:
        resources = {r["name"]: r for r in orjson.loads(await response.read())["resources"]}
    assert resources["pods/log"]["verbs"] == ["get"]
    assert (resources["pods/exec"]["kind"], resources["pods/exec"]["verbs"]) == (
        "PodExecOptions",
        ["create", "get"],
    )
    assert {"pods/attach", "pods/portforward", "pods/binding", "pods/eviction"} <= set(resources)
