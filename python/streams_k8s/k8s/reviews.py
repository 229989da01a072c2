"""Who a bearer token belongs to and what that user may do, asked of the API server.

``TokenReviewer`` creates an ``authentication.k8s.io/v1`` TokenReview; ``AccessReviewer`` a
``authorization.k8s.io/v1`` SubjectAccessReview for the reviewed user. Both are cluster-scoped
creates: the service account asking needs the built-in ClusterRole ``system:auth-delegator``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streams_k8s.k8s.client import KubeClient, Resource

TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False)
SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)


@dataclass(frozen=True, slots=True)
class Review:
    """A TokenReview's verdict: the user the token authenticates, if any."""

    authenticated: bool
    user: str = ""
    error: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Access:
    """A request on the API server's terms: verb on a resource (optionally named) in a namespace."""

    verb: str
    group: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""

    def __str__(self) -> str:
        what = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        what = f"{what}.{self.group}" if self.group else what
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return f"{self.verb} {what}{' ' + repr(self.name) if self.name else ''}{where}"


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


TokenReviews = Callable[[str], Awaitable[Review]]
AccessReviews = Callable[[Review, Access], Awaitable[Decision]]


class TokenReviewer:
    """Asks the API server who a token belongs to (``authentication.k8s.io/v1`` TokenReview)."""

    def __init__(self, client: KubeClient, audiences: list[str] | None = None) -> None:
        self.client = client
        self.audiences = audiences or []

    async def __call__(self, token: str) -> Review:
        spec: dict[str, object] = {"token": token}
        if self.audiences:
            spec["audiences"] = self.audiences
        answer = await self.client.create(
            TOKEN_REVIEWS, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        )
        status = answer.get("status") or {}
        user = status.get("user") or {}
        return Review(
            bool(status.get("authenticated")),
            str(user.get("username") or ""),
            str(status.get("error") or ""),
            str(user.get("uid") or ""),
            tuple(str(g) for g in user.get("groups") or ()),
            {str(k): tuple(str(v) for v in vs or ()) for k, vs in (user.get("extra") or {}).items()},
        )


class AccessReviewer:
    """Asks the API server whether a reviewed user may do something (SubjectAccessReview)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def __call__(self, user: Review, access: Access) -> Decision:
        attributes = {
            "verb": access.verb,
            "group": access.group,
            "resource": access.resource,
            "namespace": access.namespace,
            "name": access.name,
            "subresource": access.subresource,
        }
        spec: dict[str, Any] = {
            "user": user.user,
            "groups": list(user.groups),
            "resourceAttributes": {k: v for k, v in attributes.items() if v},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        answer = await self.client.create(
            SUBJECT_ACCESS_REVIEWS,
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
        )
        status = answer.get("status") or {}
        reason = str(status.get("reason") or status.get("evaluationError") or "")
        return Decision(bool(status.get("allowed")) and not status.get("denied"), reason)
