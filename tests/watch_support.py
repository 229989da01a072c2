"""What a watch saw happen in the sandbox after a given moment (for tests of what a controller does next)."""

from __future__ import annotations

import asyncio
import contextlib

import orjson

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.objects import Object


async def added_since(
    client: KubeClient,
    resource: Resource,
    resource_version: str,
    seconds: float,
    namespace: str = "default",
    label_selector: str | None = None,
) -> list[Object]:
    """The objects of ``resource`` created after ``resource_version``, seen for ``seconds``."""
    query: dict[str, object] = {
        "watch": "true",
        "resourceVersion": resource_version,
        "timeoutSeconds": max(1, int(seconds)),
    }
    if label_selector:
        query["labelSelector"] = label_selector
    added: list[Object] = []
    with contextlib.suppress(TimeoutError):
        async with (
            asyncio.timeout(seconds + 2),
            client.stream(resource, resource.path(namespace), query, 5.0) as response,
        ):
            async for line in response.content:
                if line.strip():
                    event = orjson.loads(line)
                    if event["type"] == "ADDED":
                        added.append(event["object"])
    return added
