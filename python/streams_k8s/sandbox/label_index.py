"""Indexes that keep the simulated controllers linear in cluster size: objects by label pair, and
label selectors by one of their pairs, both per namespace."""

from __future__ import annotations

from collections.abc import Mapping

ObjKey = tuple[str, str]  # (namespace, name)
Pair = tuple[str, str, str]  # (namespace, label key, label value)


class LabelIndex:
    """Objects of one resource by (namespace, key, value) of each of their labels."""

    def __init__(self) -> None:
        self._by_pair: dict[Pair, set[ObjKey]] = {}

    def update(self, key: ObjKey, old: Mapping[str, str] | None, new: Mapping[str, str] | None) -> None:
        for k, v in (old or {}).items():
            bucket = self._by_pair.get((key[0], k, v))
            if bucket is not None:
                bucket.discard(key)
                if not bucket:
                    del self._by_pair[(key[0], k, v)]
        for k, v in (new or {}).items():
            self._by_pair.setdefault((key[0], k, v), set()).add(key)

    def candidates(self, namespace: str, selector: Mapping[str, str]) -> set[ObjKey]:
        """Objects that carry the rarest pair of `selector` (a superset of the matches)."""
        if not selector:
            return set()
        empty: set[ObjKey] = set()
        buckets: list[set[ObjKey]] = [
            self._by_pair.get((namespace, k, v), empty) for k, v in selector.items()
        ]
        smallest: set[ObjKey] = min(buckets, key=len)
        return set(smallest)


class SelectorIndex:
    """Equality selectors (Service.spec.selector) filed under one of their pairs, so the selectors
    that may match a label set are found by looking up that set's pairs."""

    def __init__(self) -> None:
        self._by_pair: dict[Pair, dict[ObjKey, Mapping[str, str]]] = {}
        self._filed: dict[ObjKey, Pair] = {}

    def update(self, key: ObjKey, selector: Mapping[str, str] | None) -> None:
        pair = self._filed.pop(key, None)
        if pair is not None:
            bucket = self._by_pair[pair]
            del bucket[key]
            if not bucket:
                del self._by_pair[pair]
        if selector:
            # File under the pair shared with the fewest other selectors: lookups stay small.
            pair = min(
                ((key[0], k, v) for k, v in selector.items()), key=lambda p: len(self._by_pair.get(p, ()))
            )
            self._by_pair.setdefault(pair, {})[key] = dict(selector)
            self._filed[key] = pair

    def matching(self, namespace: str, labels: Mapping[str, str]) -> list[ObjKey]:
        found = []
        for k, v in labels.items():
            for key, selector in self._by_pair.get((namespace, k, v), {}).items():
                if all(labels.get(sk) == sv for sk, sv in selector.items()):
                    found.append(key)
        return found
