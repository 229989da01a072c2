"""Pod Security admission, on the sandbox and on the real control plane (`api_server_fixtures`), and
the project's pods under it: the operator's, the coordinators' and PE pods are admitted where the
namespace enforces "restricted"; a PE that needs SYS_PTRACE or a hostPath only where it enforces
"privileged", as the README documents. The sandbox's rules themselves are checked offline first."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from api_server import ApiServer
from kubectl_support import KUBECTL, MISSING, Kubectl
from repo_paths import REPO
from streams_k8s.api.consistent_region import ConsistentRegionOperator
from streams_k8s.consistent.manifests import coordinator_deployment
from streams_k8s.consistent.pool_manifests import coordinator_pool, pool_scheduler
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.sandbox.pod_security import violations
from test_controller_pod_spec import make_pe, pod

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
BARE = {"containers": [{"name": "c", "image": "i"}]}
pytest_plugins = ["api_server_fixtures"]


def as_pod(name: str, template: dict[str, Any], namespace: str) -> dict[str, Any]:
    metadata = {**template.get("metadata", {}), "name": name, "namespace": namespace}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}


def pe_pod(namespace: str, **pe: Any) -> dict[str, Any]:
    manifest = pod(pe=make_pe(**pe))
    manifest["metadata"]["namespace"] = namespace
    return manifest


def operator_template() -> dict[str, Any]:
    deployment = yaml.safe_load((REPO / "deploy" / "deployment.yaml").read_text())
    return dict(deployment["spec"]["template"])


def coordinator_templates() -> list[dict[str, Any]]:
    cro = ConsistentRegionOperator.from_wire(
        {
            "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
            "spec": {"jobName": "j", "jobUid": "u", "numRegions": 1},
        }
    )
    deployments = [
        coordinator_deployment(cro, namespace="ns", generation=1, image="i:1"),
        coordinator_pool(namespace="ns", image="i:1"),
        *(o for o in pool_scheduler(namespace="ns", image="i:1", capacity=4) if o["kind"] == "Deployment"),
    ]
    return [d["spec"]["template"] for d in deployments]


def test_the_standards_levels() -> None:
    assert violations("privileged", {}, BARE) == []
    assert violations("baseline", {}, BARE) == []
    found = " ".join(violations("restricted", {}, BARE))
    for check in ("allowPrivilegeEscalation", "runAsNonRoot", "seccompProfile", "unrestricted capabilities"):
        assert check in found
    ptrace = pe_pod("ns", allowPtrace=True)
    restricted = violations("restricted", {}, ptrace["spec"])
    assert [v.split(" (")[0] for v in restricted] == ["non-default capabilities", "unrestricted capabilities"]
    assert "SYS_PTRACE" in violations("baseline", {}, ptrace["spec"])[0]
    host = pe_pod("ns", dataPath="/srv/data")
    assert [v.split(" (")[0] for v in violations("baseline", {}, host["spec"])] == ["hostPath volumes"]
    root = {**BARE, "securityContext": {"runAsUser": 0, "runAsNonRoot": True}}
    assert any(v.startswith("runAsUser=0") for v in violations("restricted", {}, root))
    assert violations("baseline", {}, {**BARE, "hostNetwork": True}) == ["host namespaces (hostNetwork=true)"]


def test_the_projects_pods_meet_restricted() -> None:
    for template in [operator_template(), *coordinator_templates()]:
        assert violations("restricted", template["metadata"], template["spec"]) == []
    assert violations("restricted", {}, pe_pod("ns")["spec"]) == []
    ckpt = pe_pod("ns", checkpointRepository={"fileSystem": {"volumeClaim": {"name": "c"}}})
    assert violations("restricted", {}, ckpt["spec"]) == []


@pytest.fixture
async def client(api_server: ApiServer) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(api_server.kubeconfig)) as c:
        yield c


async def namespace(api: ApiServer, client: KubeClient, name: str, **labels: str) -> str:
    """A namespace of the test's own with these Pod Security labels, ready for pods."""
    name = api.unique(name)
    psa = {f"pod-security.kubernetes.io/{mode}": level for mode, level in labels.items()}
    await client.create(NAMESPACES, {"metadata": {"name": name, "labels": psa}})
    api.delete_after(f"/api/v1/namespaces/{name}")
    if api.real:  # pods are refused until kube-controller-manager made the default ServiceAccount
        await api.until("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default", lambda s, _: s == 200)
    return name


