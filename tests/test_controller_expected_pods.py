"""Pod writes awaited from the pod cache: a created pod is not posted again until its event
arrives, a deleted pod stops counting at once, and a note no event confirms expires."""

from __future__ import annotations

from typing import Any

from streams_k8s.api.contract import LAUNCH_COUNT_LABEL
from streams_k8s.controller.pes.expected_pods import ExpectedPods
from streams_k8s.k8s.objects import ObjectKey

PE = ObjectKey("ns", "job-1")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, launch: int, pe_uid: str = "pe-uid", **meta: Any) -> dict[str, Any]:
    owner = {"kind": "ProcessingElement", "name": PE.name, "uid": pe_uid, "controller": True}
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "labels": {LAUNCH_COUNT_LABEL: str(launch)},
            "ownerReferences": [owner],
            **meta,
        }
    }


def test_a_created_pod_is_awaited_until_its_event_arrives() -> None:
    clock = Clock()
    expected = ExpectedPods(ttl=30.0, clock=clock)
    expected.creating(PE, "pe-uid", 2)
    clock.now += 1.0
    assert expected.creation_pending(PE, "pe-uid", 2) == 29.0
    assert expected.creation_pending(PE, "pe-uid", 3) == 0.0  # another launch
    assert expected.creation_pending(PE, "other-uid", 2) == 0.0  # another incarnation
    expected.observe("add", None, pod("p1", 1))  # the old launch's pod: not the one awaited
    assert expected.creation_pending(PE, "pe-uid", 2) > 0
    expected.observe("add", None, pod("p2", 2))
    assert expected.creation_pending(PE, "pe-uid", 2) == 0.0
    assert expected.retained() == {"expected-creates": 0, "expected-deletes": 0}


def test_an_unconfirmed_creation_expires() -> None:
    clock = Clock()
    expected = ExpectedPods(ttl=30.0, clock=clock)
    expected.creating(PE, "pe-uid", 2)
    clock.now += 30.0
    assert expected.creation_pending(PE, "pe-uid", 2) == 0.0
    assert expected.retained()["expected-creates"] == 0


def test_a_deleted_pod_is_hidden_until_the_cache_shows_the_deletion() -> None:
    clock = Clock()
    expected = ExpectedPods(ttl=30.0, clock=clock)
    old, other = pod("old", 1), pod("other", 1)
    expected.deleting(old)
    assert expected.without_deleted([old, other]) == [other]
    expected.observe("update", old, pod("old", 1, deletionTimestamp="2026-11-24T20:00:00Z"))
    assert expected.without_deleted([old, other]) == [old, other]
    assert expected.retained()["expected-deletes"] == 0


def test_a_failed_or_unconfirmed_deletion_shows_the_pod_again() -> None:
    clock = Clock()
    expected = ExpectedPods(ttl=30.0, clock=clock)
    old = pod("old", 1)
    expected.deleting(old)
    expected.delete_failed(old)
    assert expected.without_deleted([old]) == [old]
    expected.deleting(old)
    clock.now += 30.0
    assert expected.without_deleted([old]) == [old]
    assert expected.retained()["expected-deletes"] == 0
