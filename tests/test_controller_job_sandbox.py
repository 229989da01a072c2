"""The instance operator against the sandbox: submission, objects, status, failures, recreation."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from k8s_support import eventually_async
from operator_support import (
    SUBMITTED,
    condition,
    drop_job_name_rules,
    free_port,
    job_manifest,
    job_status,
    operator,
    sab_from_adl,
    wait_for_phase,
)
from repo_paths import shared_testdata
from streams_k8s.api.contract import (
    APPLICATION_NAME_ANNOTATION,
    CONTENT_ID_ANNOTATION,
    GENERATION_LABEL,
    JOB_LABEL,
    NAME_TABLE_KEY,
    SVC_LABEL,
)
from streams_k8s.api.processing_element import ProcessingElement
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl, write_sab
from streams_k8s.controller.kinds import (
    CONSISTENT_REGION_OPERATORS,
    CONSISTENT_REGIONS,
    HOSTPOOLS,
    JOBS,
    PARALLEL_REGIONS,
    PES,
)
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.events import EVENTS
from streams_k8s.k8s.kinds import CONFIGMAPS, NODES, PODS, SECRETS, SERVICES
from streams_k8s.k8s.objects import meta
from streams_k8s.naming import NameTable
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.nodes import NodeSpec

CHILDREN = (
    CONFIGMAPS,
    SERVICES,
    HOSTPOOLS,
    PARALLEL_REGIONS,
    CONSISTENT_REGIONS,
    CONSISTENT_REGION_OPERATORS,
    PES,
)
API_PORT = free_port()
KUBECTL = shutil.which("kubectl")


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def children(client: KubeClient, job: str) -> dict[Resource, list[dict[str, Any]]]:
    found = {}
    for resource in CHILDREN:
        items, _ = await client.list_all(resource, "default", label_selector=f"{JOB_LABEL}={job}")
        found[resource] = items
    return found


async def events_of(client: KubeClient, name: str) -> list[dict[str, Any]]:
    items, _ = await client.list_all(EVENTS, "default")
    return [e for e in items if e.get("regarding", {}).get("name") == name]


def sab(tmp_path: Path, name: str = "app.sab", **spec: Any) -> Path:
    return write_sab(tmp_path / name, SyntheticSpec(**spec))


@pytest.mark.sandbox(nodes=3, controller_url=f"http://127.0.0.1:{API_PORT}")
async def test_a_generated_job_gets_every_object_and_runs(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = sab(tmp_path, chains=3, length=3, regions=1, width=2, consistent_chains=1)
    async with operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT):
        job = await client.create(JOBS, job_manifest("demo", bundle, fusion={"manual": 4}))
        status = await wait_for_phase(client, "demo", *SUBMITTED)
        assert status["id"] == 0
        assert status["generationId"] == 0
        assert status["processingElements"] == 4
        assert status["applicationName"] == "synthetic::App"
        for type_ in ("Valid", "BundleFetched", "Planned"):
            assert condition(status, type_)["status"] == "True"

        found = await children(client, "demo")
        pes = found[PES]
        assert sorted(p["metadata"]["name"] for p in pes) == [f"demo-{i}" for i in range(4)]
        for obj in (o for items in found.values() for o in items):
            ref = obj["metadata"]["ownerReferences"][0]
            if obj["metadata"]["labels"].get(SVC_LABEL) == "consistent-region-operator":
                assert ref["kind"] == "ConsistentRegionOperator"  # the coordinator's API Service
                continue
            assert (ref["kind"], ref["uid"], ref["controller"]) == ("Job", job["metadata"]["uid"], True)
            assert obj["metadata"]["labels"][GENERATION_LABEL] == "0"
            assert obj["metadata"]["annotations"][APPLICATION_NAME_ANNOTATION] == "synthetic::App"
        # every PE: ConfigMap with its AADL and content id, headless Service with the runtime's ports
        for pe in pes:
            spec = ProcessingElement.from_wire(pe).spec
            cm = await client.get(CONFIGMAPS, f"demo-{spec.id}", "default")
            assert cm["metadata"]["annotations"][CONTENT_ID_ANNOTATION] == spec.content_id
            assert "augmentedPE" in cm["data"]["aadl.xml"]
            service = await client.get(SERVICES, f"demo-{spec.id}", "default")
            assert service["spec"]["clusterIP"] == "None"
            names = {p["name"]: (p["port"], p["protocol"]) for p in service["spec"]["ports"]}
            assert names["sys-metrics"] == (9696, "TCP")
            assert names["sys-notifications"] == (10000, "UDP")
            assert names["sys-consistentregion"] == (10001, "UDP")
            assert spec.sab_name == bundle.name
            assert spec.restart_failed_pod is True
            assert spec.image_pull_policy is not None
            assert spec.image_pull_policy.value == "IfNotPresent"
        table = NameTable.parse((await client.get(CONFIGMAPS, "demo", "default"))["data"][NAME_TABLE_KEY])
        assert table
        assert all(label.job_id == 0 for label in table.values())
        assert len(found[PARALLEL_REGIONS]) == 1
        assert found[PARALLEL_REGIONS][0]["spec"]["width"] == 2
        assert len(found[CONSISTENT_REGIONS]) == 1
        assert len(found[CONSISTENT_REGION_OPERATORS]) == 1
        region = found[CONSISTENT_REGIONS][0]["spec"]
        assert region["pesInRegion"]
        assert all(
            ProcessingElement.from_wire(p).spec.regions == [0]
            for p in pes
            if ProcessingElement.from_wire(p).spec.id in region["pesInRegion"]
        )
        assert [h["spec"]["name"] for h in found[HOSTPOOLS]] == ["$default"]

        status = await wait_for_phase(client, "demo", "Running")
        assert status["podsReady"] == 4
        assert condition(status, "PodsReady")["status"] == "True"
        assert "message" not in status  # "4 PEs submitted" is old news once it runs

        async def connected() -> bool:
            items, _ = await client.list_all(PES, "default")
            return all((p.get("status") or {}).get("connectivity") == "Full" for p in items)

        await eventually_async(connected, within=10)
        reasons = {e["reason"] for e in await events_of(client, "demo")}
        assert {"SubmissionStarted", "SubmissionSucceeded", "Running"} <= reasons
        # The PE's first connectivity report also recorded its running pod: one status write per
        # PE, unless its connectivity changed after (a PE that reported Partial before its peers
        # connected, under load): later writes carry nothing but the connectivity.
        for pe in (await client.list_all(PES, "default"))[0]:
            pe_status, name = pe["status"], pe["metadata"]["name"]
            pod = await client.get(PODS, pe_status["podName"], "default")
            assert (pe_status["launchCount"], pe_status["phase"]) == (1, "Running")
            assert pe_status["nodeName"] == pod["spec"]["nodeName"]
            writes = [
                json.loads(r.body)["status"]
                for r in sandbox.requests
                if r.method == "PATCH" and r.path.endswith(f"/streamspes/{name}/status") and r.status < 300
            ]
            (recorded,) = [w for w in writes if "launchCount" in w]
            assert {"podName", "nodeName", "phase", "connectivity"} <= set(recorded)  # the report's
            assert all(set(w) == {"connectivity"} for w in writes if w is not recorded), writes
            seen = [w["connectivity"] for w in writes]
            assert all(a != b for a, b in itertools.pairwise(seen)), seen  # each a change


DELETED = ((CONFIGMAPS, "keep-1"), (SERVICES, "keep-0"), (HOSTPOOLS, "keep-0"), (PES, "keep-1"))


@pytest.mark.sandbox(nodes=2)
async def test_a_pe_deleted_while_the_operator_is_down_comes_back_with_its_id(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The restarted operator plans the job again: a PE it finds missing (as after a submission cut
    short by a restart) gets the id the submission gave it, not one after the highest running id."""
    bundle = sab(tmp_path, chains=4, length=2)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("ids", bundle, fusion={"manual": 4}))
        await wait_for_phase(client, "ids", "Running")
    before = {
        p["spec"]["id"]: sorted(p["spec"]["operators"]) for p in (await client.list_all(PES, "default"))[0]
    }
    assert sorted(before) == [0, 1, 2, 3]
    await client.delete(PES, "ids-1", "default")
    async with operator(sandbox, monkeypatch, tmp_path / "cache-2"):

        async def back() -> bool:
            pes = (await client.list_all(PES, "default"))[0]
            return len(pes) == 4 and not any(meta(p).get("deletionTimestamp") for p in pes)

        await eventually_async(back, within=20)
    after = {
        p["spec"]["id"]: sorted(p["spec"]["operators"]) for p in (await client.list_all(PES, "default"))[0]
    }
    assert after == before