async def create_pod(client: KubeClient, manifest: dict[str, Any]) -> dict[str, Any]:
    """Create a pod and, first, the ServiceAccount it runs as (a cluster refuses a pod without it)."""
    account = manifest["spec"].get("serviceAccountName")
    if account:
        sa = {"metadata": {"name": account, "namespace": manifest["metadata"]["namespace"]}}
        await client.create_if_absent(SERVICE_ACCOUNTS, sa)
    return await client.create(PODS, manifest)


@pytest.mark.sandbox(simulate=False)
async def test_enforce_restricted_admits_the_projects_pods_and_refuses_others(
    api_server: ApiServer, client: KubeClient
) -> None:
    ns = await namespace(api_server, client, "strict", enforce="restricted")
    await create_pod(client, as_pod("operator", operator_template(), ns))
    for index, template in enumerate(coordinator_templates()):
        await create_pod(client, as_pod(f"coordinator-{index}", template, ns))
    await create_pod(client, pe_pod(ns))
    with pytest.raises(ApiError) as refused:
        await client.create(PODS, {"metadata": {"name": "bare", "namespace": ns}, "spec": BARE})
    assert refused.value.status == 403
    assert 'violates PodSecurity "restricted:latest"' in refused.value.message
    assert "allowPrivilegeEscalation != false" in refused.value.message
    with pytest.raises(ApiError) as ptrace:
        await client.create(PODS, pe_pod(ns, allowPtrace=True))
    assert ptrace.value.status == 403
    assert "SYS_PTRACE" in ptrace.value.message


@pytest.mark.sandbox(simulate=False)
async def test_the_documented_exceptions_need_the_privileged_level(
    api_server: ApiServer, client: KubeClient
) -> None:
    baseline = await namespace(api_server, client, "base", enforce="baseline")
    privileged = await namespace(api_server, client, "open", enforce="privileged")
    for needs in ({"allowPtrace": True}, {"dataPath": "/srv/data"}):
        with pytest.raises(ApiError) as refused:
            await create_pod(client, pe_pod(baseline, **needs))
        assert refused.value.status == 403
        admitted = await create_pod(client, pe_pod(privileged, **needs))
        await client.delete_if_present(PODS, admitted["metadata"]["name"], privileged)  # or GC did


@pytest.mark.sandbox(simulate=False)
async def test_warn_and_audit_modes_and_workload_templates(api_server: ApiServer, client: KubeClient) -> None:
    ns = await namespace(api_server, client, "warned", warn="restricted", audit="baseline")
    bare = {"metadata": {"name": "bare"}, "spec": {**BARE, "hostNetwork": True}}
    async with (
        api_server.session() as http,
        http.post(f"{api_server.url}/api/v1/namespaces/{ns}/pods", json=bare) as created,
    ):
        assert created.status == 201  # warn and audit never refuse
        (warning,) = created.headers.getall("Warning")
    assert warning.startswith('299 - "would violate PodSecurity \\"restricted:latest\\": host namespaces')
    if api_server.sandbox is not None:  # where it records what audit found (a cluster: its audit log)
        assert api_server.sandbox.pod_security.audit[-1][1] == "baseline"
    # a Deployment is checked on its template, for warn and audit only (enforce is for pods)
    strict = await namespace(
        api_server, client, "strict-deployments", enforce="restricted", warn="restricted"
    )
    template = {"metadata": {"labels": {"a": "b"}}, "spec": BARE}
    deployment = {
        "metadata": {"name": "d", "namespace": strict},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template},
    }
    await client.create(DEPLOYMENTS, deployment)
    with pytest.raises(ApiError) as invalid:
        await namespace(api_server, client, "typo", enforce="strict")
    assert invalid.value.status == 422


async def test_kubectl_prints_the_warning(api_server: ApiServer, client: KubeClient, tmp_path: Path) -> None:
    if KUBECTL is None:
        pytest.skip(MISSING)
    ns = await namespace(api_server, client, "warned", warn="restricted")
    kubectl = Kubectl(api_server.kubeconfig, tmp_path)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns}, "spec": BARE}
    _, _, err = await kubectl.run("create", "-f", kubectl.manifest("pod.yaml", pod))
    assert 'would violate PodSecurity "restricted:latest"' in err
