"""`module_sandbox`: one sandbox for a whole module, its state carried from test to test."""

from __future__ import annotations

import pytest
from kubernetes_asyncio.client import ApiClient, CoreV1Api

from streams_k8s.sandbox import Sandbox

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.sandbox(nodes=1)]


async def test_first_test_creates(module_sandbox: Sandbox) -> None:
    async with ApiClient(await module_sandbox.client_configuration()) as api:
        await CoreV1Api(api).create_namespaced_config_map("default", {"metadata": {"name": "kept"}})
    assert len(list(module_sandbox.registry.items(module_sandbox.registry.types[("", "nodes")]))) == 1


async def test_second_test_sees_it(module_sandbox: Sandbox) -> None:
    async with ApiClient(await module_sandbox.client_configuration()) as api:
        listing = await CoreV1Api(api).list_namespaced_config_map("default")
    assert [c.metadata.name for c in listing.items] == ["kept"]
