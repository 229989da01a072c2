"""The simulated PE runtime resolves its peers as the Streams runtime does (AADL static connections,
the job's name table, the headless Service `<job>-<pe>`, its EndpointSlices, a started PE listening
on 10000 + port) and reports Full / Partial / None from what it finds, so a Service that selects no
pod shows as lost connectivity.

The job here is written by hand: three PEs in a pipeline 0 -> 1 -> 2 of job `pipe` (id 7), each
with its AADL ConfigMap, its headless Service and its pod, plus the job's name table."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from k8s_support import eventually_async
from operator_support import SUBMITTED, free_port, job_manifest, operator, wait_for_phase
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import CONFIGMAPS, ENDPOINT_SLICES, PODS, SERVICES
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.pe_identity import PeIdentity

NS = "default"
JOB, JOB_ID = "pipe", 7
AUG = "http://www.ibm.com/xmlns/prod/streams/application/augmented"
# PE -> (input ports as (port, sender PE), outputs as (receiver PE, its port, operator, operator port))
PIPELINE: dict[int, tuple[list[tuple[int, int]], list[tuple[int, int, int, int]]]] = {
    0: ([], [(1, 0, 1, 0)]),
    1: ([(0, 0)], [(2, 0, 2, 0)]),
    2: ([(0, 1)], []),
}
TABLE = "#Operator port labels\n#Tue Mar 02 10:15:00 UTC 2021\n7.1.0=1.0@7\n7.2.0=2.0@7\n"


class Reports:
    """The connectivity each PE reported, in order (the sandbox's pluggable reporter)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str]] = []
        self.changed = asyncio.Event()
        # (PE, state) reports that land but whose answer is lost, as on a client timeout
        self.answer_lost: set[tuple[int, str]] = set()

    async def __call__(self, pe: PeIdentity, state: str) -> None:
        self.sent.append((int(pe.pe), state))
        self.changed.set()
        if (int(pe.pe), state) in self.answer_lost:
            self.answer_lost.discard((int(pe.pe), state))
            raise TimeoutError("the controller's answer never came")

    def of(self, pe: int) -> list[str]:
        return [state for sender, state in self.sent if sender == pe]

    def latest(self) -> dict[int, str]:
        return dict(self.sent)

    async def until(self, expected: dict[int, str], within: float = 10) -> None:
        """Until the last report of each PE in `expected` is the one given."""
        async with asyncio.timeout(within):
            while any(self.latest().get(pe) != state for pe, state in expected.items()):
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
def reports() -> Reports:
    return Reports()


@pytest.fixture
async def sandbox_with_reports(reports: Reports) -> AsyncIterator[Sandbox]:
    async with Sandbox(pe_reporter=reports) as sb:
        yield sb


@pytest.fixture
async def client(sandbox_with_reports: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox_with_reports.kubeconfig_path)) as c:
        yield c


def aadl(pe: int) -> str:
    inputs, outputs = PIPELINE[pe]
    ports = sorted({port for port, _ in inputs})
    input_xml = "".join(
        f'<inputPort id="{port}" index="{port}" peId="{pe}"><staticConnections>'
        + "".join(
            f'<staticConnection peId="{sender}" oportId="0" oportIndex="0"/>'
            for p, sender in inputs
            if p == port
        )
        + "</staticConnections></inputPort>"
        for port in ports
    )
    output_xml = "".join(
        f'<outputPort id="{i}" index="{i}" peId="{pe}"><staticConnections>'
        f'<staticConnection peId="{receiver}" iportId="{iport}" iportIndex="{iport}" '
        f'iOperInstanceIndex="{op}" iOperInstancePortIndex="{op_port}"/></staticConnections></outputPort>'
        for i, (receiver, iport, op, op_port) in enumerate(outputs)
    )
    return (
        f'<augmentedPE xmlns="{AUG}" id="{pe}" jobId="{JOB_ID}" jobName="{JOB}">'
        f"<inputPorts>{input_xml}</inputPorts><outputPorts>{output_xml}</outputPorts></augmentedPE>"
    )


def pe_labels(pe: int, generation: str = "1") -> dict[str, str]:
    return {
        "app": "streams",
        "streams.ibm.com/job": JOB,
        "streams.ibm.com/pe": str(pe),
        "streams.ibm.com/generation": generation,
    }


def pe_service(pe: int, selector: dict[str, str] | None) -> dict[str, Any]:
    ports = [{"name": f"sys-{p}", "port": 10000 + p, "protocol": "TCP"} for p, _ in PIPELINE[pe][0]]
    spec: dict[str, Any] = {"clusterIP": "None", "ports": ports or [{"name": "sys-metrics", "port": 9696}]}
    if selector is not None:
        spec["selector"] = selector
    return {"metadata": {"name": f"{JOB}-{pe}", "namespace": NS}, "spec": spec}


