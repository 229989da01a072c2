"""`helm install` of charts/streams-k8s on a real control plane, as deploy/README.md's "Helm" and
"More than one namespace" say: the release namespace labelled first (deploy/namespace.yaml), the
chart installed with `watchNamespaces` listing two namespaces, the operator's pod run by the
simulated kubelet under its ServiceAccount (tests/real_cluster.py). The Jobs of both namespaces
reach Ready with only the Roles the chart renders there (the API server refuses the operator
nothing), the PEs reaching the operator through their namespace's `streams-api` ExternalName; a
Job in a third namespace is left untouched.

The control plane is one of its own: the chart's cluster-scoped objects bear the names of the
kustomize base's, which the session's control plane holds (`installed`).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
import pytest_asyncio

from conftest import POD_SECURITY
from helm_chart import CHART, helm_binary
from kubectl_streams import UPLOADER_ROLE, USER_ROLE, bind, kubectl_streams, plugin_directory, user
from real_cluster import NAMESPACE, OPERATOR_USER, RealCluster, deployed, eventually
from repo_paths import REPO
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.control_plane.audit import refused
from streams_k8s.control_plane.cluster import ControlPlane
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS, PES

pytestmark = pytest.mark.asyncio(loop_scope="module")
WATCHED = ("team-a", "team-b")
UNWATCHED = "team-c"


async def run(plane: ControlPlane, *argv: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        "--kubeconfig",
        str(plane.admin_kubeconfig),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, f"{' '.join(argv)} failed: {err.decode()}"
    return out.decode()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RealCluster]:
    plane = ControlPlane(control_plane.binaries).start()
    try:
        await run(plane, "kubectl", "apply", "-f", "deploy/namespace.yaml")
        for namespace in (*WATCHED, UNWATCHED):
            await run(plane, "kubectl", "create", "namespace", namespace)
            labels = [f"{k}={v}" for k, v in POD_SECURITY.items()]
            await run(plane, "kubectl", "label", "namespace", namespace, *labels)
        watch = "watchNamespaces={" + ",".join(WATCHED) + "}"
        await run(
            plane, str(helm_binary()), "install", "streams-k8s", str(CHART), "-n", NAMESPACE, "--set", watch
        )
        async for running in deployed(plane, tmp_path_factory.mktemp("real-helm")):
            yield running
    finally:
        plane.stop()


def job(cluster: RealCluster, namespace: str) -> dict[str, object]:
    sab = cluster.bundles / "app.sab"
    if not sab.exists():
        write_sab(sab, SyntheticSpec(name="app::App", chains=2, length=2))
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": "app", "namespace": namespace},
        "spec": {"bundle": {"name": sab.name, "file": {"path": str(sab)}}},
    }


async def test_helm_install_runs_the_jobs_of_the_watched_namespaces(cluster: RealCluster) -> None:
    status = await run(cluster.plane, str(helm_binary()), "status", "streams-k8s", "-n", NAMESPACE)
    assert "STATUS: deployed" in status
    for namespace in (*WATCHED, UNWATCHED):
        await cluster.client.create(JOBS, job(cluster, namespace))
    for namespace in WATCHED:
        await cluster.kubectl("wait", "--for=condition=Ready", "--timeout=120s", "stj/app", "-n", namespace)
        pes, _ = await cluster.client.list_all(PES, namespace)
        assert len(pes) == 4

        # each PE's runtime reported to streams-api.<its namespace>: the ExternalName, the operator
        async def connected(namespace: str = namespace) -> bool:
            pes, _ = await cluster.client.list_all(PES, namespace)
            return all((pe.get("status") or {}).get("connectivity") == "Full" for pe in pes)

        await eventually(connected, 60, f"every PE of {namespace} reporting Full connectivity")
    untouched = await cluster.client.get(JOBS, "app", UNWATCHED)
    assert "status" not in untouched
    assert (await cluster.client.list_all(PES, UNWATCHED))[0] == []


async def test_a_user_walks_the_readme_kubectl_streams_section(cluster: RealCluster, tmp_path: Path) -> None:
    """README "streamtool's verbs": after the Helm install, a user of a watched namespace (a token,
    the Role a user who runs jobs has there, and `services/proxy` on `streams-api` in the
    operator's namespace) submits a local bundle with a submission-time value, lists it, resizes
    its region and cancels it collecting its logs.

    The upload takes the default route, kube-apiserver's service proxy to the operator's
    `streams-api` (`--operator-namespace`: another watched namespace's `streams-api` is an
    ExternalName, which kube-apiserver does not proxy); kube-apiserver reaches the operator pod
    through the simulation's cluster egress proxy (`sandbox.cluster.egress_proxy`).
    """
    namespace = WATCHED[0]
    await cluster.kubectl("apply", "-f", "-", "-n", namespace, stdin=USER_ROLE)
    await cluster.kubectl("apply", "-f", "-", "-n", NAMESPACE, stdin=UPLOADER_ROLE)
    alice = await user(cluster, "alice", "streams-user", namespace, tmp_path)
    await bind(cluster, "alice", namespace, "streams-uploader", NAMESPACE)
    plugins = plugin_directory(tmp_path / "plugins")
    sab = write_sab(tmp_path / "trades.sab", SyntheticSpec(chains=1, length=2, regions=1, width_values=True))

    async def streams(*args: str) -> str:
        code, out, err = await kubectl_streams(alice, plugins, *args, "-n", namespace)
        assert code == 0, f"kubectl streams {' '.join(args)}: {err}"
        return out

    await cluster.operator_proxied()

    out = await streams("submitjob", str(sab), "-P", "width0=2", "--operator-namespace", NAMESPACE)
    assert out == "streamsjob.streams.ibm.com/trades created\n"
    job = await cluster.client.get(JOBS, "trades", namespace)
    assert job["spec"]["bundle"]["upload"] == {"sha256": hashlib.sha256(sab.read_bytes()).hexdigest()}
    await cluster.kubectl("wait", "--for=condition=Ready", "--timeout=120s", "stj/trades", "-n", namespace)

    async def healthy() -> bool:
        (row,) = [
            j for j in orjson.loads(await streams("lsjobs", "-o", "json"))["jobs"] if j["name"] == "trades"
        ]
        return bool(row["health"] == "healthy")

    await eventually(healthy, 60, "lsjobs saying the job is healthy")
    (line,) = [row for row in (await streams("lsjobs")).splitlines() if row.split()[:1] == ["trades"]]
    assert line.split()[2:4] == ["Running", "healthy"], line

    (region,) = (
        await cluster.client.list_all(PARALLEL_REGIONS, namespace, label_selector=f"{JOB_LABEL}=trades")
    )[0]
    assert region["spec"]["width"] == 2  # -P width0=2
    await streams("updateoperators", "trades", "--parallelRegionWidth", f"{region['spec']['alias']}=3")

    async def resized() -> bool:
        found = await cluster.client.get(PARALLEL_REGIONS, region["metadata"]["name"], namespace)
        return bool((found.get("status") or {}).get("width") == 3)

    await eventually(resized, 90, "the region running at width 3")

    # The simulated nodes serve no kubelet API, so no log can be read: the job is left running
    # until --force says to cancel it without them.
    logs = tmp_path / "logs"
    code, out, err = await kubectl_streams(
        alice, plugins, "canceljob", "trades", "--collectlogs", str(logs), "-n", namespace
    )
    assert (code, out) == (1, ""), err
    assert "job trades left running; --force cancels it" in err, err
    out = await streams("canceljob", "trades", "--collectlogs", str(logs), "--force")
    assert out == "streamsjob.streams.ibm.com/trades deleted\n"


async def test_the_api_server_refused_the_operator_nothing(cluster: RealCluster) -> None:
    found = refused(cluster.plane.audit_log, {OPERATOR_USER})
    assert not found, "the API server refused:\n" + "\n".join(map(str, found[:20]))


async def test_helm_uninstall_removes_the_operator_and_keeps_the_crds(cluster: RealCluster) -> None:
    await run(cluster.plane, str(helm_binary()), "uninstall", "streams-k8s", "-n", NAMESPACE, "--wait")
    _, out, _ = await cluster.kubectl(
        "get", "deploy,role,rolebinding", "-A", "-l", "app.kubernetes.io/instance=streams-k8s", "-o", "name"
    )
    assert not out.strip()
    _, crds, _ = await cluster.kubectl("get", "crd", "-o", "name")
    assert "customresourcedefinition.apiextensions.k8s.io/streamsjobs.streams.ibm.com" in crds.splitlines()
