"""The rig of the benches that run the instance operator: a sandbox sized for the PEs, a client,
and the operator as its own process (`streams-k8s run`), started and listing Jobs."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from operator_process import OperatorProcess, Usage, free_port
from operator_support import first_status
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.authn import SIMULATION
from streams_k8s.sandbox.cluster.pe_hooks import RuntimeHooks

REQUEST_LOG = 1_000_000  # the sandbox keeps 10,000 by default: too few for 1,000 PEs
OPERATOR_QPS = 500  # client rate of the operator (and of the benches' bare scripts)
# Its client's token bucket holds OPERATOR_QPS requests (burst = qps): full again this long after
# the operator's last request.
REFILL = 1.0


def sized_sandbox(
    pes: int, api_port: int | None = None, pe_hooks: RuntimeHooks | None = None, start_delay: float = 0.0
) -> Sandbox:
    """``start_delay``: seconds the simulated kubelet takes to start a pod's containers (0: at once)."""
    nodes = max(3, -(-pes // 80))  # 110 pods and 8 CPUs per node; PEs request 100m
    url = f"http://127.0.0.1:{api_port}" if api_port else None  # PEs report connectivity there
    return Sandbox(
        nodes=nodes,
        zones=["zone-a", "zone-b"],
        controller_url=url,
        request_log_size=REQUEST_LOG,
        pe_hooks=pe_hooks,
        start_delay=start_delay,
        # The test suite's schema guard re-validates every built-in object (a fifth of the
        # sandbox's CPU at 1,000 PEs): a check of our writes, not part of what a cluster does.
        schema_guard=False,
    )


async def until(check: Any, within: float, every: float = 0.05) -> float:
    """Seconds until ``await check()`` is true; TimeoutError after ``within``."""
    started = time.monotonic()
    async with asyncio.timeout(within):
        while True:
            if await check():
                return time.monotonic() - started
            await asyncio.sleep(every)


async def seconds_until_status(
    client: KubeClient,
    namespace: str,
    name: str,
    change: Callable[[], Awaitable[Any]],
    reached: Callable[[dict[str, Any]], bool],
    within: float,
) -> float:
    """Seconds from ``change()`` to the first status of Job ``name`` that ``reached`` accepts, as
    a watch from before the change sees it (`first_status`): exact to the event, where a poll every
    0.1 s added up to 0.1 s to each figure (half of a 0.2 s one)."""
    _, since = await client.list_all(JOBS, namespace, field_selector=f"metadata.name={name}")
    started = time.monotonic()
    await change()
    await first_status(client, name, reached, since, namespace, within)
    return time.monotonic() - started


def applied_and_ready(generation: int) -> Callable[[dict[str, Any]], bool]:
    """The Job's ``generation`` applied with Ready=True (raises on Failed)."""

    def reached(status: dict[str, Any]) -> bool:
        if status.get("phase") == "Failed":
            raise AssertionError(f"job failed: {status}")
        ready: dict[str, Any] = next((c for c in status.get("conditions") or () if c["type"] == "Ready"), {})
        return status.get("appliedGeneration") == generation and ready.get("status") == "True"

    return reached


async def listed(sandbox: Sandbox, plural: str) -> bool:
    """The operator has listed ``plural`` (a watch is logged only when it ends; the simulated
    cluster's own lists, user sandbox:simulation, do not count)."""
    return any(
        r.method == "GET" and r.path.endswith(f"/{plural}") and r.user != SIMULATION
        for r in list(sandbox.requests)
    )


def spread(values: list[float]) -> str:
    """min / median / max of a figure over the runs."""
    return f"{min(values):g} / {statistics.median(values):g} / {max(values):g}"


@dataclass
class Rig:
    sandbox: Sandbox
    client: KubeClient
    operator: OperatorProcess
    usage: Usage | None = None  # the operator's CPU and peak RSS, once stopped

    async def quiet(self) -> None:
        """Let the operator's client rate limiter fill up again before a measurement: writes of
        the step before (1,000 PEs reporting connectivity after a creation) leave it empty, and
        the next step measured would pay for them (when this was added, a 10% bundle upgrade right
        after a creation took 0.95 s, and 0.58-0.67 s three seconds later)."""
        await asyncio.sleep(REFILL)

    def stop(self) -> Usage:
        """Stop the operator (once): the sandbox stays up, to read what it left."""
        if self.usage is None:
            self.usage = self.operator.stop()
        return self.usage


@asynccontextmanager
async def operator_rig(
    pes: int, tmp: Path, pe_hooks: RuntimeHooks | None = None, start_delay: float = 0.0
) -> AsyncIterator[Rig]:
    """A sandbox for ``pes`` PEs (its simulated runtime with ``pe_hooks``, if given; pods started
    ``start_delay`` seconds after they are scheduled) with the operator running and its caches
    given a moment to sync; the operator is stopped on the way out (or before, with `Rig.stop`)."""
    api_port = free_port()
    async with (
        sized_sandbox(pes, api_port, pe_hooks, start_delay) as sandbox,
        await KubeClient.connect(str(sandbox.kubeconfig_path)) as client,
    ):
        operator = OperatorProcess(
            sandbox.kubeconfig_path, tmp / "operator.log", qps=OPERATOR_QPS, api_port=api_port
        )
        operator.start()
        rig = Rig(sandbox, client, operator)
        try:
            await until(lambda: listed(sandbox, "streamsjobs"), within=60)
            await asyncio.sleep(1.0)
            yield rig
        finally:
            rig.stop()
