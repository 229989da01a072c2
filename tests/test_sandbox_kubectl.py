"""The contract suite's core through a real `kubectl` against the sandbox's kubeconfig:
get, list, create, apply, patch, delete, scale and wait, for built-in kinds and a CRD."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_support import KUBECTL, MISSING, Kubectl
from sandbox_crds import GROUP, widget, widget_crd
from streams_k8s.sandbox import Sandbox

pytestmark = pytest.mark.skipif(KUBECTL is None, reason=MISSING)


@pytest.fixture
def kubectl(sandbox: Sandbox, tmp_path: Path) -> Kubectl:
    return Kubectl(sandbox, tmp_path)


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
    nodes = await kubectl.json("get", "nodes")
    assert len(nodes["items"]) == 3  # type: ignore[arg-type]
    _, out, _ = await kubectl.run("api-resources")
    assert "statefulsets" in out
    assert "leases" in out


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


async def test_apply_scale_and_wait_for_a_statefulset(kubectl: Kubectl) -> None:
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "db:1"}]},
            },
        },
    }
    _, out, _ = await kubectl.run("apply", "-f", kubectl.manifest("sts.yaml", sts))
    assert "created" in out
    sts["spec"]["template"]["spec"]["containers"][0]["image"] = "db:2"  # type: ignore[index]
    _, out, _ = await kubectl.run("apply", "-f", kubectl.manifest("sts.yaml", sts))
    assert "configured" in out
    await kubectl.run("scale", "statefulset", "db", "--replicas=2")
    await kubectl.run("wait", "--for=condition=Ready", "pod/db-1", "--timeout=20s")
    got = await kubectl.json("get", "statefulset", "db")
    assert got["metadata"]["generation"] == 3  # type: ignore[index]
    assert got["spec"]["template"]["spec"]["containers"][0]["image"] == "db:2"  # type: ignore[index]
    _, out, _ = await kubectl.run("get", "pods", "-l", "app=db", "-o", "wide")
    assert "Running" in out
    assert "node-" in out  # the NODE column of -o wide
    await kubectl.run("delete", "statefulset", "db")
    rc, _, err = await kubectl.run("wait", "--for=delete", "pod/db-0", "--timeout=20s", ok=False)
    assert rc == 0 or "no matching resources found" in err  # kubectl 1.20 says so for a pod already gone


async def test_custom_resources_through_kubectl(kubectl: Kubectl, sandbox: Sandbox) -> None:
    await kubectl.run("apply", "-f", kubectl.manifest("crd.yaml", widget_crd()))
    await kubectl.run(
        "wait", "--for=condition=Established", "crd/widgets.test.streams.ibm.com", "--timeout=20s"
    )
    await kubectl.run("apply", "-f", kubectl.manifest("w.yaml", widget("gear", replicas=1)))
    _, out, _ = await kubectl.run("get", "wd")
    assert "COLOR" in out
    assert "blue" in out
    await kubectl.run("scale", "widget/gear", "--replicas=4")
    _, out, _ = await kubectl.run("get", "widget", "gear", "-o", "jsonpath={.spec.replicas}")
    assert out == "4"
    # The controller's side: status through the API (kubectl patch --subresource needs kubectl >= 1.24).
    rt = sandbox.registry.types[(GROUP, "widgets")]
    gear = sandbox.registry.get(rt, "default", "gear")
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "Running",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    status = {"phase": "Running", "conditions": [ready]}
    sandbox.registry.update(rt, "v1", "default", "gear", {**gear, "status": status}, "status")
    await kubectl.run("wait", "--for=condition=Ready", "widget/gear", "--timeout=20s")
    _, out, _ = await kubectl.run("get", "widget", "gear")
    assert "Running" in out  # the Phase printer column
    rc, _, err = await kubectl.run(
        "apply", "-f", kubectl.manifest("bad.yaml", widget("bad", size=42)), ok=False
    )
    assert rc != 0
    assert "spec.size" in err
    await kubectl.run("delete", "widget", "gear")
    _, out, _ = await kubectl.run("get", "widgets", "-o", "name")
    assert out.strip() == ""


@pytest.mark.sandbox(tls=True, token="kubectl-token")
async def test_kubectl_over_tls_with_a_bearer_token(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl.run("get", "namespace", "default", "-o", "name")
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
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}],
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
