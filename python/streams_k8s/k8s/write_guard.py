"""Who may write on an HTTP API that pods call without credentials.

The Streams runtime calls its APIs with no credentials at all, so a write (any method but GET,
HEAD and OPTIONS) is accepted from one of these callers:

- a pod the API trusts for what the request acts on, recognised by the request's source address
  (looked up in the pod cache, ``PodsByAddress``): the API's ``WriteTarget`` says which pods (a
  namespace and labels they carry);
- a pod proving who it is with a token bound to it (a projected service-account token: its
  TokenReview names the pod in the user's extra, ``authentication.kubernetes.io/pod-name`` and
  ``pod-uid``, in the service account's namespace): trusted exactly as a write from that pod's
  address is (the target trusts the pod, found live in the pod cache with that uid). A client whose
  pods' addresses do not reach the server, such as the simulated cluster, calls so;
- a client presenting any other ``Authorization: Bearer <token>`` (or a pod-bound one the target
  does not trust): the token is reviewed with TokenReview, then the user it names must be allowed
  the target's ``Access`` (SubjectAccessReview). The API server's service proxy removes the
  ``Authorization`` header of the requests it authenticated, so a client calling through it sends
  the same value as ``X-Streams-Authorization`` (`FORWARDED_AUTHORIZATION`), reviewed alike.

Anyone else gets a 401 (no credentials, not a trusted pod) or a 403 (a pod that may not write
there, or a user the API server does not allow), with a JSON body. A presented token is always
reviewed, on reads too: an invalid one is a 401, never downgraded to an anonymous call. Verdicts
are cached briefly (per token, and per user and access) so that a busy client, or a fuzzer,
costs the API server one review a while, not one per request.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from streams_k8s.k8s.http_errors import json_error
from streams_k8s.k8s.objects import Object, meta
from streams_k8s.k8s.pod_addresses import PodsByAddress
from streams_k8s.k8s.reviews import Access, AccessReviews, Decision, Review, TokenReviews

# The reviewed user of a request that presented a token.
USER = web.RequestKey("user", str)
# The trusted pods a write came from, for the handler: the one its token is bound to, or those at its
# address (several only where pods share one: the host's network).
CALLER_PODS = web.RequestKey("caller_pods", list)
POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name"
POD_UID_EXTRA = "authentication.kubernetes.io/pod-uid"
_SERVICE_ACCOUNT_USER = "system:serviceaccount:"
CACHE_SECONDS = 30.0
_MAX_CACHED = 4096
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
FORWARDED_AUTHORIZATION = "X-Streams-Authorization"

V = TypeVar("V")


@dataclass(frozen=True)
class WriteTarget:
    """What a write acts on, and so who may make it."""

    description: str  # for messages, e.g. "job default/rest"
    access: Access  # what a token's user must be allowed
    namespace: str  # the pods that may write without credentials: in this namespace,
    pod_labels: Mapping[str, str]  # carrying these labels

    def trusts(self, pod: Object) -> bool:
        labels = meta(pod).get("labels") or {}
        return meta(pod).get("namespace") == self.namespace and all(
            labels.get(k) == v for k, v in self.pod_labels.items()
        )


# The target a request writes on; None when the request names nothing that exists (the handler
# then answers it, once the caller has shown it may write at all).
TargetOf = Callable[[web.Request], WriteTarget | None]


class Verdicts:
    """A small time-bounded cache of review answers."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._answers: dict[Hashable, tuple[float, Any]] = {}

    async def get(self, key: Hashable, ask: Callable[[], Awaitable[V]]) -> V:
        now = time.monotonic()
        hit = self._answers.get(key)
        if hit is not None and hit[0] > now:
            answer: V = hit[1]
            return answer
        answer = await ask()
        if len(self._answers) >= _MAX_CACHED:
            self._answers.clear()
        self._answers[key] = (now + self.seconds, answer)
        return answer


def _unauthorized(message: str) -> web.Response:
    return json_error(401, "Unauthorized", message, {"WWW-Authenticate": 'Bearer realm="streams-k8s"'})


def _forbidden(message: str) -> web.Response:
    return json_error(403, "Forbidden", message)


