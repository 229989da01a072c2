"""Run as a separate process by bench_runtime.py: start one informer on every ConfigMap of a
cluster, wait for its cache to sync, and print the time taken and this process's RSS as JSON."""

from __future__ import annotations

import asyncio
import resource
import sys
import time

import orjson

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.informer import Informer

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def main(kubeconfig: str) -> None:
    started = time.perf_counter()
    async with await KubeClient.connect(kubeconfig) as client:
        informer = Informer(client, CONFIGMAPS, page_size=500)
        task = asyncio.create_task(informer.run())
        await informer.synced.wait()
        synced = time.perf_counter() - started
        report = {"synced_s": synced, "objects": len(informer.store), "rss_mb": rss_mb()}
        task.cancel()
    sys.stdout.write(orjson.dumps(report).decode() + "\n")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
