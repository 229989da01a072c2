"""The 10% upgrade on the real control plane, side by side with the Kubernetes Deployment controller
(issue 33, point 4).

kube-apiserver, etcd, kube-controller-manager and kube-scheduler built from their Go modules
(`tools/build-control-plane`, run with their defaults), the project installed as the README says
(CRDs, `kubectl apply -k deploy/`: the operator's client at QPS 400), ten simulated nodes of 250
pods whose kubelet runs the operator's pod; all on this machine. In that one cluster, each round:

- ours: a job of PES PEs has its bundle edited so that a tenth of its PEs are replaced (every tenth
  operator rebuilt; the rounds alternate between the two bundles), edit -> Ready; then, once every
  PE reports full connectivity again, a job of PES/10 PEs created -> Ready. Their ratio is the
  issue's (goal 1.3);
- the peer: ten Deployments of PES/10 pods, one of which has its pod template edited (maxSurge and
  maxUnavailable 100%: one batch, as the job's) -> rolled out (every pod updated and ready, the old
  ones gone); then a Deployment of PES/10 pods created -> all ready. Its pods have no Service and
  report nothing: less for the control plane to do per pod than a PE's.
The machine's CPU over each window (/proc/stat; the control plane is most of it) is printed beside.

Run: pytest benches/bench_rollout_real.py -m control_plane --benchmark-enable -s   (five rounds at
1,000 PEs; without --benchmark-enable one round at 20 PEs, the smoke test `pytest -m control_plane`
runs)
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from control_plane_install import binaries, kubectl
from job_inventory import synthetic_job
from operator_rig import applied_and_ready, seconds_until_status, spread, until
from real_cluster import NAMESPACE, deployed
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.control_plane.cluster import ControlPlane
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.kinds import PODS
from streams_k8s.sandbox.cluster.nodes import NodeSpec

pytestmark = pytest.mark.control_plane

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
# Room for the job, the peer's pods and both creations (2,200 pods at 1,000 PEs).
NODES = [
    NodeSpec(name=f"node-{i}", zone=f"zone-{i % 2}", cpu="64", memory="256Gi", pods=250) for i in range(10)
]
QUIET = 10.0  # seconds between measurements, for the control plane's queues to drain


def _machine_busy() -> tuple[int, int]:
    """(all, idle) jiffies of this machine so far."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]


async def _timed(measure: Callable[[], Awaitable[float]]) -> tuple[float, float]:
    """(seconds, share of the machine's CPU busy) of ``measure``."""
    total, idle = _machine_busy()
    seconds = await measure()
    total2, idle2 = _machine_busy()
    return seconds, 1 - (idle2 - idle) / max(1, total2 - total)


def _deployment(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    template = {
        "metadata": {"labels": labels, "annotations": {"stamp": "0"}},  # a roll changes it
        "spec": {
            "automountServiceAccountToken": False,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 65532,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "100%", "maxUnavailable": "100%"},
            },
            "template": template,
        },
    }


async def _rolled_out(client: KubeClient, name: str) -> bool:
    """Every pod of the Deployment's current template is ready, and none of an older one is left."""
    d = await client.get(DEPLOYMENTS, name, NAMESPACE)
    s, want = d.get("status") or {}, d["spec"]["replicas"]
    current = s.get("observedGeneration", 0) >= d["metadata"]["generation"]
    return current and s.get("updatedReplicas") == s.get("readyReplicas") == s.get("replicas") == want


async def _gone(client: KubeClient, selector: str) -> bool:
    """No pod of ``selector`` is left: a deleted creation collected before the next measure."""
    return not (await client.list_all(PODS, NAMESPACE, label_selector=selector))[0]


async def _all_full(client: KubeClient) -> bool:
    pes, _ = await client.list_all(PES, NAMESPACE)
    return all((pe.get("status") or {}).get("connectivity") == "Full" for pe in pes)


def _figures(upgrade: tuple[float, float], created: tuple[float, float]) -> dict[str, float]:
    """A side's round: each `_timed` measure's seconds and the machine's busy share."""
    return {
        "upgrade_s": upgrade[0],
        "create_s": created[0],
        "upgrade_busy": upgrade[1],
        "create_busy": created[1],
    }


