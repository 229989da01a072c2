"""Service-account tokens from the sandbox (TokenRequest) and clients that present them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.kubeconfig import write_kubeconfig

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")


async def token_for(client: KubeClient, name: str, namespace: str = "default", **spec: Any) -> str:
    """A token of the ServiceAccount ``name`` (created if absent), by TokenRequest."""
    await client.create_if_absent(SERVICE_ACCOUNTS, {"metadata": {"name": name, "namespace": namespace}})
    answer = await client.request(
        "POST",
        SERVICE_ACCOUNTS,
        SERVICE_ACCOUNTS.path(namespace, name, "token"),
        verb="create",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
    )
    assert answer["kind"] == "TokenRequest"
    assert answer["status"]["expirationTimestamp"]
    return str(answer["status"]["token"])


async def allow_job_updates(client: KubeClient, account: str, job: str, namespace: str = "default") -> None:
    """Let the ServiceAccount ``account`` update the Job ``job`` (and nothing else)."""
    name = f"update-{job}"
    rule = {
        "apiGroups": ["streams.ibm.com"],
        "resources": ["streamsjobs"],
        "verbs": ["update"],
        "resourceNames": [job],
    }
    await client.create(ROLES, {"metadata": {"name": name}, "rules": [rule]}, namespace)
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }
    await client.create(ROLE_BINDINGS, binding, namespace)


async def client_with_token(sandbox: Sandbox, token: str, directory: Path) -> KubeClient:
    """A client of the sandbox that presents ``token``."""
    path = write_kubeconfig(directory / f"kubeconfig-{abs(hash(token))}", sandbox.url, token)
    return await KubeClient.connect(str(path))


CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)


async def admin_token(client: KubeClient, account: str = "test-admin") -> str:
    """A token of a ServiceAccount bound to ``cluster-admin``: a client that may write anything."""
    binding = {
        "metadata": {"name": account},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "default"}],
    }
    await client.create_if_absent(CLUSTER_ROLE_BINDINGS, binding)
    return await token_for(client, account)


def kubeconfig_with_token(kubeconfig: Path, token: str, directory: Path) -> Path:
    """A copy of `kubeconfig` (any API server's) whose user presents `token` instead."""
    config = yaml.safe_load(kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path = directory / f"kubeconfig-{abs(hash(token))}"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path
