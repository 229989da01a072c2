"""Sandbox throughput: creates/s and watch events/s through kubernetes_asyncio on loopback, and
memory per stored object.

The API server runs in its own process (`streams-k8s sandbox --no-cluster`) so client and server
do not share an event loop, as with a real cluster. The client uses kubernetes_asyncio's ApiClient
with raw responses decoded by orjson, as the controller's Kubernetes layer does.

The write path alone (`test_sandbox_write_cost`): PE pods, PE custom resources and their status
patches, as the instance operator writes them, into a sandbox with the project's CRDs: creates/s
and the server's CPU per write, which is what a submission of many PEs asks of it.

Run: pytest benches/bench_sandbox.py --benchmark-enable -s
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration

from streams_k8s.api import Job, ProcessingElement
from streams_k8s.controller.children.pod import PeRuntimeSettings, build_pod
from streams_k8s.controller.placement.constraints import PodPlacement
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.registry import Registry

CMS = "/api/v1/namespaces/default/configmaps"
JSON = "application/json"


def configmap(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"cm-{i}", "labels": {"app": "streams", "streams.ibm.com/job": "bench"}},
        "data": {"aadl.xml": f"<pe id='{i}'/>", "contentId": f"{i:064x}"},
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server(kubeconfig: Path, *options: str) -> Iterator[tuple[Path, int]]:
    cli = [sys.executable, "-c", "from streams_k8s.cli import main; main()"]
    proc = subprocess.Popen(
        [*cli, "sandbox", "--no-cluster", "--kubeconfig", str(kubeconfig), *options],
        stdout=subprocess.PIPE,
        # The schema guard checks what tests write; the benchmark measures the server alone.
        env={**os.environ, "PYTHONUNBUFFERED": "1", "STREAMS_K8S_SANDBOX_SCHEMA_GUARD": "0"},
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # "sandbox API server at ...": listening
    try:
        yield kubeconfig, proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    kubeconfig = tmp_path_factory.mktemp("sandbox") / "kubeconfig"
    yield from _server(kubeconfig, "--crds", str(kubeconfig.parent))  # no CRDs


@pytest.fixture(scope="module")
def server_with_crds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    yield from _server(tmp_path_factory.mktemp("sandbox") / "kubeconfig")  # the project's CRDs


async def client(kubeconfig: Path) -> ApiClient:
    configuration = Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    configuration.connection_pool_maxsize = 64
    return ApiClient(configuration)


async def call(
    api: ApiClient, method: str, path: str, body: Any = None, content_type: str = JSON, **query: str
) -> Any:
    return await api.call_api(
        path,
        method,
        query_params=list(query.items()),
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )


async def create_many(api: ApiClient, start: int, count: int, concurrency: int = 32) -> float:
    """Create `count` ConfigMaps with `concurrency` requests in flight; returns creates/s."""
    next_index = start

    async def worker() -> None:
        nonlocal next_index
        while next_index < start + count:
            i = next_index
            next_index += 1
            response = await call(api, "POST", CMS, configmap(i))
            orjson.loads(await response.read())

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return count / (time.perf_counter() - began)


async def watch_all(api: ApiClient, since: str, expected: int) -> int:
    response = await call(api, "GET", CMS, watch="true", resourceVersion=since, timeoutSeconds="60")
    seen = 0
    async with response:
        async for line in response.content:
            orjson.loads(line)
            seen += 1
            if seen >= expected:
                break
    return seen


async def throughput(kubeconfig: Path, pid: int, writes: int, watchers: int) -> dict[str, float]:
    async with await client(kubeconfig) as api:
        listing = orjson.loads(await (await call(api, "GET", CMS)).read())
        start_index = len(listing["items"])
        since = listing["metadata"]["resourceVersion"]
        cpu = cpu_seconds(pid)
        creates = await create_many(api, start_index, writes)
        server_cpu_per_create = (cpu_seconds(pid) - cpu) / writes
        # Watch delivery: `watchers` watches replay the `writes` events from the history.
        began = time.perf_counter()
        seen = await asyncio.gather(*(watch_all(api, since, writes) for _ in range(watchers)))
        replay = sum(seen) / (time.perf_counter() - began)
        # Live delivery: the same watchers open first, then writes are made.
        listing = orjson.loads(await (await call(api, "GET", CMS, limit="1")).read())
        since = listing["metadata"]["resourceVersion"]
        began = time.perf_counter()
        live_watches = [asyncio.create_task(watch_all(api, since, writes)) for _ in range(watchers)]
        await create_many(api, start_index + writes, writes)
        live = sum(await asyncio.gather(*live_watches)) / (time.perf_counter() - began)
    return {
        "creates_per_s": creates,
        "server_cpu_us_per_create": server_cpu_per_create * 1e6,
        "server_capacity_creates_per_s": 1 / server_cpu_per_create if server_cpu_per_create else 0.0,
        "replay_events_per_s": replay,
        "live_events_per_s": live,
    }


def test_sandbox_throughput(benchmark: Any, server: tuple[Path, int]) -> None:
    writes = 2000 if not benchmark.disabled else 200
    figures: dict[str, float] = {}

    def run() -> None:
        figures.update(asyncio.run(throughput(*server, writes, watchers=10)))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    print(
        f"\nsandbox throughput ({writes} writes, 10 watchers): "
        + ", ".join(f"{k}={v:,.0f}" for k, v in figures.items())
    )
    assert figures["creates_per_s"] > 0


PODS = "/api/v1/namespaces/default/pods"
PES = "/apis/streams.ibm.com/v1/namespaces/default/streamspes"
MERGE_PATCH = "application/merge-patch+json"


def pe(i: int) -> dict[str, Any]:
    """A PE as the job controller writes it."""
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "ProcessingElement",
        "metadata": {
            "name": f"bench-{i}",
            "labels": {"app": "streams", "streams.ibm.com/job": "bench", "streams.ibm.com/generation": "1"},
            "annotations": {"streams.ibm.com/applicationName": "bench::Main"},
        },
        "spec": {"id": i, "contentId": f"{i:064x}", "sabName": "bench.Main.sab", "inputPorts": 1},
    }


def pe_pod(i: int) -> dict[str, Any]:
    """The pod of the PE, as the PE controller builds it (env, mounts, probe, security)."""
    job = Job.from_wire(
        {
            "kind": "Job",
            "metadata": {"name": "bench", "namespace": "default", "uid": "job-uid"},
            "spec": {"bundle": {"name": "b.sab"}},
        }
    )
    element = ProcessingElement.from_wire(
        {**pe(i), "metadata": {**pe(i)["metadata"], "namespace": "default", "uid": f"pe-{i}"}}
    )
    return build_pod(
        job=job,
        pe=element,
        generation=1,
        launch_count=1,
        placement=PodPlacement(),
        settings=PeRuntimeSettings(),
    )


async def write_cost(kubeconfig: Path, pid: int, count: int) -> dict[str, float]:
    """Creates of `count` PE pods and PEs, then one status patch per PE (the connectivity report
    with the pod's record), 32 requests in flight: writes/s and server CPU per write of each."""
    writes = {
        "pod_create": [("POST", PODS, pe_pod(i), JSON) for i in range(count)],
        "pe_create": [("POST", PES, pe(i), JSON) for i in range(count)],
        "pe_status_patch": [
            (
                "PATCH",
                f"{PES}/bench-{i}/status",
                {"status": {"launchCount": 1, "podName": f"bench-{i}-1", "connectivity": "Full"}},
                MERGE_PATCH,
            )
            for i in range(count)
        ],
    }
    figures: dict[str, float] = {}
    async with await client(kubeconfig) as api:
        for what, requests in writes.items():
            pending = iter(requests)

            async def worker(pending: Iterator[tuple[str, str, Any, str]] = pending) -> None:
                for method, path, body, content_type in pending:
                    response = await call(api, method, path, body, content_type)
                    assert response.status < 300, await response.read()
                    orjson.loads(await response.read())

            cpu, began = cpu_seconds(pid), time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(32)))
            figures[f"{what}_per_s"] = count / (time.perf_counter() - began)
            figures[f"{what}_server_cpu_us"] = (cpu_seconds(pid) - cpu) / count * 1e6
    return figures


