"""The Manager end to end against the sandbox: the example controller, health, leader election."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import k8s_example
from k8s_support import eventually, eventually_async
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.leader import LEASES
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.settings import RuntimeSettings
from streams_k8s.sandbox import Sandbox

REPO = Path(__file__).resolve().parents[1]
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
FAST_LEASE = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}


def settings(sandbox: Sandbox, identity: str, **overrides: Any) -> RuntimeSettings:
    values: dict[str, Any] = {
        "kubeconfig": str(sandbox.kubeconfig_path),
        "namespace": "default",
        "bind_address": "127.0.0.1",
        "health_port": 0,
        "metrics_port": 0,
        "identity": identity,
        "backoff_initial": 0.05,
        "backoff_max": 0.5,
        "shutdown_grace": 2.0,
        **FAST_LEASE,
    }
    values.update(overrides)
    return RuntimeSettings(**values)


class Started:
    def __init__(self, manager: Manager, task: asyncio.Task[int]) -> None:
        self.manager, self.task = manager, task

    @property
    def base(self) -> str:
        assert self.manager.health is not None
        return f"http://127.0.0.1:{self.manager.health.health_port}"


async def start(sandbox: Sandbox, identity: str, **overrides: Any) -> Started:
    manager = Manager(settings(sandbox, identity, **overrides))
    await manager.connect()
    k8s_example.setup(manager)
    task = asyncio.create_task(manager.run(handle_signals=False))
    await eventually(lambda: (manager.health is not None and manager.health.health_port != 0) or task.done())
    return Started(manager, task)


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def parent(name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "labels": {"example": "echo"}}, "data": data}


async def child_data(client: KubeClient, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(CONFIGMAPS, f"{name}-echo", "default")
    except ApiError as exc:
        if exc.not_found:
            return None
        raise


async def has_child(client: KubeClient, name: str) -> bool:
    return await child_data(client, name) is not None


async def get_status(http: aiohttp.ClientSession, url: str) -> int:
    async with http.get(url) as response:
        return response.status


async def test_example_controller_end_to_end(sandbox: Sandbox, client: KubeClient) -> None:
    run = await start(sandbox, "solo")
    try:
        await client.create(CONFIGMAPS, parent("app", greeting="hello"))

        async def child_has(data: dict[str, str]) -> bool:
            child = await child_data(client, "app")
            return child is not None and child.get("data") == data

        await eventually_async(lambda: child_has({"greeting": "hello"}))
        child = await child_data(client, "app")
        assert child is not None
        assert child["metadata"]["annotations"][k8s_example.WRITER] == "solo"
        assert child["metadata"]["ownerReferences"][0]["name"] == "app"

        await client.patch(CONFIGMAPS, "app", {"data": {"greeting": "bonjour"}}, "default")
        await eventually_async(lambda: child_has({"greeting": "bonjour"}))
        await client.delete(CONFIGMAPS, "app-echo", "default")  # behind the controller's back
        await eventually_async(lambda: child_has({"greeting": "bonjour"}))

        events, _ = await client.list_all(EVENTS, "default")
        echoed = [e for e in events if e.get("reason") == "Echoed"]
        assert echoed
        assert echoed[0]["regarding"]["name"] == "app"
        assert echoed[0]["reportingController"] == "echo-controller"

        async with aiohttp.ClientSession() as http:
            assert await get_status(http, run.base + "/healthz") == 200
            assert await get_status(http, run.base + "/readyz") == 200
            async with http.get(run.base + "/metrics") as response:
                metrics = await response.text()
        assert 'streams_k8s_reconcile_total{controller="echo",result="success"}' in metrics
        assert 'streams_k8s_leader{lease="default/streams-k8s-controller"} 1.0' in metrics
        assert "streams_k8s_watch_last_event_age_seconds" in metrics
        assert "streams_k8s_event_loop_lag_seconds" in metrics
    finally:
        run.manager.stop()
        assert await asyncio.wait_for(run.task, 10) == 0
    lease = await client.get(LEASES, "streams-k8s-controller", "default")
    assert not lease["spec"].get("holderIdentity")  # released on shutdown


async def test_healthz_is_red_while_a_watch_is_stalled_and_green_after(sandbox: Sandbox) -> None:
    run = await start(
        sandbox, "health", inactivity_timeout=3.0, watch_stale_budget=1.5, leader_election=False
    )
    try:
        async with aiohttp.ClientSession() as http:
            url = run.base + "/healthz"
            await eventually(lambda: all(i.synced.is_set() for i in run.manager.informers))
            assert await get_status(http, url) == 200
            # Synced means listed: the watches that follow may open a moment later under load.
            await sandbox.wait_for_watches(2, "configmaps")
            stalled = sandbox.faults.stall_watches("configmaps")
            assert stalled == 2
            codes: list[int] = []

            async def red_then_green() -> bool:
                codes.append(await get_status(http, url))
                return 503 in codes and codes[-1] == 200

            await eventually_async(red_then_green, every=0.1)
            async with http.get(url) as response:
                assert (await response.json()) == {"status": "ok"}
        red = codes.index(503)
        assert all(c == 200 for c in codes[:red])
    finally:
        run.manager.stop()
        await asyncio.wait_for(run.task, 10)


async def test_two_managers_exactly_one_reconciles(sandbox: Sandbox, client: KubeClient) -> None:
    first = await start(sandbox, "first")
    await eventually(lambda: first.manager.leader is not None and first.manager.leader.is_leader, within=10)
    second = await start(sandbox, "second")
    try:
        for i in range(5):
            await client.create(CONFIGMAPS, parent(f"p{i}", n=str(i)))
        writers: set[str] = set()

        async def all_children() -> bool:
            writers.clear()
            for i in range(5):
                child = await child_data(client, f"p{i}")
                if child is None:
                    return False
                writers.add(child["metadata"]["annotations"][k8s_example.WRITER])
            return True

        await eventually_async(all_children)
        assert writers == {"first"}
        await eventually(lambda: all(i.synced.is_set() for i in second.manager.informers))
        sample = second.manager.metrics.registry.get_sample_value
        for result in ("success", "requeue", "error"):
            assert sample("streams_k8s_reconcile_total", {"controller": "echo", "result": result}) == 0
        assert sample("streams_k8s_leader", {"lease": "default/streams-k8s-controller"}) == 0
        async with aiohttp.ClientSession() as http:  # the standby is live and ready (caches synced)
            assert await get_status(http, second.base + "/readyz") == 200
            assert await get_status(http, second.base + "/healthz") == 200
        second.manager.settings.ready_requires_leader = True  # when configured, only the leader is ready
        assert second.manager.readiness() == ["not the leader"]
        first.manager.settings.ready_requires_leader = True
        assert first.manager.readiness() == []
    finally:
        for run in (first, second):
            run.manager.stop()
        await asyncio.gather(first.task, second.task)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def spawn(sandbox: Sandbox, identity: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]),
        "STREAMS_K8S_LEASE_DURATION": "3",
        "STREAMS_K8S_RENEW_DEADLINE": "2",
        "STREAMS_K8S_RETRY_PERIOD": "0.5",
    }
    port = str(free_port())
    command = [
        sys.executable, "-c", "from streams_k8s.cli import main; main()", "run",
        "--kubeconfig", str(sandbox.kubeconfig_path), "--namespace", "default",
        "--health-port", port, "--metrics-port", port, "--bind-address", "127.0.0.1",
        "--identity", identity, "--controller", "k8s_example:setup", "--log-format", "text",
    ]  # fmt: skip
    return subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


async def holder(client: KubeClient) -> str | None:
    try:
        lease = await client.get(LEASES, "streams-k8s-controller", "default")
    except ApiError:
        return None
    return lease["spec"].get("holderIdentity") or None


async def wait_for_holder(client: KubeClient, wanted: str | None, within: float) -> float:
    started = time.monotonic()

    async def held_by_wanted() -> bool:
        return await holder(client) == wanted

    await eventually_async(held_by_wanted, within=within)
    return time.monotonic() - started


async def test_killed_leader_hands_over_within_the_lease_and_sigterm_releases(
    sandbox: Sandbox, client: KubeClient
) -> None:
    a = spawn(sandbox, "replica-a")
    b: subprocess.Popen[bytes] | None = None
    try:
        await wait_for_holder(client, "replica-a", within=20)
        b = spawn(sandbox, "replica-b")
        await client.create(CONFIGMAPS, parent("ha", v="1"))

        async def child_written(data: dict[str, str]) -> bool:
            return ((await child_data(client, "ha")) or {}).get("data") == data

        await eventually_async(lambda: child_written({"v": "1"}), within=15)
        child = await child_data(client, "ha")
        assert child is not None
        assert child["metadata"]["annotations"][k8s_example.WRITER] == "replica-a"
        await asyncio.sleep(1.5)  # b is up and campaigning
        assert await holder(client) == "replica-a"

        a.send_signal(signal.SIGKILL)  # no chance to release: b waits out the lease
        handover = await wait_for_holder(client, "replica-b", within=10)
        assert handover <= 3.0 + 2 * 0.5 + 0.5  # lease duration plus retry periods and jitter

        await client.patch(CONFIGMAPS, "ha", {"data": {"v": "2"}}, "default")
        await eventually_async(lambda: child_written({"v": "2"}))
        child = await child_data(client, "ha")
        assert child is not None
        assert child["metadata"]["annotations"][k8s_example.WRITER] == "replica-b"

        b.send_signal(signal.SIGTERM)
        released = await wait_for_holder(client, None, within=5)
        assert released < 2.0  # released at once, not after the lease expires
        assert await asyncio.to_thread(b.wait, 10) == 0
    finally:
        for process in (a, b):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


async def test_a_leader_that_cannot_renew_stops_reconciling_and_fails(
    sandbox: Sandbox, client: KubeClient
) -> None:
    run = await start(sandbox, "deposed")
    await eventually(lambda: run.manager.leader is not None and run.manager.leader.is_leader, within=10)
    # Another writer takes the Lease (as after a network partition): renewals now fail.
    lease = await client.get(LEASES, "streams-k8s-controller", "default")
    lease["spec"].update(holderIdentity="usurper", leaseDurationSeconds=60)
    await client.replace(LEASES, lease)
    async with aiohttp.ClientSession() as http:
        health = run.base + "/healthz"
        assert await asyncio.wait_for(run.task, 10) == 1  # exits rather than reconcile without the lease
        assert run.manager.leader is not None
        assert not run.manager.leader.is_leader
        assert any("leader election" in p for p in run.manager.liveness())
        with pytest.raises(aiohttp.ClientConnectionError):
            await get_status(http, health)  # the servers are down: the pod gets restarted
    assert await holder(client) == "usurper"  # a deposed leader never releases someone else's lease


async def test_a_leader_the_api_server_lets_no_renewal_through_pauses_serves_and_resumes(
    sandbox: Sandbox, client: KubeClient
) -> None:
    run = await start(sandbox, "unrenewed", ready_requires_leader=True)
    manager = run.manager
    try:
        await eventually(lambda: manager.leader is not None and manager.leader.is_leader, within=10)
        await client.create(CONFIGMAPS, parent("before", v="1"))
        await eventually_async(lambda: has_child(client, "before"), within=10)
        sandbox.faults.fail(500, None, resource="leases")  # every read and write of the Lease
        await eventually(lambda: manager.leader is not None and not manager.leader.is_leader, within=10)
        await client.create(CONFIGMAPS, parent("meanwhile", v="2"))
        await asyncio.sleep(1.0)
        assert await child_data(client, "meanwhile") is None  # paused: no write without the lease
        assert not run.task.done()
        assert manager.readiness() == []  # still what the Service routes to
        assert "lease not renewed: controllers paused until it is held again" in manager.warnings()
        async with aiohttp.ClientSession() as http:
            assert await get_status(http, run.base + "/readyz") == 200

        sandbox.faults.clear()
        await eventually(lambda: manager.leader is not None and manager.leader.is_leader, within=10)
        await eventually_async(lambda: has_child(client, "meanwhile"), within=10)  # resumed
        lease = await client.get(LEASES, "streams-k8s-controller", "default")
        assert lease["spec"]["holderIdentity"] == "unrenewed"
        assert lease["spec"].get("leaseTransitions", 0) == 0  # regained, never handed over
    finally:
        manager.stop()
        assert await asyncio.wait_for(run.task, 10) == 0


async def test_caches_that_never_sync_fail_the_manager(sandbox: Sandbox) -> None:
    sandbox.faults.fail(403, None, verb="list", resource="configmaps", message="forbidden by RBAC")
    run = await start(sandbox, "unsynced", cache_sync_timeout=1.0)
    async with aiohttp.ClientSession() as http:
        assert await get_status(http, run.base + "/readyz") == 503
    assert await asyncio.wait_for(run.task, 10) == 1
    assert run.manager.liveness() == ["caches not synced within 1s"]


async def test_events_and_a_servers_answers_have_a_rate_limit_of_their_own(
    sandbox: Sandbox, client: KubeClient
) -> None:
    """A burst of Events (one per PE an upgrade replaces) and of the REST API's writes for its
    callers (the PEs' reports) never holds the controllers' writes: with a budget of one request
    and practically no refill, an Event, a server's write and a controller's write all go."""
    owner = await client.create(CONFIGMAPS, parent("budget"))
    manager = Manager(settings(sandbox, "events", qps=0.001, burst=1))
    await manager.connect()
    try:
        recorder = manager.event_recorder("budget")
        serving = manager.client_of_its_own()
        async with asyncio.timeout(10):  # a request waiting for a next token would wait ~1,000 s
            await recorder.record(owner, "Normal", "Burst", "an Event on its own budget")
            await serving.patch(CONFIGMAPS, "budget", {"data": {"reported": "by a PE"}}, "default")
            await manager.client.patch(CONFIGMAPS, "budget", {"data": {"written": "after"}}, "default")
        events, _ = await client.list_all(EVENTS, "default")
        assert [e["reason"] for e in events if e["regarding"]["name"] == "budget"] == ["Burst"]
        data = (await client.get(CONFIGMAPS, "budget", "default"))["data"]
        assert data == {"reported": "by a PE", "written": "after"}
    finally:
        await manager.client.close()
