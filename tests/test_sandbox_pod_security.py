"""Pod Security admission in the sandbox, and the project's pods under it: the operator's, the
coordinators' and PE pods are admitted where the namespace enforces "restricted"; a PE that needs
SYS_PTRACE or a hostPath only where it enforces "privileged", as the README documents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from repo_paths import REPO
from streams_k8s.api.consistent_region import ConsistentRegionOperator
from streams_k8s.consistent.manifests import coordinator_deployment
from streams_k8s.consistent.pool_manifests import coordinator_pool, pool_scheduler
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.pod_security import violations
from test_controller_pod_spec import make_pe, pod

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
BARE = {"containers": [{"name": "c", "image": "i"}]}


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
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def namespace(client: KubeClient, name: str, **labels: str) -> str:
    psa = {f"pod-security.kubernetes.io/{mode}": level for mode, level in labels.items()}
    await client.create(NAMESPACES, {"metadata": {"name": name, "labels": psa}})
    return name


@pytest.mark.sandbox(simulate=False)
async def test_enforce_restricted_admits_the_projects_pods_and_refuses_others(client: KubeClient) -> None:
    ns = await namespace(client, "strict", enforce="restricted")
    await client.create(PODS, as_pod("operator", operator_template(), ns))
    for index, template in enumerate(coordinator_templates()):
        await client.create(PODS, as_pod(f"coordinator-{index}", template, ns))
    await client.create(PODS, pe_pod(ns))
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
async def test_the_documented_exceptions_need_the_privileged_level(client: KubeClient) -> None:
    baseline = await namespace(client, "base", enforce="baseline")
    privileged = await namespace(client, "open", enforce="privileged")
    for needs in ({"allowPtrace": True}, {"dataPath": "/srv/data"}):
        with pytest.raises(ApiError) as refused:
            await client.create(PODS, pe_pod(baseline, **needs))
        assert refused.value.status == 403
        admitted = await client.create(PODS, pe_pod(privileged, **needs))
        await client.delete_if_present(PODS, admitted["metadata"]["name"], privileged)  # or GC did


@pytest.mark.sandbox(simulate=False)
async def test_warn_and_audit_modes_and_workload_templates(sandbox: Sandbox, client: KubeClient) -> None:
    ns = await namespace(client, "warned", warn="restricted", audit="baseline")
    created = await client.request(
        "POST",
        PODS,
        PODS.path(ns),
        verb="create",
        body={"metadata": {"name": "bare"}, "spec": {**BARE, "hostNetwork": True}},
    )
    assert created["metadata"]["name"] == "bare"  # warn and audit never refuse
    warning = next(r for r in sandbox.requests if r.path.endswith(f"/namespaces/{ns}/pods"))
    assert warning.status == 201
    assert sandbox.pod_security.audit[-1][1] == "baseline"
    # a Deployment is checked on its template, for warn and audit only (enforce is for pods)
    strict = await namespace(client, "strict-deployments", enforce="restricted", warn="restricted")
    bare = {"metadata": {"labels": {"a": "b"}}, "spec": BARE}
    deployment = {
        "metadata": {"name": "d", "namespace": strict},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": bare},
    }
    await client.create(DEPLOYMENTS, deployment)
    with pytest.raises(ApiError) as invalid:
        await namespace(client, "typo", enforce="strict")
    assert invalid.value.status == 422


async def test_kubectl_prints_the_warning(sandbox: Sandbox, client: KubeClient, tmp_path: Path) -> None:
    import asyncio
    import shutil

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    ns = await namespace(client, "warned", warn="restricted")
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns}, "spec": BARE}
        )
    )
    process = await asyncio.create_subprocess_exec(
        kubectl,
        "--kubeconfig",
        str(sandbox.kubeconfig_path),
        "create",
        "-f",
        str(manifest),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await process.communicate()
    assert process.returncode == 0
    assert 'would violate PodSecurity "restricted:latest"' in err.decode()