@pytest.mark.sandbox(nodes=2)
async def test_deleted_children_come_back_and_job_deletion_collects_them(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = sab(tmp_path, chains=2, length=2)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("keep", bundle, fusion={"manual": 2}))
        await wait_for_phase(client, "keep", *SUBMITTED)
        for resource, name in DELETED:
            await client.delete(resource, name, "default")

        async def all_back() -> bool:
            try:
                for resource, name in DELETED:
                    await client.get(resource, name, "default")
            except ApiError as err:
                if err.not_found:
                    return False
                raise
            return True

        await eventually_async(all_back, within=10)
        await client.delete(JOBS, "keep", "default")

        async def collected() -> bool:
            found = await children(client, "keep")
            return not any(found.values())

        await eventually_async(collected, within=10)


@pytest.mark.sandbox(nodes=1)
async def test_invalid_spec_fails_with_the_field_and_creates_nothing(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = sab(tmp_path)
    await drop_job_name_rules(client)  # a Job made before the CRD had its name rules
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        manifest = job_manifest("bad-" + "x" * 56, bundle)  # a label value, too long for its children
        await client.create(JOBS, manifest)
        status = await wait_for_phase(client, manifest["metadata"]["name"], "Failed")
        valid = condition(status, "Valid")
        assert valid["status"] == "False"
        assert valid["reason"] == "InvalidName"
        assert "metadata.name" in valid["message"]
        assert not any((await children(client, manifest["metadata"]["name"])).values())
        assert "SubmissionFailed" in {
            e["reason"] for e in await events_of(client, manifest["metadata"]["name"])
        }


@pytest.mark.sandbox(nodes=1)
async def test_missing_bundle_fails_bundle_fetched_then_a_fixed_spec_submits(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = sab(tmp_path)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        manifest = job_manifest("fetch", bundle)
        manifest["spec"]["bundle"]["file"]["path"] = str(tmp_path / "absent.sab")
        await client.create(JOBS, manifest)
        status = await wait_for_phase(client, "fetch", "Failed")
        fetched = condition(status, "BundleFetched")
        assert fetched["status"] == "False"
        assert fetched["reason"] == "BundleNotFound"
        assert "absent.sab" in fetched["message"]
        first_id = status["id"]
        assert not any((await children(client, "fetch")).values())

        await client.patch(JOBS, "fetch", {"spec": {"bundle": {"file": {"path": str(bundle)}}}}, "default")
        status = await wait_for_phase(client, "fetch", *SUBMITTED)
        assert status["id"] == first_id  # the same Job keeps its id
        assert condition(status, "BundleFetched")["status"] == "True"


SOURCE_POOL = '<resources><poolLocation poolIndex="0"/></resources>'
POOL_1 = '<resources><poolLocation poolIndex="1"/></resources>'
HOST = '<resources><hostLocation hostname="{}"/></resources>'


@pytest.mark.sandbox(nodes=2)
@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (  # host(IP) that no node has
            lambda adl: adl.replace(
                SOURCE_POOL,
                '<resources><hostLocation hostname="10.9.9.9"/><poolLocation poolIndex="0"/></resources>',
                1,
            ),
            "host '10.9.9.9' is neither the name nor an address of a node",
        ),
        (  # a pool of 3 hosts on 2 nodes
            lambda adl: adl.replace('name="pool0">', 'name="pool0" size="3">', 1),
            "host pool 'pool0' needs 3 node(s) but only 0",
        ),
        (  # operators that must share a PE (partition colocation) pinned to two different hosts
            lambda adl: adl.replace(
                POOL_1, '<resources><hostLocation hostname="node-0"/></resources>', 1
            ).replace(POOL_1, '<resources><hostLocation hostname="node-1"/></resources>', 1),
            "C0_0 and C0_1 must be fused together",
        ),
    ],
    ids=["missing-ip", "pool-too-small", "conflicting-hosts"],
)
async def test_unsatisfiable_placement_fails_clearly_and_leaves_nothing(
    sandbox: Sandbox,
    client: KubeClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edit: Any,
    expected: str,
) -> None:
    spec = SyntheticSpec(chains=2, length=2, pools=1, colocate_pairs=True)
    adl = edit(synthetic_adl(spec).decode())
    bundle = sab_from_adl(tmp_path / "app.sab", adl.encode())
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("placed", bundle, fusion={"manual": 1}))
        status = await wait_for_phase(client, "placed", "Failed")
        planned = condition(status, "Planned")
        assert planned["status"] == "False"
        assert planned["reason"] in ("PlacementFailed", "PlanningFailed")
        assert expected in planned["message"]
        assert not any((await children(client, "placed")).values())


