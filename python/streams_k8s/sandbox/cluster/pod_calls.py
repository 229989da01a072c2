"""The HTTP calls a simulated pod makes (the PE runtime's reports, its consistent-region
answers): through cluster DNS (`cluster_dns`: a Service's name leads to where its endpoints
listen on this host), presenting the pod's bound service-account token (`pod_tokens`).

The real Streams runtime sends no credentials and is recognised by its pod's source address;
pod addresses are not on this host, so a simulated pod proves who it is the Kubernetes way, with a
token whose TokenReview names the pod (`streams_k8s.k8s.write_guard` trusts it as it trusts a
write from that pod's address). A pod whose token cannot be had (no such service account) calls
without one, and says why in its log once.
"""

from __future__ import annotations

import aiohttp
from aiohttp.abc import AbstractResolver

from streams_k8s.sandbox.cluster.pod_tokens import PodRef, PodTokens

TIMEOUT = 2.0


class PodCalls:
    def __init__(
        self,
        resolver: AbstractResolver | None = None,
        tokens: PodTokens | None = None,
        timeout: float = TIMEOUT,
    ) -> None:
        self.resolver = resolver
        self.tokens = tokens
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self.refused: dict[str, str] = {}  # pod uid -> why it has no token

    def session(self) -> aiohttp.ClientSession:
        """One session for every pod's calls. Each call resolves its host again and opens its own
        connection: a Service's endpoints move (a coordinator pool moves a job to another pod),
        and a connection kept alive or an address cached would still lead to the old one."""
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(resolver=self.resolver, use_dns_cache=False, force_close=True)
            self._session = aiohttp.ClientSession(timeout=self.timeout, connector=connector)
        return self._session

    async def headers(self, pod: PodRef) -> dict[str, str]:
        """``Authorization: Bearer`` with the pod's token; none when it has no token."""
        if self.tokens is None:
            return {}
        try:
            token = await self.tokens.token(pod)
        except Exception as exc:  # its service account is missing, the API server away, ...
            self.refused.setdefault(pod.uid, str(exc) or type(exc).__name__)
            return {}
        self.refused.pop(pod.uid, None)
        return {"Authorization": f"Bearer {token}"}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
