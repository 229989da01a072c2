"""The operator as deploy/ installs it: under its ServiceAccount's token, in a namespace that
enforces Pod Security "restricted" (deploy/namespace.yaml's labels). Every request it makes is
checked against the RBAC deploy/rbac.yaml gives it (the sandbox's RBAC evaluator), and the pods
it has created, the job's PEs and its coordinator's, are admitted."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from operator_support import SUBMITTED, job_manifest, operator, wait_for_phase
from repo_paths import REPO
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.kubeconfig import write_kubeconfig
from streams_k8s.sandbox.rbac import Attributes
from tokens import token_for

OPERATOR = "streams-k8s-operator"
USER = f"system:serviceaccount:default:{OPERATOR}"
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod")
PLURALS = {"Role": "roles", "RoleBinding": "rolebindings", "ClusterRole": "clusterroles"}


def rbac_resource(kind: str) -> Resource:
    plural = {**PLURALS, "ClusterRoleBinding": "clusterrolebindings"}[kind]
    return Resource("rbac.authorization.k8s.io", "v1", plural, kind, namespaced=kind.startswith("Role"))


async def install_operator_rbac(client: KubeClient) -> None:
    """deploy/rbac.yaml as kustomize would apply it, in namespace default instead of streams."""
    for doc in yaml.safe_load_all((REPO / "deploy" / "rbac.yaml").read_text()):
        for subject in doc.get("subjects") or ():
            subject["namespace"] = "default"
        namespaced = doc["kind"].startswith("Role")
        await client.create(rbac_resource(doc["kind"]), doc, "default" if namespaced else None)


@pytest.mark.sandbox(nodes=3)
async def test_the_operator_as_deployed_is_allowed_every_request_and_its_pods_are_admitted(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        labels = yaml.safe_load((REPO / "deploy" / "namespace.yaml").read_text())["metadata"]["labels"]
        await client.patch(NAMESPACES, "default", {"metadata": {"labels": labels}})
        await install_operator_rbac(client)
        token = await token_for(client, OPERATOR)
        kubeconfig = write_kubeconfig(tmp_path / "operator-kubeconfig", sandbox.url, token)
        bundle = write_sab(
            tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, pools=2, consistent_chains=1)
        )
        async with operator(sandbox, monkeypatch, tmp_path / "cache", kubeconfig=str(kubeconfig)):
            await client.create(JOBS, job_manifest("ranked", bundle))
            await wait_for_phase(client, "ranked", *SUBMITTED)
            await sandbox.settle()
            pods, _ = await client.list_all(PODS, "default")
            kinds = sorted(p["metadata"]["labels"].get("svc") for p in pods)
            status = (await client.get(JOBS, "ranked", "default"))["status"]
            assert kinds.count("pe") == status["processingElements"]
            assert "consistent-region-operator" in kinds  # the coordinator's Deployment made its pod
            await client.delete(JOBS, "ranked", "default")
            await sandbox.settle()
    made = [r for r in sandbox.requests if r.user == USER and r.info is not None]
    assert made, "the operator made no request as its ServiceAccount"
    assert refused_requests(sandbox, made, token) == []
    assert not [
        r.path for r in made if r.info is not None and r.info.resource == "nodes" and r.method == "PUT"
    ]


def refused_requests(sandbox: Sandbox, records: Iterable[Any], token: str) -> list[tuple[str, str]]:
    """The requests among ``records`` that the sandbox's RBAC would refuse to ``token``'s user
    (method, path): what deploy/'s Role lacks."""
    identity = sandbox.server.authn.authenticate(f"Bearer {token}")
    refused = []
    for record in records:
        info = record.info
        assert info is not None
        attributes = Attributes(
            verb=info.verb,
            group=info.group,
            resource=info.resource,
            subresource=info.subresource or "",
            name=info.name or "",
            namespace=info.namespace or "",
        )
        if not sandbox.server.authz.authorize(identity, attributes).allowed:
            refused.append((record.method, record.path))
    return refused
