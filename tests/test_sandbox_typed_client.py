"""The sandbox through kubernetes_asyncio's generated APIs and its Watch helper, the way a
controller written against a real cluster would call it."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio import watch
from kubernetes_asyncio.client import (
    ApiClient,
    CoordinationV1Api,
    CoreV1Api,
    CustomObjectsApi,
    V1Binding,
    V1ConfigMap,
    V1DeleteOptions,
    V1ObjectMeta,
    V1ObjectReference,
)
from kubernetes_asyncio.client.exceptions import ApiException

from sandbox_crds import GROUP, widget, widget_crd
from streams_k8s.sandbox import Sandbox

pytestmark = pytest.mark.sandbox(simulate=False)


def cm(name: str, **labels: str) -> V1ConfigMap:
    return V1ConfigMap(metadata=V1ObjectMeta(name=name, labels=labels), data={"k": "v"})


async def test_watch_helper_streams_typed_events(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    core = CoreV1Api(sandbox_api)
    await core.create_namespaced_config_map("default", cm("before"))

    async def writer() -> None:
        await sandbox.wait_for_watches(1, "configmaps")
        await core.create_namespaced_config_map("default", cm("after"))
        await core.delete_namespaced_config_map("before", "default")

    task = asyncio.create_task(writer())
    seen = []
    async with watch.Watch() as w:
        async for event in w.stream(core.list_namespaced_config_map, "default", timeout_seconds=5):
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 3:
                break
    await task
    assert seen == [("ADDED", "before"), ("ADDED", "after"), ("DELETED", "before")]


async def test_watch_helper_raises_410_for_a_compacted_resource_version(
    sandbox: Sandbox, sandbox_api: ApiClient
) -> None:
    core = CoreV1Api(sandbox_api)
    created = await core.create_namespaced_config_map("default", cm("x"))
    await core.patch_namespaced_config_map("x", "default", {"data": {"k": "w"}})
    sandbox.faults.compact("configmaps")

    async def watch_from_old_version() -> None:
        async with watch.Watch() as w:
            rv = created.metadata.resource_version
            async for _ in w.stream(core.list_namespaced_config_map, "default", resource_version=rv):
                pass

    with pytest.raises(ApiException) as caught:
        await watch_from_old_version()
    assert caught.value.status == 410


async def test_deletecollection_and_dry_run(sandbox_api: ApiClient) -> None:
    core = CoreV1Api(sandbox_api)
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        await core.create_namespaced_config_map("default", cm(name, tier=tier))
    dry = await core.create_namespaced_config_map("default", cm("ghost"), dry_run="All")
    assert dry.metadata.uid
    await core.delete_namespaced_config_map("a", "default", dry_run="All")
    names = [c.metadata.name for c in (await core.list_namespaced_config_map("default")).items]
    assert names == ["a", "b", "c"]
    await core.delete_collection_namespaced_config_map("default", label_selector="tier=web")
    names = [c.metadata.name for c in (await core.list_namespaced_config_map("default")).items]
    assert names == ["c"]


async def test_binding_and_eviction_subresources(sandbox_api: ApiClient) -> None:
    core = CoreV1Api(sandbox_api)
    body = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}
    await core.create_namespaced_pod("default", body)
    binding = V1Binding(metadata=V1ObjectMeta(name="p"), target=V1ObjectReference(kind="Node", name="node-x"))
    await core.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)
    assert (await core.read_namespaced_pod("p", "default")).spec.node_name == "node-x"
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_pod_binding("p", "default", binding)
    assert caught.value.status == 409
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p", "namespace": "default"},
    }
    await core.create_namespaced_pod_eviction("p", "default", eviction, _preload_content=False)
    assert (await core.list_namespaced_pod("default")).items == []


async def test_leases_for_leader_election(sandbox_api: ApiClient) -> None:
    coordination = CoordinationV1Api(sandbox_api)
    lease = {
        "metadata": {"name": "streams-controller"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
    }
    created = await coordination.create_namespaced_lease("default", lease)
    created.spec.holder_identity = "b"
    replaced = await coordination.replace_namespaced_lease("streams-controller", "default", created)
    assert replaced.spec.holder_identity == "b"
    created.spec.holder_identity = "c"  # still carries the old resourceVersion
    with pytest.raises(ApiException) as caught:
        await coordination.replace_namespaced_lease("streams-controller", "default", created)
    assert caught.value.status == 409


async def test_custom_objects_api_with_status_and_scale(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    sandbox.install_crd(widget_crd())
    custom = CustomObjectsApi(sandbox_api)
    await custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w", replicas=1))
    merge = "application/merge-patch+json"
    status = {"status": {"phase": "Ready", "replicas": 1}}
    await custom.patch_namespaced_custom_object_status(
        GROUP, "v1", "default", "widgets", "w", status, _content_type=merge
    )
    scale = {"spec": {"replicas": 3}}
    await custom.patch_namespaced_custom_object_scale(
        GROUP, "v1", "default", "widgets", "w", scale, _content_type=merge
    )
    got = await custom.get_namespaced_custom_object(GROUP, "v1", "default", "widgets", "w")
    assert got["spec"]["replicas"] == 3
    assert got["status"]["phase"] == "Ready"
    options = V1DeleteOptions(propagation_policy="Foreground")
    deleted = await custom.delete_namespaced_custom_object(
        GROUP, "v1", "default", "widgets", "w", body=options
    )
    assert deleted["metadata"]["deletionTimestamp"]
    await sandbox.settle()
    listing = await custom.list_namespaced_custom_object(GROUP, "v1", "default", "widgets")
    assert listing["items"] == []
