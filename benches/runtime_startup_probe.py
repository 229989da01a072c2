"""Run as a separate process by bench_runtime.py: a Manager with one no-op controller over every
ConfigMap of a cluster; once its cache has synced, print the time taken and this process's RSS as
JSON and stop."""

from __future__ import annotations

import asyncio
import sys
import time

import orjson

from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import ObjectKey
from streams_k8s.k8s.settings import RuntimeSettings

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


async def main(kubeconfig: str) -> None:
    started = time.perf_counter()
    settings = RuntimeSettings(
        kubeconfig=kubeconfig, leader_election=False, health_port=0, metrics_port=0, bind_address="127.0.0.1"
    )
    manager = Manager(settings)
    await manager.connect()
    informer = manager.informer(CONFIGMAPS)

    async def noop(key: ObjectKey) -> None:
        return None

    manager.controller("noop", noop).watch(informer)
    run = asyncio.create_task(manager.run(handle_signals=False))
    await informer.synced.wait()
    report = {"synced_s": time.perf_counter() - started, "objects": len(informer.store), "rss_mb": rss_mb()}
    manager.stop()
    await run
    sys.stdout.write(orjson.dumps(report).decode() + "\n")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
