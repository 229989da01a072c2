"""The operator reads the PEs of a sandbox job under a simulated workload (its PEs serve the
runtime's metrics on sys-metrics 9696) and serves the job's flow on its own /metrics: a bottleneck
shows as the congestion and the full queues in front of it, and its rate, at most its capacity,
holds what is upstream of it to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from k8s_support import eventually_async
from operator_support import free_port, job_manifest, operator, wait_for_phase
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.flow.targets import remapped
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox

API_PORT = free_port()
SPEED = 20.0  # simulated seconds per second: the rates the operator sees per second are 20 times the model's
# Source -> C0_0 -> C0_1 (parallel region C0_1, width 1) -> C0_2 -> Sink: C0_1 takes 250/s of 800/s.
WORKLOAD = """
operators:
  Source: {source: {rate: 800}}
  C0_0: {inputs: [Source], cost: 0.0002}
  C0_1: {inputs: [C0_0], cost: 0.004, region: C0_1}
  C0_2: {inputs: [C0_1], cost: 0.0002}
  Sink: {inputs: [C0_2]}
"""
Served = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def served(port: int) -> Served:
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/metrics") as answer:
        text = await answer.text()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: Served, name: str, **labels: str) -> float | None:
    key = tuple(sorted({"instancename": "default", "jobname": "flow", **labels}.items()))
    return found.get((name, key))


def test_a_pod_network_is_read_at_its_counterpart() -> None:
    address = remapped("10.244.0.0/16=127.245.0.0/16")
    assert (address("10.244.3.7"), address("10.9.0.1"), address("not an ip")) == (
        "127.245.3.7",
        "10.9.0.1",
        "not an ip",
    )
    for bad in ("10.244.0.0/16", "10.244.0.0/16=127.0.0.0/8", "10.244.0.0/16=nowhere"):
        with pytest.raises(ValueError, match="expected FROM=TO|differ|does not appear"):
            remapped(bad)


@pytest.mark.sandbox(nodes=2, controller_url=f"http://127.0.0.1:{API_PORT}", flow_speed=SPEED)
async def test_the_operator_serves_the_flow_of_a_congested_job(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMS_K8S_FLOW_INTERVAL", "0.5")
    monkeypatch.setenv("STREAMS_K8S_FLOW_POD_NETWORK", "10.244.0.0/16=127.245.0.0/16")
    bundle = write_sab(
        tmp_path / "app.sab", SyntheticSpec(chains=1, length=3, regions=1, width=1, fan_in=False)
    )
    manifest = job_manifest("flow", bundle, fusion={"legacy": True})  # an operator a PE
    manifest["metadata"]["annotations"] = {"streams.ibm.com/simulated-workload": WORKLOAD}
    async with operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT) as running:
        await client.create(JOBS, manifest)
        await wait_for_phase(client, "flow", "Running")
        assert running.manager.health is not None
        port = running.manager.health.metrics_port
        found: Served = {}

        async def congested() -> bool:
            found.clear()
            found.update(await served(port))
            fill = value(found, "streams_k8s_flow_operator_queue_fill_ratio", operatorname="C0_0")
            return value(found, "streams_k8s_flow_pes", state="read") == 5 and (fill or 0) >= 0.9

        await eventually_async(congested, within=60)  # the machine may be loaded: PEs restart late
        # the bottleneck's queue and the one in front of it are full, the connection into it congested
        assert (value(found, "streams_k8s_flow_operator_queue_fill_ratio", operatorname="C0_1") or 0) >= 0.9
        assert (value(found, "streams_job_max_congestionFactor") or 0) >= 95

        # C0_1 runs at no more than its capacity (250/s of model time, SPEED model seconds a second;
        # the model's steps, coarser on a loaded machine, may leave it below), and back-pressure
        # holds the operator in front of it to its rate
        def rate(operator: str, direction: str = "in") -> float:
            found_rate = value(
                found, f"streams_k8s_flow_operator_tuples_{direction}_per_second", operatorname=operator
            )
            assert found_rate is not None, operator
            return found_rate

        assert 0 < rate("C0_1") <= 250 * SPEED * 1.1
        assert rate("C0_0") == pytest.approx(rate("C0_1"), rel=0.2)
        # the region's entry: the plan gives the operator the job's shape
        region = value(found, "streams_k8s_flow_region_tuples_in_per_second", region="C0_1")
        assert region == pytest.approx(rate("C0_1"), rel=0.01)
        assert (
            value(found, "streams_operator_ip_nTuplesProcessed", operatorname="C0_1", inputportname="0") or 0
        ) > 0
