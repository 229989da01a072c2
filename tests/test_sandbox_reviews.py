"""TokenRequest, TokenReview and the access reviews over HTTP, answered by the sandbox from its RBAC
objects as kube-apiserver answers them (each test runs on both, `api_server_fixtures`); the
sandbox's own authentication (a token or none) is tested on the sandbox alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from api_server import ApiServer
from k8s_support import eventually_async
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.reviews import Access, AccessReviewer, Review, TokenReviewer
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.authn import SIMULATION
from tokens import client_with_token, kubeconfig_with_token, token_for

pytest_plugins = ["api_server_fixtures"]

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
ISSUER = "https://kubernetes.default.svc.cluster.local"  # the audience of both servers' tokens
TESTS = "streams-k8s-tests"  # a second audience, for a review kube-apiserver has not cached


@pytest.fixture
async def client(api_server: ApiServer) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(api_server.kubeconfig)) as c:
        yield c


@pytest.fixture
async def sandbox_client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def rbac(kind: str, name: str, **body: Any) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name}, **body}


async def test_a_service_account_token_is_reviewed_as_its_account(
    api_server: ApiServer, client: KubeClient
) -> None:
    ns = api_server.namespace
    token = await token_for(client, "cli", ns, audiences=[ISSUER, TESTS])
    review = await TokenReviewer(client, audiences=[TESTS])(token)
    assert review.authenticated
    assert review.user == f"system:serviceaccount:{ns}:cli"
    assert set(review.groups) == {
        "system:serviceaccounts",
        f"system:serviceaccounts:{ns}",
        "system:authenticated",
    }
    assert not (await TokenReviewer(client)("forged")).authenticated
    # another audience than the token's is refused
    other = await TokenReviewer(client, audiences=["https://elsewhere"])(token)
    assert not other.authenticated
    assert other.error == (
        f'[invalid bearer token, token audiences ["{ISSUER}" "{TESTS}"] is invalid '
        'for the target audiences ["https://elsewhere"]]'
    )
    # a deleted account's tokens stop working (asked for the other audience: kube-apiserver caches
    # a review for 10 s by token and audiences, a difference the sandbox README lists; it learns of
    # the deletion a moment later, so a review in between can be cached for those 10 s)
    await client.delete(SERVICE_ACCOUNTS, "cli", ns)

    async def revoked() -> bool:
        return not (await TokenReviewer(client)(token)).authenticated

    await eventually_async(revoked, within=20)
    gone = await TokenReviewer(client)(token)
    assert gone.error == '[invalid bearer token, serviceaccounts "cli" not found]'


async def test_a_pod_bound_token_goes_with_its_pod(api_server: ApiServer, client: KubeClient) -> None:
    ns = api_server.namespace
    await client.create(SERVICE_ACCOUNTS, {"metadata": {"name": "runner", "namespace": ns}})
    spec = {"serviceAccountName": "runner", "containers": [{"name": "c", "image": "i"}]}
    pod = await client.create(PODS, {"metadata": {"name": "p", "namespace": ns}, "spec": spec})
    bound = {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": pod["metadata"]["uid"]}
    with pytest.raises(ApiError) as other_account:  # a pod's tokens are its own account's
        await token_for(client, "someone-else", ns, boundObjectRef=bound)
    assert other_account.value.status == 400
    assert other_account.value.message == (
        'cannot bind token for serviceaccount "someone-else" to pod running with different serviceaccount '
        "name."
    )
    token = await token_for(client, "runner", ns, boundObjectRef=bound, audiences=[ISSUER, TESTS])
    review = await TokenReviewer(client, audiences=[TESTS])(token)
    assert review.extra["authentication.kubernetes.io/pod-name"] == ("p",)
    await client.delete(PODS, "p", ns, grace_period_seconds=0)

    async def revoked() -> bool:  # asked for the other audience: see the test above
        return not (await TokenReviewer(client)(token)).authenticated

    await eventually_async(revoked, within=20)  # see the test above


async def test_token_requests_are_validated(api_server: ApiServer, client: KubeClient) -> None:
    with pytest.raises(ApiError) as short:
        await token_for(client, "cli", api_server.namespace, expirationSeconds=60)
    assert short.value.status == 422
    with pytest.raises(ApiError) as absent:
        await client.request(
            "POST",
            SERVICE_ACCOUNTS,
            SERVICE_ACCOUNTS.path(api_server.namespace, "nobody", "token"),
            verb="create",
            body={},
        )
    assert absent.value.status == 404


async def test_access_reviews_follow_rbac_semantics(api_server: ApiServer, client: KubeClient) -> None:
    ns = api_server.namespace
    health, delegate = api_server.unique("health"), api_server.unique("delegate")  # cluster-scoped
    for kind, name in (
        ("clusterroles", health),
        ("clusterrolebindings", health),
        ("clusterrolebindings", delegate),
    ):
        api_server.delete_after(f"/apis/rbac.authorization.k8s.io/v1/{kind}/{name}")
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
        ns,
    )
    await client.create(
        ROLE_BINDINGS,
        {
            **rbac("RoleBinding", "job-editor"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "job-editor"},
            "subjects": [{"kind": "ServiceAccount", "name": "cli"}],  # the binding's namespace
        },
        ns,
    )
    await client.create(
        CLUSTER_ROLES,
        rbac("ClusterRole", health, rules=[{"nonResourceURLs": ["/metrics*"], "verbs": ["get"]}]),
    )
    await client.create(
        CLUSTER_ROLE_BINDINGS,
        {
            **rbac("ClusterRoleBinding", health),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": health},
            "subjects": [{"kind": "Group", "name": f"monitoring-{ns}"}],
        },
    )
    cli = Review(True, f"system:serviceaccount:{ns}:cli", groups=("system:authenticated",))
    reviewer = AccessReviewer(client)

    async def may(user: Review, access: Access) -> bool:
        return (await reviewer(user, access)).allowed

    job = Access("update", "streams.ibm.com", "streamsjobs", ns, "mine")

    async def granted() -> bool:  # kube-apiserver's authorizer sees new bindings a moment later
        return await may(cli, job)

    await eventually_async(granted, within=10)
    assert not await may(cli, Access("update", "streams.ibm.com", "streamsjobs", ns, "theirs"))
    assert not await may(cli, Access("update", "streams.ibm.com", "streamsjobs", ns))  # no name
    assert not await may(cli, Access("update", "streams.ibm.com", "streamsjobs", "other", "mine"))
    assert not await may(cli, Access("delete", "streams.ibm.com", "streamsjobs", ns, "mine"))
    assert await may(cli, Access("patch", "apps", "deployments", ns, "d", subresource="scale"))
    assert not await may(cli, Access("patch", "apps", "deployments", ns, "d"))
    admin = Review(True, "someone", groups=("system:masters",))
    assert await may(admin, Access("delete", "", "nodes", name="n"))
    # the bootstrap roles: system:auth-delegator is what a reviewing service account is bound to
    created = await client.create(
        CLUSTER_ROLE_BINDINGS,
        {
            **rbac("ClusterRoleBinding", delegate),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:auth-delegator",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "cli", "namespace": ns}],
        },
    )
    assert created["metadata"]["name"] == delegate
    delegated = Access("create", "authorization.k8s.io", "subjectaccessreviews")

    async def bound() -> bool:  # as above
        return await may(cli, delegated)

    await eventually_async(bound, within=10)
    # non-resource URLs, by prefix
    prom = {
        "groups": [f"monitoring-{ns}"],
        "user": "prom",
        "nonResourceAttributes": {"path": "/metrics/x", "verb": "get"},
    }

    async def metrics() -> bool:  # its binding was made first: the authorizer has it by now or soon
        return bool((await client.create(SAR, {"spec": prom}))["status"]["allowed"])

    await eventually_async(metrics, within=10)
    with pytest.raises(ApiError) as nobody:
        await client.create(SAR, {"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}})
    assert nobody.value.status == 422


async def test_self_and_local_reviews(api_server: ApiServer, client: KubeClient, tmp_path: Path) -> None:
    ns = api_server.namespace
    token = await token_for(client, "cli", ns)
    pods = {"spec": {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": ns}}}
    answer = await client.request("POST", SSAR, SSAR.path(None), verb="create", body=pods)
    assert answer["status"]["allowed"] is True  # the sandbox's admin, the real one's system:masters
    as_cli_config = kubeconfig_with_token(api_server.kubeconfig, token, tmp_path)
    async with await KubeClient.connect(str(as_cli_config)) as as_cli:
        mine = await as_cli.create(SSAR, pods)
        assert mine["status"]["allowed"] is False
    local = await client.create(
        LSAR,
        {
            "spec": {
                "user": f"system:serviceaccount:{ns}:cli",
                "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": ns},
            }
        },
        ns,
    )
    assert local["status"]["allowed"] is False
    assert local["metadata"]["namespace"] == ns
    if api_server.sandbox is not None:  # its own authorization stays open, but names each caller
        ours = [r for r in api_server.sandbox.requests if r.user != SIMULATION]  # not its kubelet's
        assert ours[-1].user == "system:admin"


@pytest.mark.sandbox(token="admin-secret")
async def test_a_sandbox_with_a_token_accepts_issued_tokens_and_refuses_others(
    sandbox: Sandbox, sandbox_client: KubeClient, tmp_path: Path
) -> None:
    """Sandbox only: its own authentication (a token, or none)."""
    token = await token_for(sandbox_client, "cli")
    async with await client_with_token(sandbox, token, tmp_path) as as_cli:
        await as_cli.list_all(PODS, "default")
        ours = [r for r in sandbox.requests if r.user != SIMULATION]  # not its kubelet's
        assert ours[-1].user == "system:serviceaccount:default:cli"
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
