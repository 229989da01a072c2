"""Resources that are converted views of another's storage (events.k8s.io Events are core Events):
how a written object converts to the storage form, how stored objects convert back, and the field
paths a field selector on the view reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streams_k8s.sandbox import event_conversion
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import Converter

# By the view's key: (to storage, from storage).
_VIEWS: dict[tuple[str, str], tuple[Converter, Converter]] = {
    ("events.k8s.io", "events"): (event_conversion.to_core, event_conversion.from_core),
}


def to_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    return _VIEWS[rt.key][0](obj) if rt.storage_of else obj


def converter(rt: ResourceType) -> Converter | None:
    """How stored objects convert to `rt`'s form (None: they are in it)."""
    return _VIEWS[rt.key][1] if rt.storage_of else None


def field_paths(rt: ResourceType) -> Mapping[str, str] | None:
    """Where a field selector's fields are in storage (None: where the resource has them)."""
    return event_conversion.FIELD_PATHS if rt.storage_of else None
