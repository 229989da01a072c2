"""The operator on a real control plane, as deployed (tests/real_cluster.py): installed with kubectl
as its README says, running under the ServiceAccount and RBAC of `deploy/` in a namespace that
enforces Pod Security "restricted", on simulated Streams nodes placed by the real kube-scheduler,
and driven with kubectl. The tests share one deployment and run in order; the last holds the
operator to "no request of yours was refused" over the whole module."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from real_cluster import (
    COORDINATOR_USER,
    LEASES,
    NAMESPACE,
    OPERATOR_USER,
    RealCluster,
    deployed,
    eventually,
)
from streams_k8s.api.contract import JOB_LABEL, PE_LABEL, SVC_LABEL, SVC_PE
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.control_plane.audit import refused
from streams_k8s.control_plane.cluster import ControlPlane
from streams_k8s.controller.kinds import CONSISTENT_REGIONS, PES
from streams_k8s.k8s.kinds import ENDPOINT_SLICES, SERVICES
from streams_k8s.sandbox.cluster.pe_identity import is_ready

pytestmark = pytest.mark.asyncio(loop_scope="module")
# Three chains of three: every chain's head on a node of its own, every chain's tail on one node.
SPREAD = SyntheticSpec(
    name="spread::App", chains=3, length=3, host_exlocate_heads=True, host_colocate_tails=True
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(
    installed: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RealCluster]:
    async for running in deployed(installed, tmp_path_factory.mktemp("real-operator")):
        yield running


def synthetic_job(cluster: RealCluster, name: str, spec: SyntheticSpec, **job_spec: Any) -> dict[str, Any]:
    sab = cluster.bundles / f"{name}.sab"
    write_sab(sab, spec)
    bundle = {"name": sab.name, "file": {"path": str(sab)}}
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"bundle": bundle, **job_spec},
    }


async def pe_pods_by_id(cluster: RealCluster, job: str) -> dict[int, dict[str, Any]]:
    pods = await cluster.pods(f"{JOB_LABEL}={job},{SVC_LABEL}={SVC_PE}")
    return {int(p["metadata"]["labels"][PE_LABEL]): p for p in pods if is_ready(p)}


async def test_the_operator_runs_as_deployed(cluster: RealCluster) -> None:
    pod = await cluster.serving_operator()
    assert pod["spec"]["serviceAccountName"] == "streams-k8s-operator"
    assert pod["spec"]["nodeName"] in cluster.simulation.cluster.nodes  # type: ignore[union-attr]
    namespace = await cluster.kubectl_json("get", "namespace", NAMESPACE)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    lease = await cluster.client.get(LEASES, "streams-k8s-controller", NAMESPACE)
    assert lease["spec"]["holderIdentity"]


async def test_a_job_runs_on_the_nodes_its_host_pools_and_constraints_name(cluster: RealCluster) -> None:
    await cluster.apply(*cluster.example("hostpools"))
    # one PE per chain operator (`streams-k8s plan spread.sab --fusion manual=10`): heads 0, 3, 6
    await cluster.apply(synthetic_job(cluster, "spread", SPREAD, fusion={"manual": 10}))
    await cluster.wait_ready("hostpools")
    await cluster.wait_ready("spread")
    hostpools = await cluster.job_pods("hostpools")
    assert {"node-a", "node-b"} <= {p["spec"]["nodeName"] for p in hostpools}  # tagged pool0, pool1
    pods = await pe_pods_by_id(cluster, "spread")
    heads, tails = (0, 3, 6), (2, 5, 8)  # `streams-k8s plan` of the spread application
    assert len({pods[pe]["spec"]["nodeName"] for pe in heads}) == 3
    assert len({pods[pe]["spec"]["nodeName"] for pe in tails}) == 1


async def test_pes_that_can_never_all_be_placed_fail_the_job_saying_why(cluster: RealCluster) -> None:
    # automatic fusion on four nodes puts each chain's exlocated head with its colocated tail
    await cluster.apply(synthetic_job(cluster, "cornered", SPREAD))

    async def refused() -> dict[str, Any] | None:
        job = await cluster.kubectl_json("get", "stj", "cornered")
        planned = next(
            (c for c in (job.get("status") or {}).get("conditions") or [] if c["type"] == "Planned"), {}
        )
        return planned if planned.get("status") == "False" else None

    planned = await eventually(refused, 60, "job cornered Planned=False")
    assert "are to share a host (hostColocation 'tails') and to be on different hosts" in planned["message"]
    assert not await cluster.job_pods("cornered")
    await cluster.kubectl("delete", "stj", "cornered")


async def test_every_pe_service_has_ready_endpoints_at_its_pods_addresses(cluster: RealCluster) -> None:
    pods = await pe_pods_by_id(cluster, "spread")
    services, _ = await cluster.client.list_all(SERVICES, NAMESPACE, label_selector=f"{JOB_LABEL}=spread")
    slices, _ = await cluster.client.list_all(ENDPOINT_SLICES, NAMESPACE)
    by_service: dict[str, set[str]] = {}
    for found in slices:
        owner = found["metadata"]["labels"].get("kubernetes.io/service-name", "")
        for endpoint in found.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready"):
                by_service.setdefault(owner, set()).update(endpoint["addresses"])
    pe_services = [s for s in services if s["metadata"]["name"].rsplit("-", 1)[-1].isdigit()]
    assert len(pe_services) == len(pods) == 10
    for service in pe_services:
        pe = int(service["metadata"]["name"].rsplit("-", 1)[-1])
        address = pods[pe]["status"]["podIP"]
        assert by_service.get(service["metadata"]["name"]) == {address}
        assert not ipaddress.ip_address(address).is_loopback


async def test_kubectl_scale_resizes_a_parallel_region(cluster: RealCluster) -> None:
    await cluster.apply(*cluster.example("parallel"))
    await cluster.wait_ready("parallel")
    before = set(await pe_pods_by_id(cluster, "parallel"))
    regions = await cluster.kubectl_json("get", "stpr", "-l", f"{JOB_LABEL}=parallel")
    region = next(r for r in regions["items"] if r["spec"]["alias"] == "C0_1")
    await cluster.kubectl("scale", "stpr", region["metadata"]["name"], "--replicas=5")

    async def resized() -> bool:
        found = await cluster.kubectl_json("get", "stpr", region["metadata"]["name"])
        running = set(await pe_pods_by_id(cluster, "parallel"))
        # Fused into exactly five PEs (`manual: 5`): the five channels are fused anew, into PEs
        # of new ids, rather than into more PEs.
        at_width = found["spec"]["width"] == 5 and (found.get("status") or {}).get("width") == 5
        return at_width and len(running) == len(before) and running != before

    await eventually(resized, 90, "the region at width 5, its channels in new PEs running")
    await cluster.wait_ready("parallel")


async def test_a_killed_pe_is_restarted_with_its_launch_count_raised(cluster: RealCluster) -> None:
    pods = await pe_pods_by_id(cluster, "spread")
    victim = pods[4]
    await cluster.simulation.cluster.kill_pod(NAMESPACE, victim["metadata"]["name"])  # type: ignore[union-attr]

    async def relaunched() -> dict[str, Any] | None:
        pe = await cluster.client.get(PES, "spread-4", NAMESPACE)
        now = (await pe_pods_by_id(cluster, "spread")).get(4)
        moved = now is not None and now["metadata"]["uid"] != victim["metadata"]["uid"]
        return pe if moved and (pe.get("status") or {}).get("launchCount") == 2 else None

    await eventually(relaunched, 60, "PE 4 running again in a new pod, launch count 2")
    await cluster.wait_ready("spread")


async def test_kubectl_drain_moves_the_pes_through_the_eviction_api(cluster: RealCluster) -> None:
    pods = await pe_pods_by_id(cluster, "spread")
    operator_node = (await cluster.serving_operator())["spec"]["nodeName"]
    node = next(p["spec"]["nodeName"] for p in pods.values() if p["spec"]["nodeName"] != operator_node)
    evicted = {pe for pe, p in pods.items() if p["spec"]["nodeName"] == node}
    await cluster.kubectl("drain", node, "--pod-selector", f"{SVC_LABEL}={SVC_PE}", "--timeout=60s")
    try:

        async def moved() -> bool:
            now = await pe_pods_by_id(cluster, "spread")
            return all(pe in now and now[pe]["spec"]["nodeName"] != node for pe in evicted)

        await eventually(moved, 90, f"the PEs {sorted(evicted)} running off the drained {node}")
        await cluster.wait_ready("spread")
    finally:
        await cluster.kubectl("uncordon", node)


async def test_a_checkpoint_first_edit_checkpoints_then_resets_the_new_pes(cluster: RealCluster) -> None:
    app = SyntheticSpec(name="cr::App", chains=2, length=2, consistent_chains=1, consistent_period=1.0)
    await cluster.apply(synthetic_job(cluster, "cr", app, upgradeMode="checkpoint-first"))
    await cluster.wait_ready("cr")

    async def statuses() -> list[dict[str, Any]]:
        found, _ = await cluster.client.list_all(
            CONSISTENT_REGIONS, NAMESPACE, label_selector=f"{JOB_LABEL}=cr"
        )
        return [r.get("status") or {} for r in found]

    async def checkpointing() -> list[dict[str, Any]] | None:
        found = await statuses()
        return found if found and all(s.get("lastCompletedSeqID") for s in found) else None

    before = await eventually(checkpointing, 60, "every region of job cr with a completed checkpoint")
    await cluster.kubectl(
        "patch",
        "stj",
        "cr",
        "--type=merge",
        "-p",
        '{"spec":{"processingElement":{"runtimeTraceLevel":"TRACE"}}}',
    )

    async def reset_to_the_asked_checkpoint() -> list[dict[str, Any]] | None:
        found = await statuses()
        done = all(
            s.get("lastCompletedReset") is not None
            and s.get("lastCompletedReset") == (s.get("checkpointRequest") or {}).get("seqID")
            for s in found
        )
        return found if done else None

    after = await eventually(
        reset_to_the_asked_checkpoint, 90, "the new PEs reset to the upgrade's checkpoint"
    )
    for was, now in zip(before, after, strict=True):
        assert now["checkpointRequest"]["seqID"] > was["lastCompletedSeqID"]
        assert not now.get("drainsHeld")
    await cluster.wait_ready("cr")


async def test_an_import_and_an_export_of_two_jobs_meet(cluster: RealCluster) -> None:
    await cluster.apply(*cluster.example("pubsub"))
    for job in cluster.example("pubsub"):
        await cluster.wait_ready(job["metadata"]["name"])
    exports = await cluster.kubectl_json("get", "stx")
    imports = await cluster.kubectl_json("get", "sti")
    assert sorted(e["spec"]["type"] for e in exports["items"]) == ["ByName", "ByProperties"]
    assert len(imports["items"]) == 2

    async def connected() -> list[tuple[str, str, str]] | None:
        # the table kube-apiserver prints from the CRD's columns (kubectl aligns them under the header)
        _, table, _ = await cluster.kubectl("get", "sti")
        header, *rows = table.splitlines()
        starts = [header.index(c) for c in ("STREAMS", "FILTER", "CONNECTIONS", "CONNECTED-TO")]
        cells = [
            (row[starts[0] : starts[1]].strip(), row[starts[2] : starts[3]].strip(), row[starts[3] :].strip())
            for row in rows
        ]
        return cells if len(cells) == 2 and all(count == "1" for _, count, _ in cells) else None

    cells = await eventually(connected, 30, "both Imports connected, as kubectl get sti shows")
    # each names what it imports (a stream by name, a subscription) and the job and stream it gets
    assert sorted(to.split("/")[0] for _, _, to in cells) == ["exporter", "exporter"]
    assert any(streams == "temperatures" for streams, _, _ in cells), cells


async def test_the_console_shows_a_viewer_what_the_api_server_lets_them_read(cluster: RealCluster) -> None:
    """Behind the real TokenReview and SubjectAccessReview: a token without read access on Jobs sees
    none; one whose Role lets it list them sees the namespace's."""
    for account in ("nobody", "viewer"):
        await cluster.kubectl("create", "serviceaccount", account)
    await cluster.kubectl("create", "role", "job-viewer", "--verb=get,list,watch", "--resource=streamsjobs")
    await cluster.kubectl(
        "create", "rolebinding", "job-viewer", "--role=job-viewer", f"--serviceaccount={NAMESPACE}:viewer"
    )
    console = f"http://{cluster.address_of(await cluster.serving_operator())}:8090/api/jobs"

    async def jobs_seen_by(account: str) -> set[str]:
        _, token, _ = await cluster.kubectl("create", "token", account)
        headers = {"Authorization": f"Bearer {token.strip()}"}
        async with aiohttp.ClientSession() as session, session.get(console, headers=headers) as answer:
            assert answer.status == 200, await answer.text()
            body = await answer.json()
        return {job["name"] for job in body.get("jobs") or []}

    assert await jobs_seen_by("nobody") == set()
    assert {"spread", "parallel"} <= await jobs_seen_by("viewer")


