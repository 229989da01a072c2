"""Pod-bound service-account tokens, as the kubelet mints a pod's projected token.

A TokenRequest for the pod's service account (``default`` when it names none) with a
``boundObjectRef`` to the pod: the API server's TokenReview of such a token names the pod
(``authentication.kubernetes.io/pod-name`` and ``pod-uid`` in the user's extra), and the token
stops working when the pod goes. Tokens are cached per pod and renewed once 80% of their life has
passed (the kubelet's rule); concurrent callers for one pod share one request.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.objects import Object

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
EXPIRATION_SECONDS = 3600
RENEW_AT = 0.8


@dataclass(frozen=True, slots=True)
class PodRef:
    """The pod a token is bound to."""

    namespace: str
    name: str
    uid: str
    service_account: str = "default"

    @classmethod
    def of(cls, pod: Object) -> PodRef:
        meta = pod.get("metadata") or {}
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        return cls(
            str(meta.get("namespace") or ""), str(meta.get("name") or ""), str(meta.get("uid")), account
        )


@dataclass(frozen=True, slots=True)
class _Issued:
    token: str
    renew_at: float  # time.monotonic()


class PodTokens:
    def __init__(self, client: KubeClient, expiration_seconds: int = EXPIRATION_SECONDS) -> None:
        self.client = client
        self.expiration_seconds = expiration_seconds
        self._issued: dict[str, _Issued] = {}  # pod uid -> its token
        self._asking: dict[str, asyncio.Future[str]] = {}

    async def token(self, pod: PodRef) -> str:
        """The pod's token (ApiError when the API server will not issue one)."""
        issued = self._issued.get(pod.uid)
        if issued is not None and issued.renew_at > time.monotonic():
            return issued.token
        asking = self._asking.get(pod.uid)
        if asking is not None:
            return await asyncio.shield(asking)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._asking[pod.uid] = future
        try:
            token = await self._request(pod)
            future.set_result(token)
            return token
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a failure nobody else waited for is not an error
            raise
        finally:
            del self._asking[pod.uid]

    async def _request(self, pod: PodRef) -> str:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "expirationSeconds": self.expiration_seconds,
                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid},
            },
        }
        started = time.monotonic()
        path = SERVICE_ACCOUNTS.path(pod.namespace, pod.service_account, "token")
        answer = await self.client.request("POST", SERVICE_ACCOUNTS, path, verb="create", body=body)
        token = str((answer.get("status") or {}).get("token") or "")
        if not token:
            raise ValueError(f"the TokenRequest for pod {pod.namespace}/{pod.name} returned no token")
        seconds = int((answer.get("spec") or {}).get("expirationSeconds") or self.expiration_seconds)
        self._issued[pod.uid] = _Issued(token, started + RENEW_AT * seconds)
        return token

    def forget(self, uid: str) -> None:
        """The pod is gone: its token is of no more use."""
        self._issued.pop(uid, None)
