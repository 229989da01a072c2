"""The informer cache: the latest version of every watched object, keyed by namespace/name.

Label indexes (``index_label``) make ``select_by_labels`` on that label a lookup instead of a scan:
a controller that asks for "the pods of job X" on every reconcile of a 1,000-PE job reads ~1 %
of the store, not all of it (client-go's indexers, for the one kind of index we need).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from streams_k8s.k8s.objects import Object, ObjectKey, meta


def _label(obj: Object, key: str) -> str | None:
    value = (meta(obj).get("labels") or {}).get(key)
    return None if value is None else str(value)


class Store:
    """A read-mostly map of objects. Readers must treat returned dicts as immutable."""

    def __init__(self) -> None:
        self._objects: dict[ObjectKey, Object] = {}
        # label key -> label value -> the objects carrying it
        self._indexes: dict[str, dict[str, dict[ObjectKey, Object]]] = {}

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    def get(self, key: ObjectKey) -> Object | None:
        return self._objects.get(key)

    def __iter__(self) -> Iterator[ObjectKey]:
        """The keys, as a snapshot (safe while the store changes)."""
        return iter(list(self._objects))

    def keys(self) -> Iterator[ObjectKey]:
        return iter(self)

    def index_label(self, label: str) -> None:
        """Index the objects by the value of ``label`` (idempotent)."""
        if label not in self._indexes:
            self._indexes[label] = {}
            for key, obj in self._objects.items():
                self._index(label, key, obj)

    def select(
        self, namespace: str | None = None, where: Callable[[Object], bool] | None = None
    ) -> list[Object]:
        return self._select(self._objects, namespace, where)

    def select_by_labels(self, labels: dict[str, str], namespace: str | None = None) -> list[Object]:
        def matches(obj: Object) -> bool:
            have = meta(obj).get("labels") or {}
            return all(have.get(k) == v for k, v in labels.items())

        # the smallest bucket of the indexed labels asked for ("the pod of PE 7 of job J": PE 7's)
        buckets = [self._indexes[k].get(v, {}) for k, v in labels.items() if k in self._indexes]
        if not buckets:
            return self._select(self._objects, namespace, matches)
        return self._select(min(buckets, key=len), namespace, matches if len(labels) > 1 else None)

    @staticmethod
    def _select(
        objects: dict[ObjectKey, Object], namespace: str | None, where: Callable[[Object], bool] | None
    ) -> list[Object]:
        return [
            obj
            for key, obj in objects.items()
            if (namespace is None or key.namespace == namespace) and (where is None or where(obj))
        ]

    def put(self, key: ObjectKey, obj: Object) -> Object | None:
        """Store ``obj``; return the version it replaced."""
        old = self._objects.get(key)
        self._objects[key] = obj
        for label in self._indexes:
            if old is not None:
                self._unindex(label, key, old)
            self._index(label, key, obj)
        return old

    def delete(self, key: ObjectKey) -> Object | None:
        old = self._objects.pop(key, None)
        if old is not None:
            for label in self._indexes:
                self._unindex(label, key, old)
        return old

    def swap(self, objects: dict[ObjectKey, Object], namespace: str | None = None) -> dict[ObjectKey, Object]:
        """Replace the whole content at once (after a relist), or only one namespace's (the store
        of an informer that watches several); return what was replaced."""
        if namespace is not None and any(key.namespace != namespace for key in self._objects):
            previous = {key: obj for key, obj in self._objects.items() if key.namespace == namespace}
            for key in previous:
                self.delete(key)
            for key, obj in objects.items():
                self.put(key, obj)
            return previous
        previous, self._objects = self._objects, objects
        for label in self._indexes:
            self._indexes[label] = {}
            for key, obj in objects.items():
                self._index(label, key, obj)
        return previous

    def _index(self, label: str, key: ObjectKey, obj: Object) -> None:
        value = _label(obj, label)
        if value is not None:
            self._indexes[label].setdefault(value, {})[key] = obj

    def _unindex(self, label: str, key: ObjectKey, obj: Object) -> None:
        value = _label(obj, label)
        if value is None or (bucket := self._indexes[label].get(value)) is None:
            return
        bucket.pop(key, None)
        if not bucket:
            del self._indexes[label][value]
