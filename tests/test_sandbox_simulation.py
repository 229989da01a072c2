"""The simulated cluster as a client of an API server (here the embedded one, over HTTP): nodes
registered with heartbeat Leases and non-loopback pod networks, pods started with addresses from
their node's podCIDR (never one in use, after a restart of the simulation too), deletions finished
as the kubelet does (terminated status, then DELETE with grace 0 and a UID precondition, finalizers
left alone), a coordinator pod's program run as a process answering its REST API, PE reports
trusted by their pod-bound token only for their own job (the token's review naming its pod and
node, as kube-apiserver's does), and the simulation's own identity (spared by faults, told apart
in the request log)."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from cr_cluster import coordinator_accounts, pod_url
from k8s_support import eventually_async
from operator_support import SUBMITTED, as_pe, job_manifest, operator, wait_for_phase
from streams_k8s.api.processing_element import ImagePullPolicy, TraceLevel
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.consistent.manifests import coordinator_pod_spec
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import NODES, PODS
from streams_k8s.k8s.reviews import TokenReviewer
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.authn import SIMULATION
from streams_k8s.sandbox.cluster.nodes import NodeSpec
from streams_k8s.sandbox.cluster.pe_identity import is_ready
from streams_k8s.sandbox.cluster.pod_processes import ApiServerAccess
from streams_k8s.sandbox.cluster.pod_tokens import PodRef, PodTokens
from streams_k8s.sandbox.cluster.simulation import Simulation, SimulationOptions

NS = "default"
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
NODE_SPECS = [
    NodeSpec(
        "a", zone="z1", cpu="4", memory="8Gi", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]
    ),
    NodeSpec("b", zone="z2"),
]


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def pod(name: str, node: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox:1"}], **spec},
    }
    if node is not None:
        body["spec"]["nodeName"] = node
    return body


async def running(client: KubeClient, name: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def runs() -> bool:
        found.update(await client.get(PODS, name, NS))
        return (found.get("status") or {}).get("phase") == "Running"

    await eventually_async(runs, within=15)
    return found


@pytest.mark.sandbox(nodes=NODE_SPECS)
async def test_nodes_register_with_pod_networks_and_renew_their_leases(
    sandbox: Sandbox, client: KubeClient
) -> None:
    nodes = {n["metadata"]["name"]: n for n in (await client.list_all(NODES))[0]}
    a = nodes["a"]
    assert a["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert a["metadata"]["labels"]["topology.kubernetes.io/zone"] == "z1"
    assert a["spec"]["taints"] == [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    networks = [ipaddress.ip_network(n["spec"]["podCIDR"]) for n in nodes.values()]
    assert [str(n) for n in networks] == ["10.244.0.0/24", "10.244.1.0/24"]
    assert not any(n.is_loopback for n in networks)
    ready = next(c for c in a["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    assert ready["lastHeartbeatTime"]
    lease = await client.get(LEASES, "a", "kube-node-lease")
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["metadata"]["ownerReferences"][0]["uid"] == a["metadata"]["uid"]
    # A node added with a short heartbeat renews its Lease (every 10 s by default).
    assert sandbox.cluster is not None
    sandbox.cluster.renew_interval = 0.1
    await sandbox.cluster.add_node(NodeSpec("c"))
    first = (await client.get(LEASES, "c", "kube-node-lease"))["spec"]["renewTime"]

    async def renewed() -> bool:
        return bool((await client.get(LEASES, "c", "kube-node-lease"))["spec"]["renewTime"] != first)

    await eventually_async(renewed, within=5)
    assert (await client.get(NODES, "c"))["spec"]["podCIDR"] == "10.244.2.0/24"
    writes = {r.user for r in sandbox.requests if r.method != "GET" and "/leases" in r.path}
    assert writes == {SIMULATION}
    # Removed, the node goes, and its Lease with it (the Node owns it).
    await sandbox.cluster.remove_node("c")

    async def lease_gone() -> bool:
        try:
            await client.get(LEASES, "c", "kube-node-lease")
        except ApiError as err:
            return err.not_found
        return False

    await eventually_async(lease_gone, within=5)


@pytest.mark.sandbox(nodes=NODE_SPECS)
async def test_pod_addresses_come_from_the_nodes_network_and_are_never_reused(
    sandbox: Sandbox, client: KubeClient
) -> None:
    for i in range(4):
        await client.create(PODS, pod(f"p{i}", node="b"), NS)
    first = [await running(client, f"p{i}") for i in range(4)]
    b = await client.get(NODES, "b")
    network = ipaddress.ip_network(b["spec"]["podCIDR"])
    addresses = {p["status"]["podIP"] for p in first}
    assert len(addresses) == 4
    assert all(ipaddress.ip_address(ip) in network for ip in addresses)
    internal = next(a["address"] for a in b["status"]["addresses"] if a["type"] == "InternalIP")
    assert {p["status"]["hostIP"] for p in first} == {internal}
    conditions = {c["type"]: c["status"] for c in first[0]["status"]["conditions"]}
    assert {
        k: conditions[k] for k in ("Initialized", "PodReadyToStartContainers", "ContainersReady", "Ready")
    } == {
        "Initialized": "True",
        "PodReadyToStartContainers": "True",
        "ContainersReady": "True",
        "Ready": "True",
    }
    # The simulation restarts: a new one adopts the nodes and the running pods' addresses first.
    assert sandbox.simulation is not None
    await sandbox.simulation.stop()
    again = Simulation(SimulationOptions(NODE_SPECS, pe_runtime=False), sandbox.logs)
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as its_client:
        await again.start(its_client, ApiServerAccess(sandbox.url))
        try:
            for i in range(4, 8):
                await client.create(PODS, pod(f"p{i}", node="b"), NS)
            later = {(await running(client, f"p{i}"))["status"]["podIP"] for i in range(4, 8)}
        finally:
            await again.stop()
    assert not later & addresses
    assert (await client.get(NODES, "b"))["spec"]["podCIDR"] == str(network)  # the same node, adopted


async def test_a_deleted_pod_is_finished_by_its_kubelet_and_kept_while_a_finalizer_holds_it(
    sandbox: Sandbox, client: KubeClient
) -> None:
    held = pod("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await client.create(PODS, held, NS)
    uid = (await running(client, "held"))["metadata"]["uid"]
    await client.delete(PODS, "held", NS)
    found: dict[str, Any] = {}

    async def finished() -> bool:
        found.update(await client.get(PODS, "held", NS))
        return found["metadata"].get("deletionGracePeriodSeconds") == 0

    await eventually_async(finished, within=10)
    assert found["status"]["phase"] == "Succeeded"  # its simulated container stopped on SIGTERM
    (container,) = found["status"]["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 0
    assert found["metadata"]["finalizers"] == ["example.com/hold"]  # left alone
    (removal,) = [
        r
        for r in sandbox.requests
        if r.method == "DELETE" and r.path.endswith("/pods/held") and r.user == SIMULATION
    ]
    options = orjson.loads(removal.body)
    assert (options["gracePeriodSeconds"], options["preconditions"]) == (0, {"uid": uid})
    await client.patch(PODS, "held", {"metadata": {"finalizers": None}}, NS)
    assert await sandbox.wait_for("pods", "held", NS, lambda p: p is None) is None


async def test_a_coordinator_pod_runs_its_program_with_its_own_identity_and_address(
    sandbox: Sandbox, client: KubeClient
) -> None:
    await coordinator_accounts(client)
    spec = coordinator_pod_spec(
        image="streams-k8s:test",
        pull_policy=ImagePullPolicy.IF_NOT_PRESENT,
        pull_secret=None,
        args=["--mode", "dedicated", "--job", "solo"],
        env=[{"name": "STREAMS_JOB_NAME", "value": "solo"}],
        log_level=TraceLevel.INFO,
        service_account="streams-consistent-region",
    )
    await client.create(PODS, {"metadata": {"name": "coordinator"}, "spec": spec}, NS)
    found: dict[str, Any] = {}

    async def ready() -> bool:
        found.update(await client.get(PODS, "coordinator", NS))
        return is_ready(found)

    await eventually_async(ready, within=30)
    assert ipaddress.ip_address(found["status"]["podIP"]) in ipaddress.ip_network("10.244.0.0/16")
    url = pod_url(sandbox, found)
    assert url is not None
    assert url.startswith("http://127.245.")
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{url}/api/consistentregion/openapi.json") as answer,
    ):
        assert answer.status == 200
    uid = found["metadata"]["uid"]
    lines = [line for _, line in sandbox.logs.since(uid, "consistent-region-operator", 0, 0)[0]]
    assert any("consistent-region API on :10000" in line for line in lines)  # its own output
    # Its requests are its service account's (a token bound to the pod), not the simulation's.
    accounts = {r.user for r in sandbox.requests if "streamscrs" in r.path}
    assert accounts == {"system:serviceaccount:default:streams-consistent-region"}
    # Deleted, it stops on SIGTERM; its exit is its container's last state.
    await client.delete(PODS, "coordinator", NS)
    assert await sandbox.wait_for("pods", "coordinator", NS, lambda p: p is None, max_wait=40) is None
    last = sandbox.history("pods", "coordinator", NS)[-1].obj
    (container,) = last["status"]["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 0
    assert last["status"]["phase"] == "Succeeded"


async def test_a_pe_reports_with_its_pods_token_and_not_for_another_job(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache") as running_operator:
        assert sandbox.pe_runtime is not None
        await sandbox.pe_runtime.report_to(running_operator.api)
        for job in ("one", "two"):
            await client.create(JOBS, job_manifest(job, bundle))
        for job in ("one", "two"):
            await wait_for_phase(client, job, *SUBMITTED)

        async def connected() -> bool:
            pes, _ = await client.list_all(PES, NS)
            jobs = {pe["metadata"]["labels"]["streams.ibm.com/job"] for pe in pes}
            return jobs == {"one", "two"} and all(
                (pe.get("status") or {}).get("connectivity") == "Full" for pe in pes
            )

        await eventually_async(connected, within=20)  # the simulated PEs' reports, by token
        path = f"{running_operator.api}/api/state/job/one/pe/0/connectivity"
        async with as_pe(client, "two", 0) as other, other.put(path, json="Partial") as answer:
            assert answer.status == 403
            assert "may not update streamsjobs.streams.ibm.com 'one'" in (await answer.json())["message"]
        async with as_pe(client, "one", 0) as own, own.put(path, json="Full") as answer:
            assert answer.status == 204


async def test_faults_spare_the_simulation_unless_asked_and_its_watches_are_its_own(
    sandbox: Sandbox, client: KubeClient
) -> None:
    assert sandbox.open_watches("pods") == 0
    assert sandbox.open_watches("pods", simulation=True) >= 1
    sandbox.faults.fail(500, None, verb="update", resource="pods/status")
    await client.create(PODS, pod("spared"), NS)
    await running(client, "spared")  # the kubelet's status writes are not the operator's
    sandbox.faults.clear()
    sandbox.faults.fail(500, None, verb="update", resource="pods/status", simulation=True)
    await client.create(PODS, pod("hit"), NS)
    await sandbox.settle()
    assert (await client.get(PODS, "hit", NS))["status"].get("phase") == "Pending"
    sandbox.faults.clear()
    assert (await running(client, "hit"))["status"]["podIP"]  # written once the fault is gone


@pytest.mark.sandbox(nodes=NODE_SPECS)
async def test_a_pods_token_is_reviewed_as_kube_apiserver_reviews_it(
    sandbox: Sandbox, client: KubeClient
) -> None:
    await client.create(PODS, pod("bound", node="b"), NS)
    found = await running(client, "bound")
    token = await PodTokens(client).token(PodRef.of(found))
    review = await TokenReviewer(client)(token)
    assert (review.authenticated, review.user) == (True, "system:serviceaccount:default:default")
    node = await client.get(NODES, "b")
    assert {k: v for k, v in review.extra.items() if not k.endswith("credential-id")} == {
        "authentication.kubernetes.io/pod-name": ("bound",),
        "authentication.kubernetes.io/pod-uid": (found["metadata"]["uid"],),
        "authentication.kubernetes.io/node-name": ("b",),
        "authentication.kubernetes.io/node-uid": (node["metadata"]["uid"],),
    }
    await client.delete(PODS, "bound", NS, grace_period_seconds=0)
    assert not (await TokenReviewer(client)(token)).authenticated  # the pod is gone: so is its token
