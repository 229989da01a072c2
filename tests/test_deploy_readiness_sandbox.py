"""The operator's pod as deploy/ runs it, its readiness probe honoured by the simulated kubelet and
`streams-api`'s EndpointSlice kept by the sandbox's controller: while the API server fails a large
share of the operator's requests, the Service keeps the leader (the PEs keep their REST API and
bundle repository); the failing API server is a warning of its health answers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import yaml

from k8s_support import eventually_async
from repo_paths import REPO
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import DEPLOYMENTS, ENDPOINT_SLICES, PODS, SERVICES
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.pod_network import host_address
from test_deploy_rbac_sandbox import OPERATOR, USER, install_operator_rbac
from tokens import token_for

# Longer than the probe's three failures in a row, 5 s apart, that would take the pod out.
HELD = 20.0


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def manifest(name: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((REPO / "deploy" / name).read_text()) if d]
    return docs[0]


async def serving_endpoints(client: KubeClient) -> dict[str, bool]:
    """`streams-api`'s endpoints: pod name -> ready."""
    slices, _ = await client.list_all(
        ENDPOINT_SLICES, "default", label_selector="kubernetes.io/service-name=streams-api"
    )
    return {
        e["targetRef"]["name"]: bool(e.get("conditions", {}).get("ready"))
        for s in slices
        for e in s.get("endpoints") or ()
    }


@pytest.mark.sandbox(nodes=1)
async def test_the_leader_stays_behind_streams_api_while_the_api_server_fails(
    sandbox: Sandbox, client: KubeClient
) -> None:
    await install_operator_rbac(client)
    await token_for(client, OPERATOR)  # its ServiceAccount
    await client.create(SERVICES, manifest("service.yaml"), "default")
    await client.create(DEPLOYMENTS, manifest("deployment.yaml"), "default")

    async def one_ready() -> bool:
        return list((await serving_endpoints(client)).values()) == [True]

    await eventually_async(one_ready, within=120, every=0.5)
    (leader,) = await serving_endpoints(client)
    pod = await client.get(PODS, leader, "default")
    address = host_address(pod["status"]["podIP"])
    readyz = f"http://{address}:8081/readyz"

    # 70% of every request of the operator's fails (its watches, lists, reads and lease renewals:
    # when no renewal gets through for 10 s, the controllers pause and the pod goes on serving).
    sandbox.faults.random.seed(35)
    sandbox.faults.fail(500, None, user=USER, probability=0.7)
    async with aiohttp.ClientSession() as http:

        async def failing_seen() -> bool:
            async with http.get(readyz) as response:
                return "API server failing" in await response.text()

        await eventually_async(failing_seen, within=120, every=0.5)
        held_until = time.monotonic() + HELD
        while time.monotonic() < held_until:
            assert await serving_endpoints(client) == {leader: True}
            await asyncio.sleep(1.0)
        async with http.get(readyz) as response:
            assert response.status == 200
            assert any("API server failing" in w for w in (await response.json())["warnings"])
    sandbox.faults.clear()
