"""Keys and small accessors for Kubernetes objects held as plain dicts."""

from __future__ import annotations

from typing import Any, NamedTuple

Object = dict[str, Any]


class ObjectKey(NamedTuple):
    """What a controller reconciles: namespace ("" when cluster-scoped) and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def meta(obj: Object) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def object_key(obj: Object) -> ObjectKey:
    m = meta(obj)
    return ObjectKey(m.get("namespace") or "", m.get("name") or "")


def resource_version(obj: Object) -> str:
    return str(meta(obj).get("resourceVersion") or "")


def prune_for_cache(obj: Object) -> Object:
    """Drop what a controller never reads and what costs the most memory: managedFields."""
    m = obj.get("metadata")
    if isinstance(m, dict):
        m.pop("managedFields", None)
    return obj


def merge_patch_to(current: Any, wanted: Any) -> Any:
    """The JSON merge patch (RFC 7386) that makes ``current`` ``wanted``: keys ``wanted`` lacks are
    removed (null) at every level, since a merge patch otherwise keeps them."""
    if not (isinstance(current, dict) and isinstance(wanted, dict)):
        return wanted
    patch: dict[str, Any] = dict.fromkeys(k for k in current if k not in wanted)
    for key, value in wanted.items():
        patch[key] = merge_patch_to(current[key], value) if key in current else value
    return patch
