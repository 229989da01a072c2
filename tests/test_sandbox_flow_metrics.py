"""A job's simulated workload in the sandbox: the operator runs a Job that declares one, and each of
its PEs serves the runtime's metrics on its pod's sys-metrics port (9696), reached as a scraper
in the sandbox reaches a pod address; a bottleneck shows as congestion into it, and a width change
through /scale spreads the load over the new channels."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from k8s_support import eventually_async
from operator_support import free_port, job_manifest, operator, wait_for_phase
from streams_k8s.api.contract import JOB_LABEL, SVC_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import PODS
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.pod_network import host_address

API_PORT = free_port()
SPEED = 20.0  # simulated seconds per second
# The synthetic chain Source -> C0_0 -> C0_1 (parallel region C0_1) -> C0_2 -> Sink: C0_1 costs
# 4 ms a tuple (250/s a channel) where 800/s arrive.
WORKLOAD = """
operators:
  Source: {source: {rate: 800}}
  C0_0: {inputs: [Source], cost: 0.0002}
  C0_1: {inputs: [C0_0], cost: 0.004, region: C0_1}
  C0_2: {inputs: [C0_1], cost: 0.0002}
  Sink: {inputs: [C0_2]}
"""

FULL = 950  # of 1,000: a fluid queue settles just under its size

Samples = dict[str, list[tuple[dict[str, str], float]]]


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def scrape(client: KubeClient, job: str) -> Samples:
    """Every running PE of the job's /metrics, at its pod address's loopback counterpart."""
    pods, _ = await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}={job},{SVC_LABEL}=pe")
    found: Samples = {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
        for pod in pods:
            address = host_address(str((pod.get("status") or {}).get("podIP") or ""))
            if address is None or pod["metadata"].get("deletionTimestamp"):
                continue
            try:
                async with http.get(f"http://{address}:9696/metrics") as answer:
                    if answer.status != 200:
                        continue
                    text = await answer.text()
            except (aiohttp.ClientError, TimeoutError):  # a PE starting or going
                continue
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    found.setdefault(family.name, []).append((dict(sample.labels), sample.value))
    return found


def by_name(samples: Samples, family: str) -> dict[str, float]:
    return {labels["name"]: value for labels, value in samples.get(family, [])}


@pytest.mark.sandbox(nodes=2, controller_url=f"http://127.0.0.1:{API_PORT}", flow_speed=SPEED)
async def test_pes_serve_the_flow_of_the_declared_workload(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(
        tmp_path / "app.sab", SyntheticSpec(chains=1, length=3, regions=1, width=1, fan_in=False)
    )
    manifest = job_manifest("flow", bundle, fusion={"legacy": True})  # an operator a PE
    manifest["metadata"]["annotations"] = {"streams.ibm.com/simulated-workload": WORKLOAD}
    async with operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT):
        await client.create(JOBS, manifest)
        await wait_for_phase(client, "flow", "Running")
        seen: Samples = {}

        async def congested() -> bool:
            seen.clear()
            seen.update(await scrape(client, "flow"))
            queued = by_name(seen, "op_input_n_tuples_queued")
            return queued.get("C0_1[0]", 0) >= FULL and queued.get("C0_0", 0) >= FULL

        # C0_1's queue fills, then the queue into C0_0, which C0_1's back-pressure slows
        await eventually_async(congested, within=20)
        assert by_name(seen, "op_input_n_tuples_queued")["C0_2"] == 0
        congestion = [value for _, value in seen["pe_output_congestion_factor"]]
        assert max(congestion) >= 95
        assert by_name(seen, "op_input_n_enqueue_waits")["C0_1[0]"] > 0

        (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
        name = region["metadata"]["name"]
        await client.patch(PARALLEL_REGIONS, name, {"spec": {"replicas": 4}}, "default", subresource="scale")

        async def spread() -> bool:
            seen.clear()
            seen.update(await scrape(client, "flow"))
            queued = by_name(seen, "op_input_n_tuples_queued")
            return [queued.get(f"C0_1[{c}]") for c in range(4)] == [0, 0, 0, 0] and queued.get("C0_0") == 0

        # four channels of 250/s carry the 800/s: the queues drain, the congestion is gone
        await eventually_async(spread, within=60)
        assert max(value for _, value in seen["pe_output_congestion_factor"]) < 5
        processed = by_name(seen, "op_input_n_tuples_processed")
        assert all(processed[f"C0_1[{c}]"] > 0 for c in range(4))