def bound_pod(review: Review) -> tuple[str, str, str] | None:
    """(namespace, name, uid) of the pod a reviewed token is bound to; None for any other token."""
    names, uids = review.extra.get(POD_NAME_EXTRA) or (), review.extra.get(POD_UID_EXTRA) or ()
    if len(names) != 1 or len(uids) != 1 or not review.user.startswith(_SERVICE_ACCOUNT_USER):
        return None
    namespace, _, account = review.user.removeprefix(_SERVICE_ACCOUNT_USER).partition(":")
    return (namespace, names[0], uids[0]) if namespace and account else None


def from_trusted_pod_token(review: Review, target: WriteTarget, pods: PodsByAddress | None) -> Object | None:
    """The live pod (of that uid) the reviewed token is bound to, if the target trusts it."""
    bound = bound_pod(review)
    pod = pods.bound(*bound) if pods is not None and bound is not None else None
    return pod if pod is not None and target.trusts(pod) else None


def peer(request: web.Request) -> str:
    """The source address of the connection (never a forwarded-for header: anyone can send one)."""
    transport = request.transport
    info = transport.get_extra_info("peername") if transport is not None else None
    return str(info[0]) if isinstance(info, tuple) and info else ""


def write_guard(
    target_of: TargetOf,
    pods: PodsByAddress | None,
    tokens: TokenReviews | None,
    access: AccessReviews | None,
    *,
    cache_seconds: float = CACHE_SECONDS,
) -> Middleware:
    """The middleware. ``pods`` None trusts no pod; ``tokens`` None accepts no token; ``access``
    None accepts only tokens bound to a pod the target trusts."""
    reviews, decisions = Verdicts(cache_seconds), Verdicts(cache_seconds)

    async def authenticated(request: web.Request, header: str) -> Review | web.Response:
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return _unauthorized("only bearer tokens are accepted")
        if tokens is None:
            return _unauthorized("this server accepts no tokens (its token review is off)")
        try:
            review = await reviews.get(token, lambda: tokens(token))
        except Exception as err:  # the API server is unreachable: refuse rather than let it through
            return _unauthorized(f"the token could not be reviewed: {err}")
        if not review.authenticated:
            return _unauthorized(f"the token was refused{': ' + review.error if review.error else ''}")
        return review

    async def allowed(request: web.Request, review: Review, target: WriteTarget) -> web.Response | None:
        if (pod := from_trusted_pod_token(review, target, pods)) is not None:
            request[CALLER_PODS] = [pod]
            return None
        if access is None:
            return _forbidden(f"{review.user} may not write on {target.description} (only its pods may)")
        key = (review.user, review.uid, review.groups, target.access)
        try:
            decision: Decision = await decisions.get(key, lambda: access(review, target.access))
        except Exception as err:
            return _forbidden(f"{review.user} could not be authorized for {target.access}: {err}")
        if decision.allowed:
            return None
        why = f" ({decision.reason})" if decision.reason else ""
        return _forbidden(f"{review.user} may not {target.access}{why}, which writes on {target.description}")

    def from_trusted_pod(request: web.Request, target: WriteTarget | None) -> web.Response | None:
        address = peer(request)
        found = pods.at(address) if pods is not None and address else []
        if target is not None and (trusted := [p for p in found if target.trusts(p)]):
            request[CALLER_PODS] = trusted
            return None
        what = f" on {target.description}" if target is not None else ""
        if found:
            names = ", ".join(sorted(f"{meta(p).get('namespace')}/{meta(p).get('name')}" for p in found))
            return _forbidden(f"pod {names} at {address} may not write{what}")
        return _unauthorized(
            f"writes{what} come from its own pods or present a bearer token; {address or 'the caller'} "
            "is neither"
        )

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        header = request.headers.get("Authorization") or request.headers.get(FORWARDED_AUTHORIZATION)
        if header is not None:
            review = await authenticated(request, header)
            if isinstance(review, web.Response):
                return review
            request[USER] = review.user
            if request.method not in _SAFE_METHODS and (target := target_of(request)) is not None:
                refused = await allowed(request, review, target)
                if refused is not None:
                    return refused
            return await handler(request)
        if request.method in _SAFE_METHODS or request.match_info.http_exception is not None:
            return await handler(request)  # a read, or no route: nothing can be written (404/405)
        refused = from_trusted_pod(request, target_of(request))
        return refused if refused is not None else await handler(request)

    return guard
