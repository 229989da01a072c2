"""Paginated lists: a page of matching objects in namespace/name order, and the continue token
that resumes after it at the first page's resourceVersion (410 Expired once compacted)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import orjson

from streams_k8s.sandbox.errors import ApiError, bad_request
from streams_k8s.sandbox.selectors import FieldMatcher, LabelSelector
from streams_k8s.sandbox.store import ObjKey


def page(
    objects: Mapping[ObjKey, dict[str, Any]],
    ns: str | None,
    labels: LabelSelector | None,
    fields: FieldMatcher | None,
    limit: int,
    start: ObjKey | None,
) -> tuple[list[dict[str, Any]], ObjKey | None, int]:
    """Up to `limit` (0: all) matching objects after `start`, the last one's key, how many more match."""
    keys = sorted(k for k in objects if (ns is None or k[0] == ns) and (start is None or k > start))
    out: list[dict[str, Any]] = []
    last: ObjKey | None = None
    remaining = 0
    for key in keys:
        obj = objects[key]
        if labels is not None and not labels.matches(obj["metadata"].get("labels")):
            continue
        if fields is not None and not fields(obj):
            continue
        if limit and len(out) >= limit:
            remaining += 1
            continue
        out.append(obj)
        last = key
    return out, last, remaining


def encode_continue(rv: int, key: ObjKey) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"rv": rv, "ns": key[0], "name": key[1]})).decode()


def decode_continue(token: str, compacted_rv: int) -> tuple[int, ObjKey]:
    """The list's resourceVersion and the key to resume after; 410 when the history is gone."""
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        list_rv, start = int(data["rv"]), (str(data["ns"]), str(data["name"]))
    except (ValueError, KeyError, TypeError):
        raise bad_request(f"invalid continue token {token!r}") from None
    if list_rv < compacted_rv:
        raise ApiError(
            410,
            "The provided continue parameter is too old to display a consistent "
            "list result. You can start a new list without the continue parameter.",
            reason="Expired",
        )
    return list_rv, start
