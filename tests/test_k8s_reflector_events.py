"""The reflector's event folding, without a network: RV tracking, store, handlers, 410, pruning."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.informer import Informer, WatchExpired
from streams_k8s.k8s.objects import ObjectKey

PODS = Resource("", "v1", "pods", "Pod")


def pod(name: str, rv: int, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv), **extra},
    }


@pytest.fixture
async def informer() -> Any:
    client = KubeClient(Configuration(host="http://127.0.0.1:9"))  # never contacted
    yield Informer(client, PODS, namespace="ns")
    await client.close()


async def test_events_update_the_store_and_the_resource_version(informer: Informer) -> None:
    seen: list[tuple[str, Any, Any]] = []
    informer.add_handler(lambda kind, old, new: seen.append((kind, old, new)))
    informer.apply_event({"type": "ADDED", "object": pod("a", 5)})
    informer.apply_event({"type": "MODIFIED", "object": pod("a", 6)})
    informer.apply_event(
        {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "9"}}}
    )
    assert informer.resource_version == "9"
    assert informer.store.get(ObjectKey("ns", "a")) == pod("a", 6)
    informer.apply_event({"type": "DELETED", "object": pod("a", 10)})
    assert ObjectKey("ns", "a") not in informer.store
    assert informer.resource_version == "10"
    assert [(k, (o or {}).get("metadata", {}).get("resourceVersion")) for k, o, _ in seen] == [
        ("add", None),
        ("update", "5"),
        ("delete", "10"),
    ]
    assert seen[-1][2] is None


async def test_managed_fields_never_reach_the_cache(informer: Informer) -> None:
    informer.apply_event({"type": "ADDED", "object": pod("a", 1, managedFields=[{"manager": "kubectl"}])})
    cached = informer.store.get(ObjectKey("ns", "a"))
    assert cached is not None
    assert "managedFields" not in cached["metadata"]


async def test_in_stream_410_asks_for_a_relist(informer: Informer) -> None:
    with pytest.raises(WatchExpired):
        informer.apply_event(
            {
                "type": "ERROR",
                "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
            }
        )


async def test_other_in_stream_errors_surface_as_api_errors(informer: Informer) -> None:
    with pytest.raises(ApiError) as raised:
        informer.apply_event(
            {"type": "ERROR", "object": {"kind": "Status", "code": 500, "reason": "InternalError"}}
        )
    assert raised.value.status == 500


async def test_a_failing_handler_does_not_stop_the_others(informer: Informer) -> None:
    seen: list[str] = []

    def broken(*_: Any) -> None:
        raise RuntimeError("bug in a mapper")

    informer.add_handler(broken)
    informer.add_handler(lambda kind, old, new: seen.append(kind))
    informer.apply_event({"type": "ADDED", "object": pod("a", 1)})
    assert seen == ["add"]
    assert ObjectKey("ns", "a") in informer.store


async def test_watch_metrics_count_events(informer: Informer) -> None:
    informer.apply_event({"type": "ADDED", "object": pod("a", 1)})
    informer.apply_event({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "2"}}})
    sample = informer.client.metrics.registry.get_sample_value
    assert sample("streams_k8s_watch_events_total", {"watch": informer.name, "type": "ADDED"}) == 1
    assert sample("streams_k8s_watch_events_total", {"watch": informer.name, "type": "BOOKMARK"}) == 1
    age = sample("streams_k8s_watch_last_event_age_seconds", {"watch": informer.name})
    assert age is not None
    assert 0 <= age < 5
