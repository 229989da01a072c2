"""The sandbox answers TokenRequest, TokenReview and the access reviews from its RBAC objects,
over HTTP as kube-apiserver does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from k8s_support import eventually_async
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.reviews import Access, AccessReviewer, Review, TokenReviewer
from streams_k8s.sandbox import Sandbox
from tokens import client_with_token, token_for

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)
SSAR = Resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False)
LSAR = Resource("authorization.k8s.io", "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview")
SAR = Resource("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False)
TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod")


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def rbac(kind: str, name: str, **body: Any) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name}, **body}


async def test_a_service_account_token_is_reviewed_as_its_account(client: KubeClient) -> None:
    token = await token_for(client, "cli")
    review = await TokenReviewer(client)(token)
    assert review.authenticated
    assert review.user == "system:serviceaccount:default:cli"
    assert set(review.groups) == {
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    }
    assert not (await TokenReviewer(client)("forged")).authenticated
    # another audience than the token's is refused
    other = await TokenReviewer(client, audiences=["https://elsewhere"])(token)
    assert not other.authenticated
    assert "audiences" in other.error
    # a deleted account's tokens stop working
    await client.delete(SERVICE_ACCOUNTS, "cli", "default")
    gone = await TokenReviewer(client)(token)
    assert (gone.authenticated, "deleted" in gone.error) == (False, True)


async def test_a_pod_bound_token_goes_with_its_pod(client: KubeClient) -> None:
    pod = await client.create(
        PODS,
        {
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        },
    )
    bound = {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": pod["metadata"]["uid"]}
    token = await token_for(client, "runner", boundObjectRef=bound)
    review = await TokenReviewer(client)(token)
    assert review.extra["authentication.kubernetes.io/pod-name"] == ("p",)
    await client.delete(PODS, "p", "default", grace_period_seconds=0)

    async def revoked() -> bool:
        return not (await TokenReviewer(client)(token)).authenticated

    await eventually_async(revoked, within=10)


async def test_token_requests_are_validated(client: KubeClient) -> None:
    with pytest.raises(ApiError) as short:
        await token_for(client, "cli", expirationSeconds=60)
    assert short.value.status == 422
    with pytest.raises(ApiError) as absent:
        await client.request(
            "POST",
            SERVICE_ACCOUNTS,
            SERVICE_ACCOUNTS.path("default", "nobody", "token"),
            verb="create",
            body={},
        )
    assert absent.value.status == 404


async def test_access_reviews_follow_rbac_semantics(client: KubeClient) -> None:
    await client.create(
        ROLES,
        {
            **rbac("Role", "job-editor"),
            "rules": [
                {
                    "apiGroups": ["streams.ibm.com"],
                    "resources": ["streamsjobs"],
                    "verbs": ["update"],
                    "resourceNames": ["mine"],
                },
                {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["*"]},
            ],
        },
        "default",
    )
    await client.create(
        ROLE_BINDINGS,
        {
            **rbac("RoleBinding", "job-editor"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "job-editor"},
            "subjects": [{"kind": "ServiceAccount", "name": "cli"}],  # the binding's namespace
        },
        "default",
    )
    await client.create(
        CLUSTER_ROLES,
        rbac("ClusterRole", "health", rules=[{"nonResourceURLs": ["/metrics*"], "verbs": ["get"]}]),
    )
    await client.create(
        CLUSTER_ROLE_BINDINGS,
        {
            **rbac("ClusterRoleBinding", "health"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "health"},
            "subjects": [{"kind": "Group", "name": "monitoring"}],
        },
    )
    cli = Review(True, "system:serviceaccount:default:cli", groups=("system:authenticated",))
    reviewer = AccessReviewer(client)

    async def may(user: Review, access: Access) -> bool:
        return (await reviewer(user, access)).allowed

    job = Access("update", "streams.ibm.com", "streamsjobs", "default", "mine")
    assert await may(cli, job)
    assert not await may(cli, Access("update", "streams.ibm.com", "streamsjobs", "default", "theirs"))
    assert not await may(cli, Access("update", "streams.ibm.com", "streamsjobs", "default"))  # no name
    assert not await may(cli, Access("update", "streams.ibm.com", "streamsjobs", "other", "mine"))
    assert not await may(cli, Access("delete", "streams.ibm.com", "streamsjobs", "default", "mine"))
    assert await may(cli, Access("patch", "apps", "deployments", "default", "d", subresource="scale"))
    assert not await may(cli, Access("patch", "apps", "deployments", "default", "d"))
    admin = Review(True, "someone", groups=("system:masters",))
    assert await may(admin, Access("delete", "", "nodes", name="n"))
    # the bootstrap roles: system:auth-delegator is what a reviewing service account is bound to
    delegate = await client.create(
        CLUSTER_ROLE_BINDINGS,
        {
            **rbac("ClusterRoleBinding", "delegate"),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:auth-delegator",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "cli", "namespace": "default"}],
        },
    )
    assert delegate["metadata"]["name"] == "delegate"
    assert await may(cli, Access("create", "authorization.k8s.io", "subjectaccessreviews"))
    # non-resource URLs, by prefix
    sar = await client.create(
        SAR,
        {
            "spec": {
                "groups": ["monitoring"],
                "user": "prom",
                "nonResourceAttributes": {"path": "/metrics/x", "verb": "get"},
            },
        },
    )
    assert sar["status"]["allowed"] is True
    with pytest.raises(ApiError) as nobody:
        await client.create(SAR, {"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}})
    assert nobody.value.status == 422


async def test_self_and_local_reviews(sandbox: Sandbox, client: KubeClient, tmp_path: Path) -> None:
    token = await token_for(client, "cli")
    # the sandbox's own authorization stays open, but a presented token names its caller
    answer = await client.request(
        "POST",
        SSAR,
        SSAR.path(None),
        verb="create",
        body={"spec": {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}}},
    )
    assert answer["status"]["allowed"] is True  # no token: the sandbox admin
    async with await client_with_token(sandbox, token, tmp_path) as as_cli:
        mine = await as_cli.create(
            SSAR,
            {"spec": {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}}},
        )
        assert mine["status"]["allowed"] is False
    local = await client.create(
        LSAR,
        {
            "spec": {
                "user": "system:serviceaccount:default:cli",
                "resourceAttributes": {"verb": "get", "resource": "pods"},
            }
        },
        "default",
    )
    assert local["status"]["allowed"] is False
    assert local["metadata"]["namespace"] == "default"
    assert sandbox.requests[-1].user == "system:admin"


@pytest.mark.sandbox(token="admin-secret")
async def test_a_sandbox_with_a_token_accepts_issued_tokens_and_refuses_others(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    token = await token_for(client, "cli")
    async with await client_with_token(sandbox, token, tmp_path) as as_cli:
        await as_cli.list_all(PODS, "default")
        assert sandbox.requests[-1].user == "system:serviceaccount:default:cli"
    async with await client_with_token(sandbox, "forged", tmp_path) as forged:
        with pytest.raises(ApiError) as refused:
            await forged.list_all(PODS, "default")
        assert refused.value.status == 401


async def test_reviews_are_create_only_and_discovered(client: KubeClient) -> None:
    with pytest.raises(ApiError) as listed:
        await client.list_all(TOKEN_REVIEWS)
    assert listed.value.status == 405
    found = await client.request("GET", TOKEN_REVIEWS, "/apis/authentication.k8s.io/v1", verb="get")
    assert {r["name"]: r["verbs"] for r in found["resources"]}["tokenreviews"] == ["create"]