@pytest.mark.sandbox(nodes=1)
async def test_job_ids_are_unique_and_survive_a_restart(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = sab(tmp_path, chains=1, length=1)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        for name in ("one", "two"):
            await client.create(JOBS, job_manifest(name, bundle))
            await wait_for_phase(client, name, *SUBMITTED)
    await client.delete(JOBS, "two", "default")  # its id must not come back
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("three", bundle))
        await wait_for_phase(client, "three", *SUBMITTED)
    ids = [(await job_status(client, n)).get("id") for n in ("one", "three")]
    assert ids == [0, 2]


@pytest.mark.sandbox(nodes=1)
async def test_kubectl_get_stj_shows_the_status_column(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    bundle = sab(tmp_path, chains=1, length=2)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("shown", bundle, fusion={"manual": 2}))
        await wait_for_phase(client, "shown", *SUBMITTED)
        result = await asyncio.to_thread(
            subprocess.run,
            [KUBECTL, "--kubeconfig", str(sandbox.kubeconfig_path), "get", "stj", "-n", "default"],
            capture_output=True,
            text=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()[:2]
    assert header.split()[:3] == ["NAME", "STATUS", "PES"]
    name, phase, pes = row.split()[:3]
    assert (name, pes) == ("shown", "2")
    assert phase in SUBMITTED


@pytest.mark.sandbox(nodes=1)
async def test_submission_time_out_fails_and_cleans_up(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = sab(tmp_path, chains=2, length=2)
    # every PE create is refused for a while: the submission cannot finish in time
    sandbox.faults.fail(500, None, verb="create", resource="streamspes")
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("slow", bundle, submissionTimeOutInSeconds=2))
        status = await wait_for_phase(client, "slow", "Failed", within=30)
        submitted = condition(status, "Submitted")
        assert submitted["reason"] == "SubmissionTimedOut"
        assert "submissionTimeOutInSeconds=2" in submitted["message"]

        async def cleaned() -> bool:
            return not any((await children(client, "slow")).values())

        await eventually_async(cleaned, within=10)


# Nodes for the real bundles: apps.hostpools asks for hosts tagged source_hosts and sink_hosts.
TAGGED_NODES = [
    NodeSpec("node-a", labels={"streams.ibm.com/hostpool": "source_hosts"}),
    NodeSpec("node-b", labels={"streams.ibm.com/hostpool": "sink_hosts"}),
    NodeSpec("node-c"),
]


@pytest.mark.sandbox(nodes=TAGGED_NODES)
@pytest.mark.parametrize(
    "bundle",
    [
        "apps.parallel.Parallel.sab",
        "apps.consistent.ConsistentRegion.sab",
        "apps.hostpools.HostPools.sab",
        "apps.pubsub.Exporter.sab",
        "apps.pubsub.Importer.sab",
    ],
)
async def test_real_bundles_reach_running(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bundle: str
) -> None:
    path = shared_testdata("apps", bundle)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("real", path.resolve()))
        status = await wait_for_phase(client, "real", "Running", "Failed", within=60)
        assert status["phase"] == "Running", status
        found = await children(client, "real")
        assert len(found[PES]) == status["processingElements"] == status["podsReady"]
        pes = {ProcessingElement.from_wire(p).spec.id: p for p in found[PES]}
        for pe_id, pe in pes.items():
            cm = await client.get(CONFIGMAPS, f"real-{pe_id}", "default")
            assert cm["metadata"]["annotations"][CONTENT_ID_ANNOTATION] == pe["spec"]["contentId"]
        if bundle == "apps.hostpools.HostPools.sab":
            pools = {h["spec"]["name"]: h["spec"] for h in found[HOSTPOOLS]}
            assert set(pools) == {"source_hosts", "$default", "sink_hosts"}
            assert pools["source_hosts"]["tags"] == ["source_hosts"]
            pods, _ = await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}=real")
            pool_pods = {
                (tuple(expression["values"]), pod["spec"]["nodeName"])
                for pod in pods
                for term in pod["spec"]
                .get("affinity", {})
                .get("nodeAffinity", {})
                .get("requiredDuringSchedulingIgnoredDuringExecution", {})
                .get("nodeSelectorTerms", ())
                for expression in term["matchExpressions"]
                if expression["key"] == "streams.ibm.com/hostpool"
            }
            assert pool_pods == {(("source_hosts",), "node-a"), (("sink_hosts",), "node-b")}
        if bundle == "apps.consistent.ConsistentRegion.sab":
            assert len(found[CONSISTENT_REGIONS]) == 1
            assert found[CONSISTENT_REGIONS][0]["metadata"]["name"] == "real-cr0"


