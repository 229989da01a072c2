"""The informer cache's read API."""

from __future__ import annotations

from typing import Any

from streams_k8s.k8s.objects import ObjectKey
from streams_k8s.k8s.store import Store


def obj(namespace: str, name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name, "labels": labels}}


def test_select_by_namespace_predicate_and_labels() -> None:
    store = Store()
    for o in (obj("a", "p1", job="j1", pe="0"), obj("a", "p2", job="j1", pe="1"), obj("b", "p3", job="j1")):
        store.put(ObjectKey(o["metadata"]["namespace"], o["metadata"]["name"]), o)
    assert len(store) == 3
    assert [o["metadata"]["name"] for o in store.select("a")] == ["p1", "p2"]
    assert [
        o["metadata"]["name"] for o in store.select(where=lambda o: "pe" not in o["metadata"]["labels"])
    ] == ["p3"]
    assert [o["metadata"]["name"] for o in store.select_by_labels({"job": "j1", "pe": "1"})] == ["p2"]
    assert len(store.select_by_labels({"job": "j1"}, namespace="b")) == 1


def test_swap_replaces_everything_at_once_and_iteration_is_a_snapshot() -> None:
    store = Store()
    store.put(ObjectKey("a", "old"), obj("a", "old"))
    previous = store.swap({ObjectKey("a", "new"): obj("a", "new")})
    assert list(previous) == [ObjectKey("a", "old")]
    for key in store:  # deleting while iterating is safe
        store.delete(key)
    assert len(store) == 0
    assert store.get(ObjectKey("a", "new")) is None


def test_a_label_index_answers_like_a_scan_through_puts_relabels_deletes_and_swaps() -> None:
    indexed, scanned = Store(), Store()
    indexed.index_label("job")
    indexed.index_label("svc")  # two indexed labels asked for together: the smaller bucket is read

    def both(action: Any) -> None:
        action(indexed)
        action(scanned)

    def same(labels: dict[str, str], namespace: str | None = None) -> list[str]:
        got = sorted(o["metadata"]["name"] for o in indexed.select_by_labels(labels, namespace))
        assert got == sorted(o["metadata"]["name"] for o in scanned.select_by_labels(labels, namespace))
        return got

    for o in (obj("a", "p1", job="j1", svc="pe"), obj("a", "p2", job="j2"), obj("b", "p3", job="j1")):
        both(lambda s, o=o: s.put(ObjectKey(o["metadata"]["namespace"], o["metadata"]["name"]), o))
    assert same({"job": "j1"}) == ["p1", "p3"]
    assert same({"job": "j1", "svc": "pe"}) == ["p1"]
    assert same({"svc": "pe", "job": "j1"}) == ["p1"]
    assert same({"job": "j1", "svc": "none"}) == []
    assert same({"job": "j1"}, namespace="b") == ["p3"]
    both(lambda s: s.put(ObjectKey("a", "p1"), obj("a", "p1", job="j2")))  # relabelled
    assert same({"job": "j1"}) == ["p3"]
    assert same({"job": "j2"}) == ["p1", "p2"]
    both(lambda s: s.delete(ObjectKey("a", "p2")))
    assert same({"job": "j2"}) == ["p1"]
    both(lambda s: s.swap({ObjectKey("c", "p9"): obj("c", "p9", job="j2")}))
    assert same({"job": "j2"}) == ["p9"]
    assert same({"job": "j1"}) == []
    unlabelled = Store()
    unlabelled.put(ObjectKey("a", "x"), obj("a", "x"))
    unlabelled.index_label("job")  # indexing a filled store
    unlabelled.put(ObjectKey("a", "y"), obj("a", "y", job="j"))
    assert [o["metadata"]["name"] for o in unlabelled.select_by_labels({"job": "j"})] == ["y"]


def test_swapping_one_namespace_keeps_the_others_and_their_index() -> None:
    # the store of an informer that watches several namespaces, each relisted on its own
    store = Store()
    store.index_label("job")
    store.put(ObjectKey("a", "p1"), obj("a", "p1", job="j"))
    store.put(ObjectKey("b", "p2"), obj("b", "p2", job="j"))
    previous = store.swap({ObjectKey("a", "p3"): obj("a", "p3", job="j")}, namespace="a")
    assert list(previous) == [ObjectKey("a", "p1")]
    assert sorted(key.name for key in store) == ["p2", "p3"]
    assert sorted(o["metadata"]["name"] for o in store.select_by_labels({"job": "j"})) == ["p2", "p3"]
