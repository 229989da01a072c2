"""The contract suite's core through a real `kubectl`, against the sandbox and against the real
control plane (`api_server_fixtures`): get, list, create, apply, patch, delete, scale and wait, for
built-in kinds and a CRD. What needs the simulated cluster (nodes, running pods) or the sandbox's
own options (TLS, a token) runs on the sandbox alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api_server import ApiServer
from kubectl_support import KUBECTL, MISSING, Kubectl
from sandbox_crds import GROUP, widget, widget_crd
from streams_k8s.sandbox import Sandbox

pytest_plugins = ["api_server_fixtures"]
pytestmark = pytest.mark.skipif(KUBECTL is None, reason=MISSING)


@pytest.fixture
def kubectl(api_server: ApiServer, tmp_path: Path) -> Kubectl:
    return Kubectl(api_server.kubeconfig, tmp_path)


@pytest.fixture
def sandbox_kubectl(sandbox: Sandbox, tmp_path: Path) -> Kubectl:
    return Kubectl(sandbox.kubeconfig_path, tmp_path)


def configmap(name: str, **data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "data": data,
    }


async def test_get_and_list_builtin_kinds(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl.run("get", "namespaces")
    assert "default" in out
    assert "Active" in out
    _, out, _ = await kubectl.run("api-resources")
    assert "statefulsets" in out
    assert "leases" in out


async def test_the_simulated_nodes_are_listed(sandbox_kubectl: Kubectl) -> None:
    """Sandbox only: its simulated cluster's nodes (the real control plane has none of its own)."""
    nodes = await sandbox_kubectl.json("get", "nodes")
    assert len(nodes["items"]) == 3  # type: ignore[arg-type]


async def test_create_get_patch_delete_configmap(kubectl: Kubectl) -> None:
    await kubectl.run("create", "-f", kubectl.manifest("cm.yaml", configmap("settings", a="1")))
    _, out, _ = await kubectl.run("get", "configmap", "settings", "-o", "jsonpath={.data.a}")
    assert out == "1"
    rc, _, err = await kubectl.run(
        "create", "-f", kubectl.manifest("cm.yaml", configmap("settings")), ok=False
    )
    assert rc != 0
    assert "AlreadyExists" in err or "already exists" in err
    await kubectl.run("patch", "configmap", "settings", "-p", '{"data":{"b":"2"}}')
    await kubectl.run("patch", "configmap", "settings", "--type", "merge", "-p", '{"data":{"a":null}}')
    await kubectl.run(
        "patch",
        "configmap",
        "settings",
        "--type",
        "json",
        "-p",
        '[{"op":"add","path":"/data/c","value":"3"}]',
    )
    cm = await kubectl.json("get", "configmap", "settings")
    assert cm["data"] == {"b": "2", "c": "3"}
    _, out, _ = await kubectl.run("get", "configmaps", "-l", "app in (demo)", "-o", "name")
    assert out.strip() == "configmap/settings"
    await kubectl.run("delete", "configmap", "settings")
    rc, _, err = await kubectl.run("get", "configmap", "settings", ok=False)
    assert rc != 0
    assert "NotFound" in err or "not found" in err


def statefulset(image: str) -> dict[str, object]:
    template = {
        "metadata": {"labels": {"app": "db"}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": template,
        },
    }


