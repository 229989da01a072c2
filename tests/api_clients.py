"""Two ways to speak to an API server in contract tests: raw aiohttp and kubernetes_asyncio's
ApiClient. Both return (status, decoded JSON body) so one test body exercises both; a path may hold
`{namespace}`, the test's namespace."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from api_server import ApiServer

# The contract tests run with each (`client_kind`).
CLIENT_KINDS = ("http", "kubernetes_asyncio")
JSON = "application/json"
MERGE = "application/merge-patch+json"
JSONPATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def decoded(raw: bytes | str) -> Any:
    """A JSON answer decoded; any other (kube-apiserver's `404 page not found`) as its text."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    if not text:
        return None
    return orjson.loads(text) if text[0] in "{[" else text


class RawHttp:
    name = "http"

    def __init__(self, api: ApiServer, session: aiohttp.ClientSession) -> None:
        self.url = api.url
        self.namespace = api.namespace
        self.session = session

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = JSON,
        query: dict[str, Any] | None = None,
    ) -> tuple[int, Any]:
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type, "Accept": JSON}
        params = {k: str(v) for k, v in (query or {}).items()}
        url = self.url + path.format(namespace=self.namespace)
        async with self.session.request(method, url, data=data, headers=headers, params=params) as r:
            return r.status, decoded(await r.read())

    async def watch(self, path: str, query: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        params = {k: str(v) for k, v in {**query, "watch": "true"}.items()}
        url = self.url + path.format(namespace=self.namespace)
        async with self.session.get(url, params=params) as r:
            if r.status != 200:
                yield {"type": "HTTP", "status": r.status, "object": orjson.loads(await r.read())}
                return
            async for line in r.content:
                if line.strip():
                    yield orjson.loads(line)


class KubeAsyncio:
    name = "kubernetes_asyncio"

    def __init__(self, api: ApiClient, namespace: str) -> None:
        self.api = api
        self.namespace = namespace

    async def _request(
        self, method: str, path: str, body: Any, content_type: str, query: dict[str, Any] | None
    ) -> Any:
        return await self.api.call_api(
            path.format(namespace=self.namespace),
            method,
            query_params=[(k, str(v)) for k, v in (query or {}).items()],
            header_params={"Content-Type": content_type, "Accept": JSON},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
        )

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = JSON,
        query: dict[str, Any] | None = None,
    ) -> tuple[int, Any]:
        try:
            response = await self._request(method, path, body, content_type, query)
        except ApiException as exc:
            return exc.status, decoded(exc.body or b"")
        return response.status, decoded(await response.read())

    async def watch(self, path: str, query: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            response = await self._request("GET", path, None, JSON, {**query, "watch": "true"})
        except ApiException as exc:
            yield {"type": "HTTP", "status": exc.status, "object": orjson.loads(exc.body)}
            return
        async with response:
            if response.status != 200:
                yield {
                    "type": "HTTP",
                    "status": response.status,
                    "object": orjson.loads(await response.read()),
                }
                return
            async for line in response.content:
                if line.strip():
                    yield orjson.loads(line)


Client = RawHttp | KubeAsyncio


async def until(client: Client, path: str, done: Callable[[int, Any], bool], within: float = 30.0) -> Any:
    """GET `path` until `done(status, body)` (controllers at work on the real server): that body."""
    async with asyncio.timeout(within):
        while True:
            status, body = await client.call("GET", path)
            if done(status, body):
                return body
            await asyncio.sleep(0.05)
