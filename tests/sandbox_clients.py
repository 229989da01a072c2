"""Two ways to speak to the sandbox in contract tests: raw aiohttp and kubernetes_asyncio's
ApiClient. Both return (status, decoded JSON body) so one test body exercises both."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from streams_k8s.sandbox import Sandbox

JSON = "application/json"
MERGE = "application/merge-patch+json"
JSONPATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


class RawHttp:
    name = "http"

    def __init__(self, sandbox: Sandbox, session: aiohttp.ClientSession) -> None:
        self.url = sandbox.url
        self.session = session
        self.headers = {"Authorization": f"Bearer {sandbox.token}"} if sandbox.token else {}

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = JSON,
        query: dict[str, Any] | None = None,
    ) -> tuple[int, Any]:
        data = orjson.dumps(body) if body is not None else None
        headers = {**self.headers, "Content-Type": content_type, "Accept": JSON}
        params = {k: str(v) for k, v in (query or {}).items()}
        async with self.session.request(
            method, self.url + path, data=data, headers=headers, params=params
        ) as r:
            raw = await r.read()
            return r.status, orjson.loads(raw) if raw else None

    async def watch(self, path: str, query: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        params = {k: str(v) for k, v in {**query, "watch": "true"}.items()}
        async with self.session.get(self.url + path, params=params, headers=self.headers) as r:
            if r.status != 200:
                yield {"type": "HTTP", "status": r.status, "object": orjson.loads(await r.read())}
                return
            async for line in r.content:
                if line.strip():
                    yield orjson.loads(line)


class KubeAsyncio:
    name = "kubernetes_asyncio"

    def __init__(self, api: ApiClient) -> None:
        self.api = api

    async def _request(
        self, method: str, path: str, body: Any, content_type: str, query: dict[str, Any] | None
    ) -> Any:
        return await self.api.call_api(
            path,
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
            return exc.status, orjson.loads(exc.body) if exc.body else None
        raw = await response.read()
        return response.status, orjson.loads(raw) if raw else None

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