HOSTS = ["c0321.pok.hpc-ng.ibm.com", "c0323.pok.hpc-ng.ibm.com"]


@pytest.mark.sandbox(nodes=[NodeSpec(h) for h in HOSTS])
async def test_real_host_placement_pins_pes_to_the_named_nodes(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shared_testdata("apps", "apps.hostplacement.HostPlacement_nodename.sab")
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("hosts", path.resolve()))
        status = await wait_for_phase(client, "hosts", *SUBMITTED, "Failed")
        assert status["phase"] in SUBMITTED, status
        found = await children(client, "hosts")
        assert sorted(p["spec"]["placement"]["host"] for p in found[PES]) == HOSTS


@pytest.mark.sandbox(nodes=2)
async def test_real_host_placement_fails_on_a_cluster_without_those_hosts(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shared_testdata("apps", "apps.hostplacement.HostPlacement_nodename.sab")
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("hosts", path.resolve()))
        status = await wait_for_phase(client, "hosts", "Failed")
        assert "c032" in condition(status, "Planned")["message"]
        assert not any((await children(client, "hosts")).values())


@pytest.mark.sandbox(nodes=3)
async def test_automatic_fusion_counts_the_schedulable_nodes_and_records_them(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await client.patch(NODES, "node-2", {"spec": {"unschedulable": True}})  # cordoned: not counted
    bundle = sab(tmp_path, chains=6, length=5)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("auto", bundle))
        status = await wait_for_phase(client, "auto", *SUBMITTED)
    assert status["plannedNodes"] == 2
    assert 1 <= status["processingElements"] <= 2
    found = await children(client, "auto")
    assert len(found[PES]) == status["processingElements"]


