"""What a namespace needs before consistent-region coordinators can run in it, as deploy/ sets it
up (`deploy/coordinator-rbac.yaml`): the coordinators' ServiceAccount, Role and bindings. The
sandbox commands apply it to their namespace, so that the coordinator pods the operator renders
get their service-account identity (the simulated kubelet mints their tokens for it)."""

from __future__ import annotations

from streams_k8s.consistent.manifests import coordinator_auth_delegation, coordinator_rbac
from streams_k8s.k8s.client import KubeClient, Resource

_KINDS = {
    "ServiceAccount": Resource("", "v1", "serviceaccounts", "ServiceAccount"),
    "Role": Resource("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    "RoleBinding": Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    "ClusterRoleBinding": Resource(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
    ),
}


async def set_up_coordinators(client: KubeClient, namespace: str) -> None:
    """Create what is missing of the namespace's coordinator accounts (what exists is kept)."""
    for obj in [*coordinator_rbac(namespace), coordinator_auth_delegation(namespace)]:
        await client.create_if_absent(_KINDS[obj["kind"]], obj, namespace)
