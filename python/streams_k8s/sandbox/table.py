"""Server-side `Table` rendering (what `kubectl get` asks for), for lists, gets and watches.

Columns are those kube-apiserver prints (`printer_columns`). Rows carry the object as
`includeObject` asks (None, Metadata: the default, or Object). A watch sends the column definitions
with its first event only, as the API server does; kubectl keeps using the ones it has.
"""

from __future__ import annotations

from typing import Any

import orjson

from streams_k8s.sandbox.errors import bad_request
from streams_k8s.sandbox.printer_columns import Column, columns
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import Converter, WatchEvent, view

TABLE_API_VERSION = "meta.k8s.io/v1"
INCLUDE_OBJECT = ("None", "Metadata", "Object")


def include_object(query: Any) -> str:
    """The `includeObject` parameter (Metadata when absent); 400 for an unknown value."""
    value = query.get("includeObject") or "Metadata"
    if value not in INCLUDE_OBJECT:
        raise bad_request(f'unrecognized includeObject value: "{value}"')
    return str(value)


def _row_object(obj: dict[str, Any], include: str, api_version: str, convert: Converter | None) -> Any:
    if include == "Object":
        return view(obj, api_version, convert)
    if include == "Metadata":
        return {"kind": "PartialObjectMetadata", "apiVersion": TABLE_API_VERSION, "metadata": obj["metadata"]}
    return None


def _row(
    specs: list[Column], obj: dict[str, Any], include: str, api_version: str, convert: Converter | None
) -> dict[str, Any]:
    # `object: null` for None, as kube-apiserver's TableRow (the field has no omitempty)
    return {"cells": [c.cell(obj) for c in specs], "object": _row_object(obj, include, api_version, convert)}


def table(
    rt: ResourceType,
    version: str,
    objects: list[dict[str, Any]],
    list_meta: dict[str, Any],
    include: str = "Metadata",
    convert: Converter | None = None,
) -> dict[str, Any]:
    """The Table of `objects` (stored form); `list_meta` is the list's metadata (resourceVersion,
    continue, remainingItemCount), carried over as the API server does."""
    specs = columns(rt, version)
    api_version = rt.api_version(version)
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": list_meta,
        "columnDefinitions": [c.definition() for c in specs],
        "rows": [_row(specs, obj, include, api_version, convert) for obj in objects],
    }


class TableRows:
    """How a Table watch encodes events: one row per event, the column definitions in the first
    event only. The row of an event is encoded once and shared by every watch of the same form."""

    def __init__(self, rt: ResourceType, version: str, include: str, convert: Converter | None) -> None:
        self.specs = columns(rt, version)
        self.api_version = rt.api_version(version)
        self.include = include
        self.convert = convert
        self._key = f"table {self.api_version} {include}"
        self._headers_sent = False

    def line(self, type_: str, event: WatchEvent) -> bytes:
        if not self._headers_sent:
            self._headers_sent = True
            body = self._table(event, [c.definition() for c in self.specs])
        else:
            body = event.cached(self._key, lambda: self._table(event, None))
        return b'{"type":"' + type_.encode() + b'","object":' + body + b"}\n"

    def _table(self, event: WatchEvent, definitions: list[dict[str, Any]] | None) -> bytes:
        row = _row(self.specs, event.obj, self.include, self.api_version, self.convert)
        return orjson.dumps(
            {
                "kind": "Table",
                "apiVersion": TABLE_API_VERSION,
                "metadata": {"resourceVersion": str(event.rv)},
                "columnDefinitions": definitions,
                "rows": [row],
            }
        )