async def test_a_standby_operator_takes_over_when_the_leader_goes(cluster: RealCluster) -> None:
    leader = await cluster.serving_operator()
    holder = (await cluster.client.get(LEASES, "streams-k8s-controller", NAMESPACE))["spec"]["holderIdentity"]
    await cluster.kubectl("scale", "deployment", "streams-k8s-operator", "--replicas=2")
    await eventually(lambda: _running_operators(cluster, 2), 60, "two operator pods running")
    await cluster.kubectl("delete", "pod", leader["metadata"]["name"], "--wait=false")

    async def new_leader() -> dict[str, Any] | None:
        serving = await cluster.serving_operator()
        return serving if serving["metadata"]["name"] != leader["metadata"]["name"] else None

    successor = await eventually(new_leader, 90, "another operator pod serving")
    lease = await cluster.client.get(LEASES, "streams-k8s-controller", NAMESPACE)
    assert lease["spec"]["holderIdentity"] not in ("", holder)
    assert successor["metadata"]["labels"]["streams.ibm.com/serving"] == "true"
    await cluster.wait_ready("spread")  # the new leader keeps the jobs running


async def _running_operators(cluster: RealCluster, count: int) -> bool:
    pods = await cluster.pods("app.kubernetes.io/name=streams-k8s-operator")
    return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running") >= count


async def test_kubectl_delete_leaves_nothing_of_the_job_behind(cluster: RealCluster) -> None:
    await cluster.kubectl("delete", "stj", "hostpools", "--wait=true", "--timeout=60s")
    kinds = "pods,services,configmaps,stp,stpr,stcr,sthp"

    async def gone() -> bool:
        _, out, _ = await cluster.kubectl("get", kinds, "-l", f"{JOB_LABEL}=hostpools", "-o", "name")
        return not out.strip()

    await eventually(gone, 60, "no object labelled with job hostpools")


async def test_no_request_of_the_operator_or_its_coordinators_was_refused(cluster: RealCluster) -> None:
    found = refused(cluster.plane.audit_log, {OPERATOR_USER, COORDINATOR_USER})
    assert not found, "the API server refused:\n" + "\n".join(map(str, found[:20]))
