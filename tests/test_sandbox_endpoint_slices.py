"""The simulated EndpointSlice controller: one managed slice per Service with a selector, kept in
step with its pods (ready, serving, terminating), owned by the Service; Services without a selector
get none, and slices other managers write are left alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from k8s_support import eventually_async
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.sandbox import Sandbox

PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
NS = "default"


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def pod(name: str, app: str = "web", **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "web:1", "ports": [{"name": "http", "containerPort": 8080}]}
    return {
        "metadata": {"name": name, "namespace": NS, "labels": {"app": app}},
        "spec": {"containers": [container], **spec},
    }


def service(name: str = "web", selector: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"ports": [{"name": "http", "port": 80, "targetPort": "http"}], **spec}
    if selector is not None:
        body["selector"] = selector
    return {"metadata": {"name": name, "namespace": NS, "labels": {"tier": "front"}}, "spec": body}


async def slices_of(client: KubeClient, name: str) -> list[dict[str, Any]]:
    items, _ = await client.list_all(SLICES, NS, label_selector=f"kubernetes.io/service-name={name}")
    return items


def endpoints(found: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["targetRef"]["name"]: e for s in found for e in s["endpoints"]}


@pytest.mark.sandbox(zones=["z1", "z2"])
async def test_a_service_gets_one_slice_of_its_pods(sandbox: Sandbox, client: KubeClient) -> None:
    svc = await client.create(SERVICES, service(selector={"app": "web"}))
    await client.create(PODS, pod("web-0", hostname="web-0", subdomain="web"))
    await client.create(PODS, pod("web-1"))
    await client.create(PODS, pod("other", app="db"))
    await sandbox.settle()
    (found,) = await slices_of(client, "web")
    meta = found["metadata"]
    assert meta["name"].startswith("web-")
    assert meta["labels"] == {
        "tier": "front",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "name": "web",
            "uid": svc["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert found["addressType"] == "IPv4"
    assert found["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]  # the named target port
    by_pod = endpoints([found])
    assert sorted(by_pod) == ["web-0", "web-1"]
    for name, endpoint in by_pod.items():
        live = await client.get(PODS, name, NS)
        assert endpoint["addresses"] == [live["status"]["podIP"]]
        assert endpoint["conditions"] == {"ready": True, "serving": True, "terminating": False}
        assert endpoint["nodeName"] == live["spec"]["nodeName"]
        assert endpoint["zone"] in ("z1", "z2")
        assert endpoint["targetRef"]["uid"] == live["metadata"]["uid"]
    assert by_pod["web-0"]["hostname"] == "web-0"
    assert "hostname" not in by_pod["web-1"]


@pytest.mark.sandbox(termination_delay=1.0)
async def test_endpoint_conditions_follow_readiness_and_termination(
    sandbox: Sandbox, client: KubeClient
) -> None:
    await client.create(SERVICES, service(selector={"app": "web"}, clusterIP="None"))
    await client.create(PODS, pod("web-0"))
    await sandbox.settle()
    (found,) = await slices_of(client, "web")
    assert found["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
    assert sandbox.cluster is not None
    await sandbox.cluster.set_ready(NS, "web-0", False)
    await sandbox.settle()
    conditions = endpoints(await slices_of(client, "web"))["web-0"]["conditions"]
    assert conditions == {"ready": False, "serving": False, "terminating": False}
    await sandbox.cluster.set_ready(NS, "web-0", True)
    await client.delete(PODS, "web-0", NS)  # graceful: terminating for termination_delay

    async def terminating() -> bool:
        found = endpoints(await slices_of(client, "web")).get("web-0") or {}
        return found.get("conditions") == {"ready": False, "serving": True, "terminating": True}

    await eventually_async(terminating, within=0.9)
    await sandbox.settle()
    (found,) = await slices_of(client, "web")  # a Service without pods keeps an empty slice
    assert (found["endpoints"], found["ports"]) == ([], [])


async def test_slices_follow_the_selector_and_go_with_the_service(
    sandbox: Sandbox, client: KubeClient
) -> None:
    await client.create(SERVICES, service(selector={"app": "web"}))
    await client.create(PODS, pod("web-0"))
    await client.create(PODS, pod("db-0", app="db"))
    await sandbox.settle()
    (before,) = await slices_of(client, "web")
    await client.patch(SERVICES, "web", {"spec": {"selector": {"app": "db"}}}, NS)
    await sandbox.settle()
    (after,) = await slices_of(client, "web")
    assert after["metadata"]["name"] == before["metadata"]["name"]  # updated in place
    assert sorted(endpoints([after])) == ["db-0"]
    await client.delete(SLICES, after["metadata"]["name"], NS)  # a managed slice deleted by hand comes back
    await sandbox.settle()
    assert sorted(endpoints(await slices_of(client, "web"))) == ["db-0"]
    await client.patch(SERVICES, "web", {"spec": {"selector": None}}, NS)  # its owner takes over
    await sandbox.settle()
    assert await slices_of(client, "web") == []
    await client.patch(SERVICES, "web", {"spec": {"selector": {"app": "web"}}}, NS)
    await sandbox.settle()
    assert len(await slices_of(client, "web")) == 1
    await client.delete(SERVICES, "web", NS)
    await sandbox.settle()
    assert await slices_of(client, "web") == []


async def test_a_service_without_selector_keeps_the_slices_its_owner_writes(
    sandbox: Sandbox, client: KubeClient
) -> None:
    await client.create(SERVICES, service("pool"))
    mine = {
        "metadata": {
            "name": "pool-1",
            "namespace": NS,
            "labels": {"kubernetes.io/service-name": "pool", "endpointslice.kubernetes.io/managed-by": "me"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }
    await client.create(SLICES, mine)
    await client.create(PODS, pod("web-0"))
    await sandbox.settle()
    (found,) = await slices_of(client, "pool")
    assert found["metadata"]["name"] == "pool-1"
    assert found["endpoints"] == mine["endpoints"]