def test_sandbox_write_cost(benchmark: Any, server_with_crds: tuple[Path, int]) -> None:
    count = 2000 if not benchmark.disabled else 100
    figures: dict[str, float] = {}

    def run() -> None:
        figures.update(asyncio.run(write_cost(*server_with_crds, count)))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    print(f"\nsandbox writes ({count} of each): " + ", ".join(f"{k}={v:,.0f}" for k, v in figures.items()))
    assert all(v > 0 for v in figures.values())


def test_sandbox_memory_per_object(benchmark: Any) -> None:
    count = 10_000 if not benchmark.disabled else 1000
    figures: dict[str, float] = {}

    def run() -> None:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        registry = Registry()
        rt = registry.types[("", "configmaps")]
        for i in range(count):
            registry.create(rt, "v1", "default", configmap(i))
        used = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        figures["bytes_per_object"] = used / count
        figures["json_bytes_per_object"] = len(orjson.dumps(registry.get(rt, "default", "cm-1")))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    print(
        f"\nsandbox memory ({count} ConfigMaps, watch history and object history on): "
        f"{figures['bytes_per_object']:,.0f} bytes/object "
        f"(the object is {figures['json_bytes_per_object']:,.0f} bytes of JSON)"
    )
    assert figures["bytes_per_object"] > 0


