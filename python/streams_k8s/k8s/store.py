"""The informer cache: the latest version of every watched object, keyed by namespace/name."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from streams_k8s.k8s.objects import Object, ObjectKey, meta


class Store:
    """A read-mostly map of objects. Readers must treat returned dicts as immutable."""

    def __init__(self) -> None:
        self._objects: dict[ObjectKey, Object] = {}

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

    def select(
        self, namespace: str | None = None, where: Callable[[Object], bool] | None = None
    ) -> list[Object]:
        return [
            obj
            for key, obj in self._objects.items()
            if (namespace is None or key.namespace == namespace) and (where is None or where(obj))
        ]

    def select_by_labels(self, labels: dict[str, str], namespace: str | None = None) -> list[Object]:
        def matches(obj: Object) -> bool:
            have = meta(obj).get("labels") or {}
            return all(have.get(k) == v for k, v in labels.items())

        return self.select(namespace, matches)

    def put(self, key: ObjectKey, obj: Object) -> Object | None:
        """Store ``obj``; return the version it replaced."""
        old = self._objects.get(key)
        self._objects[key] = obj
        return old

    def delete(self, key: ObjectKey) -> Object | None:
        return self._objects.pop(key, None)

    def swap(self, objects: dict[ObjectKey, Object]) -> dict[ObjectKey, Object]:
        """Replace the whole content at once (after a relist); return the previous content."""
        previous, self._objects = self._objects, objects
        return previous