def pe_pod(pe: int) -> dict[str, Any]:
    volumes = [
        {"name": "pe-config-volume", "configMap": {"name": f"{JOB}-{pe}"}},
        {"name": "job-config-volume", "configMap": {"name": JOB}},
    ]
    mounts = [
        {"name": "pe-config-volume", "mountPath": "/etc/config/pe"},
        {"name": "job-config-volume", "mountPath": "/etc/config/job"},
    ]
    container = {"name": "pe", "image": "streams-runtime:1", "volumeMounts": mounts}
    return {
        "metadata": {"name": f"{JOB}-{pe}-abcde", "namespace": NS, "labels": {**pe_labels(pe), "svc": "pe"}},
        "spec": {"restartPolicy": "Never", "containers": [container], "volumes": volumes},
    }


async def create_job(
    client: KubeClient, selectors: dict[int, dict[str, str] | None] | None = None, table: str = TABLE
) -> None:
    """The pipeline's objects, as the operator writes them (Services select the pods' generation
    unless `selectors` says otherwise)."""
    await client.create(
        CONFIGMAPS, {"metadata": {"name": JOB, "namespace": NS}, "data": {_table_key(): table}}
    )
    for pe in PIPELINE:
        cm = {"metadata": {"name": f"{JOB}-{pe}", "namespace": NS}, "data": {"aadl.xml": aadl(pe)}}
        await client.create(CONFIGMAPS, cm)
        selector = (selectors or {}).get(pe, pe_labels(pe))
        await client.create(SERVICES, pe_service(pe, selector))
    for pe in PIPELINE:
        await client.create(PODS, pe_pod(pe))


def _table_key() -> str:
    return "operator_port_labels.properties"


async def pod_log(sandbox: Sandbox, pe: int) -> list[str]:
    pod = sandbox.registry.get(sandbox.registry.types[("", "pods")], NS, f"{JOB}-{pe}-abcde")
    lines, _ = sandbox.logs.since(pod["metadata"]["uid"], "pe", 0, 0)
    return [text for _, text in lines]


async def test_a_pipeline_reports_full_once_every_peer_resolves(
    sandbox_with_reports: Sandbox, client: KubeClient, reports: Reports
) -> None:
    await create_job(client)
    await reports.until({0: "Full", 1: "Full", 2: "Full"})
    receiver = await client.get(PODS, f"{JOB}-1-abcde", NS)
    lines = await pod_log(sandbox_with_reports, 0)
    ip = receiver["status"]["podIP"]
    assert (
        f"pe 0 (job pipe): output to 1.0@7 (operator port 7.1.0): pipe-1.default -> {ip}:10000 connected"
        in lines
    )
    assert "pe 2 (job pipe): input port 0 from pe 1: connected" in await pod_log(sandbox_with_reports, 2)


async def test_a_service_that_selects_no_pod_is_lost_connectivity(
    sandbox_with_reports: Sandbox, client: KubeClient, reports: Reports
) -> None:
    # PE 1's Service selects the previous generation: its DNS name resolves to nothing.
    await create_job(client, selectors={1: pe_labels(1, generation="0")})
    await reports.until({1: "Partial", 2: "Full"})  # PE 0 stays at None, the controller's default
    await sandbox_with_reports.settle()
    assert reports.of(0) == []
    assert "pe 0 (job pipe): output to 1.0@7 (operator port 7.1.0): Service pipe-1 has no ready endpoint" in (
        await pod_log(sandbox_with_reports, 0)
    )
    assert "pe 0 (job pipe): connectivity None" in await pod_log(sandbox_with_reports, 0)
    assert (
        "pe 1 (job pipe): input port 0 from pe 0: pe 0 cannot reach this PE: "
        "Service pipe-1 has no ready endpoint" in await pod_log(sandbox_with_reports, 1)
    )
    # The Service fixed: everything connects.
    await client.patch(SERVICES, f"{JOB}-1", {"spec": {"selector": pe_labels(1)}}, NS)
    await reports.until({0: "Full", 1: "Full", 2: "Full"})


async def test_a_peer_that_stops_being_ready_is_lost_until_it_is_back(
    sandbox_with_reports: Sandbox, client: KubeClient, reports: Reports
) -> None:
    await create_job(client)
    await reports.until({0: "Full", 1: "Full", 2: "Full"})
    cluster = sandbox_with_reports.cluster
    assert cluster is not None
    await cluster.set_ready(NS, f"{JOB}-1-abcde", False)
    await reports.until({0: "None", 1: "Full", 2: "None"})
    await cluster.set_ready(NS, f"{JOB}-1-abcde", True)
    await reports.until({0: "Full", 1: "Full", 2: "Full"})
    assert reports.of(0)[-3:] == ["Full", "None", "Full"]