async def cluster_scale(count: int) -> dict[str, float]:
    """Create `count` PE-like pods, each with a headless Service, and time until all are Running
    with Endpoints (the simulated scheduler, kubelet, endpoints and EndpointSlice controllers at work)."""
    async with Sandbox(nodes=50, zones=["z1", "z2", "z3"], crd_dirs=[], schema_guard=False) as sb:
        registry = sb.registry
        pods, services = registry.types[("", "pods")], registry.types[("", "services")]
        began = time.perf_counter()
        for i in range(count):
            labels = {
                "app": "streams",
                "svc": "pe",
                "streams.ibm.com/job": "bench",
                "streams.ibm.com/pe": str(i),
            }
            registry.create(
                pods,
                "v1",
                "default",
                {
                    "metadata": {"name": f"bench-{i}", "labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "pe",
                                "image": "runtime:1",
                                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                            }
                        ]
                    },
                },
            )
            registry.create(
                services,
                "v1",
                "default",
                {
                    "metadata": {"name": f"bench-{i}"},
                    "spec": {"clusterIP": "None", "selector": labels, "ports": [{"port": 10000}]},
                },
            )
            if i % 200 == 0:
                await asyncio.sleep(0)  # let the simulated controllers run alongside, as with a controller
        await sb.settle(max_wait=600)
        elapsed = time.perf_counter() - began
        running = sum(1 for p in registry.items(pods) if p["status"].get("phase") == "Running")
        endpoints = sum(1 for e in registry.items(registry.types[("", "endpoints")]) if e["subsets"])
    assert running == count
    assert endpoints == count
    return {"pods_per_s_to_running_with_endpoints": count / elapsed, "seconds": elapsed}


def test_simulated_cluster_scale(benchmark: Any) -> None:
    count = 5000 if not benchmark.disabled else 200
    figures: dict[str, float] = {}

    def run() -> None:
        figures.update(asyncio.run(cluster_scale(count)))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    print(
        f"\nsimulated cluster: {count} PE pods + headless Services on 50 nodes Running with Endpoints in "
        f"{figures['seconds']:.1f} s ({figures['pods_per_s_to_running_with_endpoints']:,.0f} pods/s)"
    )
