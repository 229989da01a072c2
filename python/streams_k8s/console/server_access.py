"""Who may see what in the console: the viewer's Kubernetes identity decides, namespace by namespace.

Two modes (``--auth``):

- ``none``: no login. The viewer sees what the console's own identity can read (its kubeconfig
  user, or the operator's ServiceAccount). For ``streams-k8s console`` on loopback with your own
  kubeconfig, or the operator's console reached through ``kubectl port-forward`` (which already
  required the right to port-forward to the operator's pod).
- ``token``: every request carries a Kubernetes bearer token, in an ``Authorization: Bearer``
  header or in the cookie the login form sets (browsers' EventSource sends cookies, not headers).
  The token is checked with a TokenReview; its user then sees a namespace only if a
  SubjectAccessReview allows it to ``list`` Jobs (``streamsjobs.streams.ibm.com``) there. Other
  namespaces do not exist for that viewer: the jobs list omits them, their pages, JSON and
  streams answer 404 as for a job that does not exist.

Verdicts are cached for 30 s (per token; per user and namespace), so a page's pushes cost the API
server nothing, and a revoked right stops a push stream within that time. The console never
writes: it has no route but GET (and the login form's POST, which only sets the cookie).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from aiohttp import web

from streams_k8s.api import Job
from streams_k8s.k8s.reviews import Access, AccessReviews, Review, TokenReviews
from streams_k8s.k8s.write_guard import CACHE_SECONDS, Verdicts

TOKEN_COOKIE = "streams_console_token"


class AuthMode(StrEnum):
    NONE = "none"
    TOKEN = "token"


@dataclass(frozen=True, slots=True)
class Refused(Exception):
    """The request shows no identity the console accepts (401)."""

    message: str


def request_token(request: web.Request) -> str | None:
    """The bearer token of a request: its Authorization header, else the login cookie."""
    header = request.headers.get("Authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Refused("only bearer tokens are accepted")
        return token.strip()
    return request.cookies.get(TOKEN_COOKIE) or None


class Viewers:
    """The namespaces a request's viewer may see (all of them in mode ``none``)."""

    def __init__(
        self,
        mode: AuthMode,
        tokens: TokenReviews | None = None,
        access: AccessReviews | None = None,
        *,
        cache_seconds: float = CACHE_SECONDS,
    ) -> None:
        if mode is AuthMode.TOKEN and (tokens is None or access is None):
            raise ValueError("token mode needs a token reviewer and an access reviewer")
        self.mode = mode
        self._tokens, self._access = tokens, access
        self._reviews: Verdicts = Verdicts(cache_seconds)
        self._decisions: Verdicts = Verdicts(cache_seconds)

    async def viewer(self, request: web.Request) -> Review | None:
        """The reviewed user of the request (None in mode ``none``); `Refused` if there is none."""
        if self.mode is AuthMode.NONE:
            return None
        token = request_token(request)
        if token is None:
            raise Refused("log in with a Kubernetes bearer token to see jobs")
        assert self._tokens is not None
        tokens = self._tokens
        try:
            review: Review = await self._reviews.get(token, lambda: tokens(token))
        except Exception as err:  # the API server is unreachable: refuse, never let it through
            raise Refused(f"the token could not be reviewed: {err}") from None
        if not review.authenticated:
            raise Refused(f"the token was refused{': ' + review.error if review.error else ''}")
        return review

    async def may_see(self, viewer: Review | None, namespace: str) -> bool:
        """Whether the viewer may list Jobs in ``namespace`` (a review that fails says no)."""
        if viewer is None:
            return self.mode is AuthMode.NONE
        assert self._access is not None
        ask, access = self._access, Access("list", Job.group, Job.plural, namespace)
        key = (viewer.user, viewer.uid, viewer.groups, namespace)
        try:
            decision = await self._decisions.get(key, lambda: ask(viewer, access))
        except Exception:
            return False
        return bool(decision.allowed)

    async def visible(self, viewer: Review | None, namespaces: Iterable[str]) -> list[str]:
        return [ns for ns in namespaces if await self.may_see(viewer, ns)]
