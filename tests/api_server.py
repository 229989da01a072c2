"""The API server a test runs against, the sandbox or the real control plane
(`api_server_fixtures`), and what a test reads differently between them."""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from streams_k8s.sandbox import Sandbox

SANDBOX = "sandbox"
CONTROL_PLANE = "control_plane"


@dataclass
class ApiServer:
    """What a test needs of the API server it runs against: where it is, how to reach it, and a
    namespace of its own (`{namespace}` in the paths `Writes` and the clients take)."""

    backend: str  # SANDBOX or CONTROL_PLANE
    url: str
    kubeconfig: Path  # its context's namespace is the test's
    namespace: str
    ssl: ssl.SSLContext | None  # the real server: its CA and the admin's client certificate
    sandbox: Sandbox | None = None  # what only the sandbox has, for the sandbox's side of a difference
    _cleanup: list[str] = field(default_factory=list)

    @property
    def real(self) -> bool:
        return self.backend == CONTROL_PLANE

    def session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self.ssl if self.ssl else True))

    def unique(self, name: str) -> str:
        """A cluster-scoped name of this test's own (the real server outlives the test)."""
        return f"{name}-{self.namespace}"

    def delete_after(self, path: str) -> None:
        """Delete `path` when the test ends (cluster-scoped objects on the real server)."""
        self._cleanup.append(path)

    async def call(self, method: str, path: str, body: Any = None, **query: str) -> tuple[int, Any]:
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        async with (
            self.session() as http,
            http.request(method, self.url + path, data=data, params=query, headers=headers) as reply,
        ):
            raw = await reply.read()
            return reply.status, orjson.loads(raw) if raw else None

    async def until(self, method: str, path: str, done: Any, within: float = 30.0, **query: str) -> Any:
        """Ask again until `done(status, body)`: the answer that settled it (controllers at work)."""
        async with asyncio.timeout(within):
            while True:
                status, body = await self.call(method, path, **query)
                if done(status, body):
                    return body
                await asyncio.sleep(0.05)


# kube-controller-manager publishes the cluster's CA into every namespace; the sandbox does not.
ROOT_CA = "kube-root-ca.crt"


def ours(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A namespace's ConfigMaps (or events on them) but the real server's root CA ConfigMap."""
    return [i for i in items if (i.get("object", i).get("metadata") or {}).get("name") != ROOT_CA]
