"""The operator's RBAC on the real control plane: what `deploy/` grants it is enforced by the real
authorizer, and it does not reach beyond what it needs (what it needs is held by the operator
suite: no request of its is refused)."""

from __future__ import annotations

import pytest

from streams_k8s.control_plane.cluster import ControlPlane
from streams_k8s.k8s.client import KubeClient, Resource

SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)
OPERATOR = "system:serviceaccount:streams:streams-k8s-operator"
COORDINATOR = "system:serviceaccount:streams:streams-consistent-region"
NS = "streams"

# (verb, group, resource, subresource, namespace): what it works with (a sample of the grant).
NEEDED = [
    ("create", "streams.ibm.com", "streamspes", "", NS),
    ("patch", "streams.ibm.com", "streamsjobs", "status", NS),
    ("patch", "streams.ibm.com", "streamsimports", "status", NS),
    ("patch", "streams.ibm.com", "streamsexports", "status", NS),
    ("watch", "streams.ibm.com", "streamsjobautoscalers", "", NS),  # the width autoscaler
    ("patch", "streams.ibm.com", "streamsjobautoscalers", "status", NS),
    ("patch", "streams.ibm.com", "streamsprs", "scale", NS),
    ("create", "", "pods", "", NS),
    ("create", "", "secrets", "", NS),  # a TLS job's transport Secret
    ("get", "", "secrets", "", NS),
    ("delete", "", "configmaps", "", NS),
    ("watch", "", "services", "", NS),
    ("patch", "", "nodes", "", ""),
    ("update", "coordination.k8s.io", "leases", "", NS),
    ("create", "authentication.k8s.io", "tokenreviews", "", ""),
    ("create", "authorization.k8s.io", "subjectaccessreviews", "", ""),
]
# What an operator of jobs in its own namespace has no business doing.
FORBIDDEN = [
    ("list", "", "secrets", "", NS),  # it reads Secrets (GitHub tokens, transport pairs) by name only
    ("watch", "", "secrets", "", NS),
    ("update", "", "secrets", "", NS),  # a transport Secret is made once, never changed
    ("delete", "", "secrets", "", NS),  # the garbage collector removes it with its Job
    ("get", "", "secrets", "", "kube-system"),
    ("create", "", "configmaps", "", "default"),  # other namespaces are not its own
    ("list", "streams.ibm.com", "streamsjobs", "", "default"),
    ("create", "", "pods", "exec", NS),
    ("create", "", "serviceaccounts", "token", NS),
    ("create", "rbac.authorization.k8s.io", "rolebindings", "", NS),
    ("create", "rbac.authorization.k8s.io", "clusterroles", "", ""),
    ("escalate", "rbac.authorization.k8s.io", "roles", "", NS),
    ("impersonate", "", "users", "", ""),
    ("delete", "", "nodes", "", ""),
    ("update", "", "nodes", "status", ""),
    ("create", "", "namespaces", "", ""),
    ("update", "apiextensions.k8s.io", "customresourcedefinitions", "", ""),
    ("update", "apps", "deployments", "", NS),  # coordinators are created and deleted, never edited
    ("delete", "coordination.k8s.io", "leases", "", NS),
    ("create", "", "pods", "eviction", NS),
    ("update", "streams.ibm.com", "streamsjobautoscalers", "", NS),  # the user's: only its status
]


async def _allowed(
    admin: KubeClient, user: str, verb: str, group: str, resource: str, sub: str, ns: str
) -> bool:
    attributes = {"verb": verb, "group": group, "resource": resource, "subresource": sub, "namespace": ns}
    review = {"spec": {"user": user, "groups": ["system:serviceaccounts", "system:authenticated"]}}
    review["spec"]["resourceAttributes"] = {k: v for k, v in attributes.items() if v}
    answer = await admin.create(SUBJECT_ACCESS_REVIEWS, review)
    return bool(answer["status"].get("allowed"))


@pytest.mark.parametrize(("verb", "group", "resource", "sub", "ns"), NEEDED)
async def test_the_operator_may_do_what_it_does(
    installed: ControlPlane, admin: KubeClient, verb: str, group: str, resource: str, sub: str, ns: str
) -> None:
    assert await _allowed(admin, OPERATOR, verb, group, resource, sub, ns)


@pytest.mark.parametrize(("verb", "group", "resource", "sub", "ns"), FORBIDDEN)
async def test_the_operator_may_not_reach_beyond_its_work(
    installed: ControlPlane, admin: KubeClient, verb: str, group: str, resource: str, sub: str, ns: str
) -> None:
    assert not await _allowed(admin, OPERATOR, verb, group, resource, sub, ns)


@pytest.mark.parametrize(
    ("verb", "group", "resource", "sub"),
    [
        ("create", "", "pods", ""),
        ("delete", "", "pods", ""),
        ("update", "streams.ibm.com", "streamsjobs", ""),
    ],
)
async def test_a_coordinator_reads_and_reports_only(
    installed: ControlPlane, admin: KubeClient, verb: str, group: str, resource: str, sub: str
) -> None:
    assert not await _allowed(admin, COORDINATOR, verb, group, resource, sub, NS)