async def test_apply_and_scale_a_statefulset(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl.run("apply", "-f", kubectl.manifest("sts.yaml", statefulset("db:1")))
    assert "created" in out
    _, out, _ = await kubectl.run("apply", "-f", kubectl.manifest("sts.yaml", statefulset("db:2")))
    assert "configured" in out
    await kubectl.run("scale", "statefulset", "db", "--replicas=2")
    got = await kubectl.json("get", "statefulset", "db")
    assert got["metadata"]["generation"] == 3  # type: ignore[index]
    assert got["spec"]["template"]["spec"]["containers"][0]["image"] == "db:2"  # type: ignore[index]
    assert got["spec"]["replicas"] == 2  # type: ignore[index]


async def test_wait_for_the_pods_of_a_statefulset(sandbox_kubectl: Kubectl) -> None:
    """Sandbox only: its simulated kubelet runs the pods (the real control plane has no nodes)."""
    kubectl = sandbox_kubectl
    await kubectl.run("apply", "-f", kubectl.manifest("sts.yaml", statefulset("db:2")))
    await kubectl.run("scale", "statefulset", "db", "--replicas=2")
    await kubectl.run("wait", "--for=condition=Ready", "pod/db-1", "--timeout=20s")
    _, out, _ = await kubectl.run("get", "pods", "-l", "app=db", "-o", "wide")
    assert "Running" in out
    assert "node-" in out  # the NODE column of -o wide
    await kubectl.run("delete", "statefulset", "db")
    rc, _, err = await kubectl.run("wait", "--for=delete", "pod/db-0", "--timeout=20s", ok=False)
    assert rc == 0 or "no matching resources found" in err  # kubectl 1.20 says so for a pod already gone


async def test_custom_resources_through_kubectl(kubectl: Kubectl, api_server: ApiServer) -> None:
    group = f"{api_server.namespace}.{GROUP}"  # the CRD is the test's own: the real server outlives it
    widgets = f"widgets.{group}"
    api_server.delete_after(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{widgets}")
    await kubectl.run("apply", "-f", kubectl.manifest("crd.yaml", widget_crd(group=group, short_names=())))
    await kubectl.run("wait", "--for=condition=Established", f"crd/{widgets}", "--timeout=20s")
    await kubectl.run("apply", "-f", kubectl.manifest("w.yaml", widget("gear", group=group, replicas=1)))
    _, out, _ = await kubectl.run("get", widgets)
    assert "COLOR" in out
    assert "blue" in out
    await kubectl.run("scale", f"{widgets}/gear", "--replicas=4")
    _, out, _ = await kubectl.run("get", widgets, "gear", "-o", "jsonpath={.spec.replicas}")
    assert out == "4"
    # The controller's side: the status subresource.
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "Running",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    status = {"status": {"phase": "Running", "conditions": [ready]}}
    await kubectl.run(
        "patch", widgets, "gear", "--subresource=status", "--type=merge", "-p", json.dumps(status)
    )
    await kubectl.run("wait", "--for=condition=Ready", f"{widgets}/gear", "--timeout=20s")
    _, out, _ = await kubectl.run("get", widgets, "gear")
    assert "Running" in out  # the Phase printer column
    bad = kubectl.manifest("bad.yaml", widget("bad", group=group, size=42))
    rc, _, err = await kubectl.run("apply", "-f", bad, ok=False)
    assert rc != 0
    assert "spec.size" in err
    await kubectl.run("delete", widgets, "gear")
    _, out, _ = await kubectl.run("get", widgets, "-o", "name")
    assert out.strip() == ""


@pytest.mark.sandbox(tls=True, token="kubectl-token")
async def test_kubectl_over_tls_with_a_bearer_token(sandbox_kubectl: Kubectl) -> None:
    """Sandbox only: its TLS and token options."""
    _, out, _ = await sandbox_kubectl.run("get", "namespace", "default", "-o", "name")
    assert out.strip() == "namespace/default"


async def test_server_side_apply_through_kubectl(kubectl: Kubectl) -> None:
    path = kubectl.manifest("ssa.yaml", configmap("ssa", a="1"))
    _, out, _ = await kubectl.run("apply", "--server-side", "-f", path)
    assert "serverside-applied" in out
    rc, _, err = await kubectl.run(
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "-f",
        kubectl.manifest("ssa3.yaml", configmap("ssa", a="3")),
        ok=False,
    )
    assert rc != 0
    assert "conflict" in err.lower()
    await kubectl.run(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager",
        "other",
        "-f",
        kubectl.manifest("ssa4.yaml", configmap("ssa", a="4")),
    )
    _, out, _ = await kubectl.run("get", "configmap", "ssa", "-o", "jsonpath={.data.a}")
    assert out == "4"


async def test_policies_roles_and_endpoint_slices_are_served(kubectl: Kubectl) -> None:
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny-all"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "default"}],
    }
    await kubectl.run("apply", "-f", kubectl.manifest("policies.yaml", policy, role, binding))
    _, out, _ = await kubectl.run("get", "netpol,roles,rolebindings,endpointslices", "-o", "name")
    assert set(out.split()) >= {
        "networkpolicy.networking.k8s.io/deny-all",
        "role.rbac.authorization.k8s.io/reader",
        "rolebinding.rbac.authorization.k8s.io/reader",
    }
    _, out, _ = await kubectl.run("get", "clusterroles,clusterrolebindings", "-o", "name")
    # the roles a new cluster bootstraps (rbac.py), RBAC names with ':'
    assert {
        "clusterrole.rbac.authorization.k8s.io/cluster-admin",
        "clusterrole.rbac.authorization.k8s.io/system:auth-delegator",
        "clusterrolebinding.rbac.authorization.k8s.io/system:basic-user",
    } <= set(out.split())