class Rounds:
    """The job, its two bundles and the peer's Deployments in one cluster; a round of each."""

    def __init__(self, client: KubeClient, directory: Path, pes: int) -> None:
        self.client, self.directory, self.pes, self.replaced = client, directory, pes, pes // 10
        rebuilt = frozenset(range(1, pes + 1, 10))
        (directory / "v2").mkdir(parents=True, exist_ok=True)
        self.bundles = [
            synthetic_job("roll", directory, pes)["spec"]["bundle"],
            synthetic_job("roll", directory / "v2", pes, rebuilt=rebuilt)["spec"]["bundle"],
        ]
        self.round = 0

    def _job(self, name: str, pes: int, directory: Path) -> dict[str, Any]:
        directory.mkdir(parents=True, exist_ok=True)
        job = synthetic_job(name, directory, pes)
        job["metadata"]["namespace"] = NAMESPACE
        return job

    async def start(self) -> None:
        job = self._job("roll", self.pes, self.directory)
        await seconds_until_status(
            self.client, NAMESPACE, "roll", lambda: self.client.create(JOBS, job), applied_and_ready(1), 900
        )
        for i in range(10):
            await self.client.create(DEPLOYMENTS, _deployment(f"peer-{i}", self.replaced))
        for i in range(10):
            await until(functools.partial(_rolled_out, self.client, f"peer-{i}"), 900)
        await until(functools.partial(_all_full, self.client), 900, every=0.5)

    async def ours(self) -> dict[str, float]:
        self.round += 1
        bundle = self.bundles[self.round % 2]

        async def edit() -> float:
            patch = {"spec": {"bundle": bundle}}
            change = functools.partial(self.client.patch, JOBS, "roll", patch, NAMESPACE)
            return await seconds_until_status(
                self.client, NAMESPACE, "roll", change, applied_and_ready(self.round + 1), 900
            )

        upgraded = await _timed(edit)
        await until(functools.partial(_all_full, self.client), 900, every=0.5)
        await asyncio.sleep(QUIET)
        name = f"floor-{self.round}"
        job = self._job(name, self.replaced, self.directory / name)

        async def create() -> float:
            change = functools.partial(self.client.create, JOBS, job)
            return await seconds_until_status(self.client, NAMESPACE, name, change, applied_and_ready(1), 900)

        created = await _timed(create)
        await self.client.delete(JOBS, name, NAMESPACE)
        await until(functools.partial(_gone, self.client, f"{JOB_LABEL}={name}"), 300, every=0.5)
        return _figures(upgraded, created)

    async def peer(self) -> dict[str, float]:
        async def roll() -> float:
            started = time.monotonic()
            template = {"spec": {"template": {"metadata": {"annotations": {"stamp": str(self.round)}}}}}
            await self.client.patch(DEPLOYMENTS, "peer-0", template, NAMESPACE)
            await until(functools.partial(_rolled_out, self.client, "peer-0"), 900)
            return time.monotonic() - started

        upgraded = await _timed(roll)
        await asyncio.sleep(QUIET)
        name = f"peer-new-{self.round}"

        async def create() -> float:
            started = time.monotonic()
            await self.client.create(DEPLOYMENTS, _deployment(name, self.replaced))
            await until(functools.partial(_rolled_out, self.client, name), 900)
            return time.monotonic() - started

        created = await _timed(create)
        await self.client.delete(DEPLOYMENTS, name, NAMESPACE)
        await until(functools.partial(_gone, self.client, f"app={name}"), 300, every=0.5)
        return _figures(upgraded, created)


async def _measure(
    plane: ControlPlane, workdir: Path, pes: int, rounds: int
) -> dict[str, list[dict[str, float]]]:
    runs: dict[str, list[dict[str, float]]] = {"ours": [], "peer": []}
    async for cluster in deployed(plane, workdir, NODES):
        every = Rounds(cluster.client, workdir / "bundles", pes)
        await every.start()
        for _ in range(rounds):
            for side, measure in (("ours", every.ours), ("peer", every.peer)):
                await asyncio.sleep(QUIET)
                runs[side].append(await measure())
                print(f"{side}, round {every.round}: {runs[side][-1]}", flush=True)
    return runs


def test_ten_percent_upgrade_against_the_deployment_controller(benchmark: Any, tmp_path: Path) -> None:
    pes, rounds = (20, 1) if benchmark.disabled else (1000, 5)
    runs: dict[str, list[dict[str, float]]] = {}

    def measure() -> None:
        plane = ControlPlane(binaries()).start()
        try:
            kubectl(plane, "apply", "--server-side", "-f", "crds/")
            kubectl(plane, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
            kubectl(plane, "apply", "-k", "deploy/")
            runs.update(asyncio.run(_measure(plane, tmp_path, pes, rounds)))
        finally:
            plane.stop()

    benchmark.pedantic(measure, rounds=1, iterations=1)
    summary: dict[str, str] = {}
    for side, measured in runs.items():
        summary[f"{side}_ratio"] = spread([round(r["upgrade_s"] / r["create_s"], 2) for r in measured])
        for key in measured[0]:
            summary[f"{side}_{key}"] = spread([round(r[key], 2) for r in measured])
    benchmark.extra_info.update(summary)
    print(f"\n10% upgrade of {pes} PEs, real control plane, {rounds} rounds (min / median / max): {summary}")
