"""Bearer-token authentication of the consistent-region API through TokenReview.

The PE runtime sends no credentials, and must keep working: a request without an
``Authorization`` header passes (the NetworkPolicy in front of the coordinator admits only the
job's PE pods and the instance operator). A client that does present a bearer token (the CLI,
other tools, through a port-forward) has it checked with the API server's TokenReview; an
invalid token is a 401 JSON answer, never a silent downgrade to "anonymous". Verdicts are
cached briefly so a busy tool does not cost one review per request.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from streams_k8s.k8s.client import KubeClient, Resource

TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False)
# The reviewed user of a request that presented a token.
USER = web.RequestKey("user", str)
CACHE_SECONDS = 30.0
_MAX_CACHED = 1024


@dataclass(frozen=True, slots=True)
class Review:
    authenticated: bool
    user: str = ""
    error: str = ""


Reviewer = Callable[[str], Awaitable[Review]]


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
        return Review(
            bool(status.get("authenticated")),
            str((status.get("user") or {}).get("username") or ""),
            str(status.get("error") or ""),
        )


def _unauthorized(message: str) -> web.Response:
    body = {"status": 401, "reason": "Unauthorized", "message": message}
    return web.Response(
        body=orjson.dumps(body),
        status=401,
        content_type="application/json",
        headers={"WWW-Authenticate": 'Bearer realm="consistentregion"'},
    )


def bearer_auth(review: Reviewer, *, cache_seconds: float = CACHE_SECONDS) -> Middleware:
    """The middleware: no token passes; a presented token must be valid."""
    cache: dict[str, tuple[float, Review]] = {}

    async def checked(token: str) -> Review:
        now = time.monotonic()
        hit = cache.get(token)
        if hit is not None and hit[0] > now:
            return hit[1]
        verdict = await review(token)
        if len(cache) >= _MAX_CACHED:
            cache.clear()
        cache[token] = (now + cache_seconds, verdict)
        return verdict

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        header = request.headers.get("Authorization")
        if header is None:
            return await handler(request)
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return _unauthorized("only bearer tokens are accepted")
        try:
            verdict = await checked(token.strip())
        except Exception as err:  # the API server is unreachable: refuse rather than let it through
            return _unauthorized(f"the token could not be reviewed: {err}")
        if not verdict.authenticated:
            return _unauthorized(f"the token was refused{': ' + verdict.error if verdict.error else ''}")
        request[USER] = verdict.user
        return await handler(request)

    return authenticate
