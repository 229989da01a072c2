"""The pod index the PE controller and the REST API share: by owner, and waiting for a pod's state."""

from __future__ import annotations

import asyncio
from typing import Any

from streams_k8s.controller.pes.pods_by_owner import PodsByOwner
from streams_k8s.k8s.objects import Object
from streams_k8s.k8s.store import Store


class Pods:
    """The two things PodsByOwner reads of an informer: its store and its event handlers."""

    def __init__(self) -> None:
        self.store = Store()
        self.handlers: list[Any] = []

    def add_handler(self, handler: Any) -> None:
        self.handlers.append(handler)

    def event(self, kind: str, old: Object | None, new: Object | None) -> None:
        for handler in self.handlers:
            handler(kind, old, new)


def pod(name: str, owner: str, phase: str, svc: str = "pe") -> Object:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"svc": svc},
            "ownerReferences": [{"uid": owner, "controller": True}],
        },
        "status": {"phase": phase},
    }


def running(pods: list[Object]) -> bool:
    return any(p["status"]["phase"] == "Running" for p in pods)


async def test_a_wait_ends_when_the_pod_shows_running_or_after_the_time_limit() -> None:
    informer = Pods()
    index = PodsByOwner(informer)  # type: ignore[arg-type]
    pending = pod("a-0", "pe-a", "Pending")
    informer.event("add", None, pending)
    informer.event("add", None, pod("z-0", "pe-a", "Running", svc="zombie"))  # not a PE pod
    assert [p["metadata"]["name"] for p in index.live_pe_pods("pe-a")] == ["a-0"]

    waiting = asyncio.create_task(index.live_pe_pods_when("pe-a", running, within=5))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    informer.event("update", pending, pod("a-0", "pe-a", "Running"))
    assert running(await asyncio.wait_for(waiting, 1))

    # Nothing comes for another owner: its pods as they are, after the limit.
    assert await index.live_pe_pods_when("pe-b", running, within=0.05) == []