async def test_a_report_whose_answer_was_lost_is_made_again_when_the_state_flips_back(
    sandbox_with_reports: Sandbox, client: KubeClient, reports: Reports
) -> None:
    # A report can land at the controller while its answer is lost (the client timed out under
    # load): the runtime cannot know what the controller holds, so it reports its state again,
    # even when that is the state it reported before.
    runtime = sandbox_with_reports.pe_runtime
    assert runtime is not None
    await create_job(client)
    await reports.until({0: "Full", 1: "Full", 2: "Full"})
    reports.answer_lost.add((0, "None"))
    cluster = sandbox_with_reports.cluster
    assert cluster is not None
    await cluster.set_ready(NS, f"{JOB}-1-abcde", False)
    await reports.until({0: "None"})
    await cluster.set_ready(NS, f"{JOB}-1-abcde", True)  # back before the runtime retries
    await reports.until({0: "Full", 1: "Full", 2: "Full"}, within=3 * runtime.retry_interval + 2)
    assert reports.of(0)[-3:] == ["Full", "None", "Full"]
    lost = "pe 0 (job pipe): connectivity None not accepted, retrying: the controller's answer never came"
    assert lost in await pod_log(sandbox_with_reports, 0)


async def test_the_name_table_decides_where_an_operator_lives(
    sandbox_with_reports: Sandbox, client: KubeClient, reports: Reports
) -> None:
    await create_job(client)
    await reports.until({0: "Full", 1: "Full", 2: "Full"})
    await client.delete(PODS, f"{JOB}-1-abcde", NS, grace_period_seconds=0)
    await reports.until({0: "None", 2: "None"})
    # Re-fused: operator 1 now lives on PE 2's input port 0; PE 0 follows the table.
    table = TABLE.replace("7.1.0=1.0@7", "7.1.0=2.0@7")
    await client.patch(CONFIGMAPS, JOB, {"data": {_table_key(): table}}, NS)
    await reports.until({0: "Full", 2: "None"})
    receiver = await client.get(PODS, f"{JOB}-2-abcde", NS)
    assert (
        f"pe 0 (job pipe): output to 2.0@7 (operator port 7.1.0): pipe-2.default -> "
        f"{receiver['status']['podIP']}:10000 connected"
    ) in await pod_log(sandbox_with_reports, 0)
    # An unreadable table (a duplicate key): the AADL's PE port is used again.
    await client.patch(CONFIGMAPS, JOB, {"data": {_table_key(): table + "7.1.0=2.0@7\n"}}, NS)
    await reports.until({0: "None", 2: "None"})
    assert any(
        "name table unreadable" in line and "duplicate key" in line
        for line in await pod_log(sandbox_with_reports, 0)
    )


async def test_peers_resolve_through_the_endpoint_slices_their_owner_writes(
    sandbox_with_reports: Sandbox, client: KubeClient, reports: Reports
) -> None:
    # PE 2's Service has no selector: its slices are whatever its owner writes.
    await create_job(client, selectors={2: None})
    await reports.until({0: "Full", 1: "Partial"})
    await sandbox_with_reports.settle()
    assert reports.of(2) == []
    receiver = await client.get(PODS, f"{JOB}-2-abcde", NS)
    endpoint = {"addresses": [receiver["status"]["podIP"]], "conditions": {"ready": True}}
    slice_body = {
        "metadata": {
            "name": f"{JOB}-2-by-hand",
            "namespace": NS,
            "labels": {
                "kubernetes.io/service-name": f"{JOB}-2",
                "endpointslice.kubernetes.io/managed-by": "me",
            },
        },
        "addressType": "IPv4",
        "endpoints": [endpoint],
        "ports": [{"name": "sys-0", "port": 10000, "protocol": "TCP"}],
    }
    await client.create(ENDPOINT_SLICES, slice_body)
    await reports.until({0: "Full", 1: "Full", 2: "Full"})
    await client.patch(
        ENDPOINT_SLICES, f"{JOB}-2-by-hand", {"endpoints": [{**endpoint, "conditions": {"ready": False}}]}, NS
    )
    await reports.until({0: "Full", 1: "Partial", 2: "None"})


API_PORT = free_port()


@pytest.mark.sandbox(nodes=2, controller_url=f"http://127.0.0.1:{API_PORT}")
async def test_every_pe_is_fully_connected_after_a_width_change(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, regions=1, width=2))
    async with (
        await KubeClient.connect(str(sandbox.kubeconfig_path)) as client,
        operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT),
    ):
        await client.create(JOBS, job_manifest("wide", bundle))
        await wait_for_phase(client, "wide", *SUBMITTED)

        async def connected(generation: int) -> bool:
            job = await client.get(JOBS, "wide", NS)
            items, _ = await client.list_all(PES, NS)
            return (job.get("status") or {}).get("generationId") == generation and all(
                (p.get("status") or {}).get("connectivity") == "Full" for p in items
            )

        await eventually_async(lambda: connected(0), within=20)
        (region,) = (await client.list_all(PARALLEL_REGIONS, NS))[0]
        await client.patch(PARALLEL_REGIONS, region["metadata"]["name"], {"spec": {"width": 3}}, NS)
        await eventually_async(lambda: connected(1), within=20)
