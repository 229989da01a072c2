"""Controller-runtime benchmarks (issue 5 targets).

- startup with 10,000 existing objects: time to a synced cache and RSS of the controller process
  (a separate process, so the in-process sandbox is not counted);
- watch event decode + store: events/s in the reflector alone (no network) and end to end
  through the sandbox;
- a no-op reconcile over 10,000 keys: throughput and queue latency p50/p99.

Run: pytest benches/bench_runtime.py --benchmark-enable -s   (figures also in extra_info)
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from kubernetes_asyncio.client import Configuration

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.controller import Controller
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.objects import ObjectKey
from streams_k8s.sandbox import Sandbox

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
PROBE = Path(__file__).with_name("runtime_startup_probe.py")
OBJECTS = 10_000


def configmap(i: int, rv: int | None = None) -> dict[str, Any]:
    """A realistic small object: labels, annotations, managedFields (pruned by the cache).

    No ownerReferences: the sandbox's garbage collector would delete children of absent owners."""
    meta: dict[str, Any] = {
        "name": f"job-{i // 10}-pe-{i % 10}",
        "namespace": "default",
        "labels": {
            "app": "streams",
            "streams.ibm.com/job": f"job-{i // 10}",
            "streams.ibm.com/pe": str(i % 10),
        },
        "annotations": {"streams.ibm.com/contentId": f"{i:064x}"},
        "managedFields": [
            {"manager": "streams-controller", "operation": "Update", "fieldsV1": {"f:data": {}}}
        ],
    }
    if rv is not None:
        meta["resourceVersion"] = str(rv)
        meta["uid"] = f"cm-{i}"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"aadl.xml": "<pe/>" * 40}}


def seed(sandbox: Sandbox, count: int) -> None:
    """Create objects straight in the sandbox's registry (seeding is not what is measured)."""
    registry = sandbox.registry
    configmaps = registry.types[("", "configmaps")]
    for i in range(count):
        registry.create(configmaps, "v1", "default", configmap(i))


def test_startup_with_10k_objects(benchmark: Any) -> None:
    results: list[dict[str, float]] = []

    async def scenario() -> None:
        async with Sandbox(schema_guard=False) as sandbox:
            seed(sandbox, OBJECTS)
            for _ in range(3):
                launched = time.perf_counter()
                probe = await asyncio.create_subprocess_exec(
                    sys.executable, str(PROBE), str(sandbox.kubeconfig_path), stdout=subprocess.PIPE
                )
                out, _ = await probe.communicate()
                result = orjson.loads(out)
                result["process_s"] = time.perf_counter() - launched  # with interpreter start and imports
                results.append(result)

    benchmark.pedantic(lambda: asyncio.run(scenario()), rounds=1, iterations=1)
    assert all(r["objects"] == OBJECTS for r in results)
    benchmark.extra_info["synced_s_median"] = statistics.median(r["synced_s"] for r in results)
    benchmark.extra_info["process_s_median"] = statistics.median(r["process_s"] for r in results)
    benchmark.extra_info["rss_mb_max"] = max(r["rss_mb"] for r in results)
    print(f"\nstartup: {benchmark.extra_info}")


def watch_events(count: int, objects: int) -> bytes:
    """A watch stream as the API server sends it: ADDED for each object, then MODIFIED events."""
    lines = []
    for n in range(count):
        i = n % objects
        kind = "ADDED" if n < objects else "MODIFIED"
        lines.append(orjson.dumps({"type": kind, "object": configmap(i, rv=n + 1)}))
    return b"\n".join(lines) + b"\n"


def test_reflector_decode_and_store(benchmark: Any) -> None:
    count = 50_000
    stream = watch_events(count, 5_000)
    chunks = [stream[i : i + 65_536] for i in range(0, len(stream), 65_536)]

    async def offline_client() -> KubeClient:
        return KubeClient(Configuration(host="http://127.0.0.1:9"))  # never contacted

    loop = asyncio.new_event_loop()
    client = loop.run_until_complete(offline_client())

    def run() -> None:
        informer = Informer(client, CONFIGMAPS)
        Controller("bench", _noop).watch(informer)  # handlers enqueue keys, as in production
        pending = b""
        for chunk in chunks:
            pending = informer.apply_chunk(pending + chunk)
        assert len(informer.store) == 5_000

    benchmark.pedantic(run, rounds=5, iterations=1)
    if benchmark.stats is not None:  # None with --benchmark-disable
        events_per_s = count / benchmark.stats.stats.median
        benchmark.extra_info["events_per_s"] = round(events_per_s)
        print(f"\nreflector decode+store: {events_per_s:,.0f} events/s")
    loop.run_until_complete(client.close())
    loop.close()


async def _noop(key: ObjectKey) -> None:
    return None


def test_watch_end_to_end(benchmark: Any) -> None:
    updates = 20_000
    rates: list[float] = []

    async def scenario() -> None:
        async with Sandbox(history_size=updates + 10, schema_guard=False) as sandbox:
            seed(sandbox, 1_000)
            async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
                informer = Informer(client, CONFIGMAPS, namespace="default")
                task = asyncio.create_task(informer.run())
                await informer.synced.wait()
                registry = sandbox.registry
                configmaps = registry.types[("", "configmaps")]
                seen = 0
                all_seen = asyncio.Event()

                def count(*_: Any) -> None:
                    nonlocal seen
                    seen += 1
                    if seen == updates:
                        all_seen.set()

                informer.add_handler(count)
                started = time.perf_counter()
                for n in range(updates):  # writes straight into the registry: only the watch path is timed
                    i = n % 1_000
                    registry.patch(
                        configmaps, "v1", "default", configmap(i)["metadata"]["name"],
                        "application/merge-patch+json", {"data": {"n": str(n)}},
                    )  # fmt: skip
                    if n % 500 == 0:
                        await asyncio.sleep(0)  # let the server stream while we write
                await all_seen.wait()
                rates.append(updates / (time.perf_counter() - started))
                task.cancel()

    benchmark.pedantic(lambda: asyncio.run(scenario()), rounds=1, iterations=1)
    benchmark.extra_info["events_per_s"] = round(rates[0])
    print(f"\nwatch end to end: {rates[0]:,.0f} events/s")


def test_noop_reconcile_10k_keys(benchmark: Any) -> None:
    results: list[dict[str, float]] = []

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        enqueued: dict[ObjectKey, float] = {}
        waits: list[float] = []
        done = asyncio.Event()

        async def reconcile(key: ObjectKey) -> None:
            waits.append(loop.time() - enqueued[key])
            if len(waits) == OBJECTS:
                done.set()

        controller = Controller("noop", reconcile, workers=4)
        keys = [ObjectKey("default", f"k{i}") for i in range(OBJECTS)]
        runner = asyncio.create_task(controller.run())
        started = loop.time()
        for key in keys:
            enqueued[key] = loop.time()
            controller.queue.add(key)
        await done.wait()
        elapsed = loop.time() - started
        await controller.shutdown(1.0)
        await runner
        waits.sort()
        results.append(
            {
                "keys_per_s": OBJECTS / elapsed,
                "p50_ms": waits[len(waits) // 2] * 1000,
                "p99_ms": waits[int(len(waits) * 0.99)] * 1000,
            }
        )

    benchmark.pedantic(lambda: asyncio.run(scenario()), rounds=5, iterations=1)
    best = max(results, key=lambda r: r["keys_per_s"])
    benchmark.extra_info.update({k: round(v, 2) for k, v in best.items()})
    print(f"\nno-op reconcile: {best}")
