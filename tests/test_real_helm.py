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
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from conftest import POD_SECURITY
from helm_chart import CHART, helm_binary
from real_cluster import NAMESPACE, OPERATOR_USER, RealCluster, deployed, eventually
from repo_paths import REPO
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.control_plane.audit import refused
from streams_k8s.control_plane.cluster import ControlPlane
from streams_k8s.controller.kinds import JOBS, PES

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
