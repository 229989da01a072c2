"""Recovery time of the vreplica scheduler component in the sandbox (the figure of eventing#8200).

400 Consumer vpods x 2 vreplicas over a 40-pod StatefulSet (capacity 20, the Kafka default)
on 12 nodes in 3 zones, with the shipped HA profile:
- cold start: the component starts with every vpod unscheduled; time until every status
  shows its placements;
- node loss: one node turns unreachable; time until no vreplica is left on its pods and
  every vpod is whole again (the StatefulSet grows as needed).

Upstream took 20 minutes for 100 and an hour for 400 triggers before #8200, 2-3 minutes
after it. Everything runs in one process here (API server, simulated kubelet, component).

Run: pytest benches/bench_scheduler_kubernetes.py --benchmark-enable -s
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from scheduler_sandbox import HA, UNREACHABLE, Deployment, consumer_crd
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import STATEFULSETS
from streams_k8s.sandbox import Sandbox

VPODS = 400
VREPLICAS = 2
CAPACITY = 20
PODS = VPODS * VREPLICAS // CAPACITY


async def scenario() -> dict[str, float]:
    async with Sandbox(nodes=12, zones=["z0", "z1", "z2"], schema_guard=False) as sandbox:
        sandbox.install_crd(consumer_crd())
        async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
            deployment = Deployment(sandbox, client)
            try:
                await deployment.create_pool(PODS)
                await asyncio.gather(*(deployment.create_consumer(f"c{i}", VREPLICAS) for i in range(VPODS)))
                started = time.monotonic()
                await deployment.start(HA, capacity=CAPACITY)
                await deployment.until(lambda: deployment.all_placed(CAPACITY), within=600, every=0.2)
                cold = time.monotonic() - started

                lost = (await deployment.node_of())["pool-0"]
                lost_pods = {p for p, n in (await deployment.node_of()).items() if n == lost}
                started = time.monotonic()
                await deployment.cluster.taint(lost, UNREACHABLE, effect="NoSchedule")
                await deployment.cluster.taint(lost, UNREACHABLE, effect="NoExecute")

                async def moved() -> bool:
                    placements = await deployment.placements()
                    return await deployment.all_placed(CAPACITY) and not any(
                        lost_pods & set(p) for p in placements.values()
                    )

                await deployment.until(moved, within=600, every=0.2)
                recovery = time.monotonic() - started
                replicas = (await client.get(STATEFULSETS, "pool", "default"))["spec"]["replicas"]
                return {"cold_start_s": cold, "node_loss_s": recovery, "replicas_after": replicas}
            finally:
                await deployment.stop()


def test_recovery_400_vpods(benchmark: Any) -> None:
    results: list[dict[str, float]] = []
    benchmark.pedantic(lambda: results.append(asyncio.run(scenario())), rounds=1, iterations=1)
    benchmark.extra_info.update({k: round(v, 2) for k, v in results[0].items()})
    print(f"\nrecovery: {benchmark.extra_info}")
