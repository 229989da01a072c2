"""Writes to an API server over HTTP for the admission tests: the status, the body, the `Warning`
headers, and the causes of a 422 as (field, message) pairs. A path may hold `{namespace}`, the
test's namespace. A test module that says `pytest_plugins = ["writes_fixture"]` gets a `Writes` on
the `api_server` fixture (the sandbox, then the real control plane) as `writes`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

JSON = "application/json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


@dataclass
class Reply:
    status: int
    body: Any
    warnings: list[str]

    @property
    def causes(self) -> list[tuple[str, str]]:
        details = (self.body or {}).get("details") or {}
        return [(c["field"], c["message"]) for c in details.get("causes") or []]

    @property
    def message(self) -> str:
        return str((self.body or {}).get("message", ""))


class Writes:
    def __init__(self, session: aiohttp.ClientSession, url: str, namespace: str) -> None:
        self.session = session
        self.url = url
        self.namespace = namespace

    async def send(
        self, method: str, path: str, body: Any = None, content_type: str = JSON, **query: str
    ) -> Reply:
        data = body if isinstance(body, bytes) else orjson.dumps(body) if body is not None else None
        async with self.session.request(
            method,
            self.url + path.format(namespace=self.namespace),
            data=data,
            headers={"Content-Type": content_type},
            params=query,
        ) as r:
            raw = await r.read()
            return Reply(r.status, orjson.loads(raw) if raw else None, r.headers.getall("Warning", []))

    async def create(self, path: str, body: Any, **query: str) -> Reply:
        return await self.send("POST", path, body, **query)

    async def get(self, path: str) -> Reply:
        return await self.send("GET", path)

    async def replace(self, path: str, body: Any, **query: str) -> Reply:
        return await self.send("PUT", path, body, **query)

    async def patch(self, path: str, body: Any, content_type: str = MERGE, **query: str) -> Reply:
        return await self.send("PATCH", path, body, content_type, **query)


def pod(name: str, **spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", [{"name": "main", "image": "busybox:1"}])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": containers, **spec},
    }


def container(name: str = "main", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox:1", **fields}
