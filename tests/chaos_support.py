"""What the chaos suite watches and checks: live pods per PE over the whole run, the sizes, and a
job's convergence under a mix of API faults on every request of the operator's."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from job_inventory import Inventory, synthetic_job
from k8s_support import eventually_async
from operator_process import OperatorProcess
from request_split import request_split
from streams_k8s.api.contract import APP_LABEL, APP_VALUE, JOB_LABEL, PE_LABEL, SVC_LABEL, SVC_PE
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.objects import Object
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.kubeconfig import write_kubeconfig
from tokens import token_for


@dataclass(frozen=True)
class ChaosSize:
    """Small in the normal run; the benchmarks and STREAMS_K8S_CHAOS_* ask for more."""

    pes: int = 12
    kills: int = 3
    fault_share: float = 0.2  # of writes answered 500
    lost_share: float = 0.05  # of creates committed but answered 500

    @classmethod
    def from_env(cls) -> ChaosSize:
        return cls(
            pes=int(os.environ.get("STREAMS_K8S_CHAOS_PES", cls.pes)),
            kills=int(os.environ.get("STREAMS_K8S_CHAOS_KILLS_RANDOM", cls.kills)),
            fault_share=float(os.environ.get("STREAMS_K8S_CHAOS_FAULTS", cls.fault_share)),
        )


def _live(pod: Object) -> bool:
    m = pod["metadata"]
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    return (
        not m.get("deletionTimestamp")
        and (m.get("labels") or {}).get(SVC_LABEL) == SVC_PE
        and phase in ("Pending", "Running")
    )


class PodMonitor:
    """Follows every PE pod of the namespace (resuming its watch after faults) and keeps the
    largest number of live pods any PE had at once."""

    def __init__(self, client: KubeClient, namespace: str = "default") -> None:
        self.client, self.namespace = client, namespace
        self.live: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.most: dict[tuple[str, str], int] = defaultdict(int)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._follow())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _apply(self, kind: str, pod: Object) -> None:
        labels = pod["metadata"].get("labels") or {}
        pe = (labels.get(JOB_LABEL, ""), labels.get(PE_LABEL, ""))
        name = pod["metadata"]["name"]
        if kind != "DELETED" and _live(pod):
            self.live[pe].add(name)
        else:
            self.live[pe].discard(name)
        self.most[pe] = max(self.most[pe], len(self.live[pe]))

    async def _follow(self) -> None:
        version = ""
        selector = f"{APP_LABEL}={APP_VALUE}"
        while True:
            try:
                if not version:
                    pods, version = await self.client.list_all(PODS, self.namespace, label_selector=selector)
                    self.live.clear()
                    for pod in pods:
                        self._apply("ADDED", pod)
                query = {"watch": "true", "resourceVersion": version, "labelSelector": selector}
                async with self.client.stream(PODS, PODS.path(self.namespace), query, 5.0) as response:
                    async for line in response.content:
                        if not line.strip():
                            continue
                        event = orjson.loads(line)
                        if event["type"] == "ERROR":
                            version = ""
                            break
                        version = event["object"]["metadata"].get("resourceVersion") or version
                        if event["type"] != "BOOKMARK":
                            self._apply(event["type"], event["object"])
            except (ApiError, aiohttp.ClientError, OSError, TimeoutError, orjson.JSONDecodeError):
                await asyncio.sleep(0.1)  # a dropped or failed stream: resume where it was


OPERATOR_ACCOUNT = "streams-k8s-operator"
OPERATOR_USER = f"system:serviceaccount:default:{OPERATOR_ACCOUNT}"
FAULT_MIX = (409, 429, 500)  # 409 on writes only; 429 with Retry-After: 1
FAULT_SHARE = 0.3


async def converge_under_fault_mix(
    sandbox: Sandbox,
    client: KubeClient,
    pes: int,
    tmp: Path,
    *,
    faulty: bool,
    qps: int = 500,
    seed: int = 35,
) -> dict[str, Any]:
    """Seconds from the operator's start to the exact inventory of a ``pes``-PE job created before
    it (Running, every PE with its pod, ConfigMaps, Services, ...), and where its requests went
    (`request_split`); ``faulty``: every request of the operator's, reads, watches and writes,
    fails with `FAULT_SHARE`, its status drawn from `FAULT_MIX`. The operator runs under a
    ServiceAccount token of its own: the faults spare the reads that check it. ``seed``: of the
    faults' draws (the same requests in the same order fail alike)."""
    kubeconfig = write_kubeconfig(tmp / "operator", sandbox.url, await token_for(client, OPERATOR_ACCOUNT))
    await client.create(JOBS, synthetic_job("mix", tmp, pes))
    sandbox.faults.random.seed(seed)
    if faulty:
        sandbox.faults.fail_mix(FAULT_MIX, FAULT_SHARE, retry_after=1, user=OPERATOR_USER)
    problems: list[str] = []

    async def exact() -> bool:
        inventory = await Inventory.read(client, "mix")
        problems[:] = inventory.problems(pes)
        return not problems and (inventory.job.get("status") or {}).get("phase") == "Running"

    with OperatorProcess(kubeconfig, tmp / "operator.log", qps=qps):
        started = time.monotonic()
        try:
            await eventually_async(exact, within=600, every=0.2)
        except TimeoutError:
            raise AssertionError(f"inventory: {problems}") from None
        seconds = time.monotonic() - started
    sandbox.faults.clear()
    return {"seconds": seconds, **request_split(sandbox.requests, OPERATOR_USER)}