@pytest.mark.sandbox(nodes=1)
async def test_a_plan_changing_edit_after_submission_is_applied_across_a_restart(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fusion edit re-plans the job: the PEs follow the new plan (added, not duplicated), even
    when the operator stops while the edit is applied."""
    bundle = sab(tmp_path, chains=2, length=2)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("edited", bundle, fusion={"manual": 2}))
        await wait_for_phase(client, "edited", "Running")
        await client.patch(JOBS, "edited", {"spec": {"fusion": {"manual": 3}}}, "default")
        await wait_for_phase(client, "edited", "Upgrading", "Running")
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):  # resumed after a restart

        async def applied() -> bool:
            status = await job_status(client, "edited")
            return status.get("appliedGeneration") == 2 and status.get("phase") == "Running"

        await eventually_async(applied, within=30)
        found = await children(client, "edited")
        assert len(found[PES]) == 3
        operators = [op for pe in found[PES] for op in pe["spec"]["operators"]]
        assert len(operators) == len(set(operators))  # each operator in one PE: none left behind
        names = {p["metadata"]["name"] for p in found[PES]}
        assert "edited-0" in names  # the PE whose operators stayed together kept its id
        assert names < {m["metadata"]["name"] for m in found[CONFIGMAPS]}
        assert names == {s["metadata"]["name"] for s in found[SERVICES]}
        assert {"UpgradeStarted", "UpgradeSucceeded"} <= {
            e["reason"] for e in await events_of(client, "edited")
        }


@pytest.mark.sandbox(nodes=1)
@pytest.mark.parametrize(
    ("bundle", "reason", "words"),
    [
        (
            {
                "name": "a.sab",
                "http": {
                    "url": "https://bundles.invalid/a.sab",
                    "certificationAuthority": {"configMapName": "ca"},
                },
            },
            "CertificateAuthorityNotFound",
            "ConfigMap 'ca'",
        ),
        (
            {
                "name": "a.sab",
                "github": {"url": "https://api.github.invalid/repos/o/r/contents/a.sab", "secret": "token"},
            },
            "SecretNotFound",
            "Secret 'token'",
        ),
    ],
    ids=["http-ca-configmap-missing", "github-secret-missing"],
)
async def test_bundle_credentials_are_read_from_the_job_namespace(
    sandbox: Sandbox,
    client: KubeClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bundle: dict[str, Any],
    reason: str,
    words: str,
) -> None:
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        manifest = job_manifest("creds", tmp_path / "unused.sab")
        manifest["spec"]["bundle"] = bundle
        await client.create(JOBS, manifest)
        status = await wait_for_phase(client, "creds", "Failed")
        fetched = condition(status, "BundleFetched")
        assert fetched["reason"] == reason
        assert words in fetched["message"]


@pytest.mark.sandbox(nodes=1)
async def test_a_github_bundle_is_fetched_with_the_token_of_the_secret(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = sab(tmp_path, chains=1, length=2).read_bytes()
    seen: list[str | None] = []

    async def contents(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        if request.headers.get("Authorization") != "token s3cret":
            return web.Response(status=401)
        return web.Response(body=data, content_type="application/octet-stream")

    app = web.Application()
    app.router.add_get("/repos/owner/repo/contents/app.sab", contents)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        secret = {"metadata": {"name": "gh", "namespace": "default"}, "data": {"token": "czNjcmV0"}}
        await client.create(SECRETS, secret)
        async with operator(sandbox, monkeypatch, tmp_path / "cache"):
            manifest = job_manifest("gh", tmp_path / "unused.sab")
            manifest["spec"]["bundle"] = {
                "name": "app.sab",
                "github": {
                    "url": f"http://127.0.0.1:{port}/repos/owner/repo/contents/app.sab",
                    "secret": "gh",
                },
            }
            await client.create(JOBS, manifest)
            status = await wait_for_phase(client, "gh", *SUBMITTED, "Failed")
        assert status["phase"] in SUBMITTED, status
        assert seen == ["token s3cret"]
    finally:
        await runner.cleanup()


async def test_ready_counts_do_not_cost_a_job_status_write_per_pe(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = sab(tmp_path, chains=8, length=5)
    async with operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT):
        await client.create(JOBS, job_manifest("counts", bundle, fusion={"manual": 40}))
        status = await wait_for_phase(client, "counts", "Running", within=60)
    assert (status["processingElements"], status["podsReady"]) == (40, 40)
    status_writes = [
        r for r in sandbox.requests if r.method == "PATCH" and r.path.endswith("/streamsjobs/counts/status")
    ]
    # Submission's own milestones plus ready counts coalesced in time: far fewer than one per PE.
    assert len(status_writes) < 15
    assert all(r.status != 409 for r in status_writes)
