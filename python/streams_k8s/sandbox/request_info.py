"""What a request addresses, as the API server's request-info resolver reads it from the path, the
method and the query: the verb, the resource and the object. Fault rules match on it and the
request log records it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# /api/v1/namespaces/{name}/{these} are subresources of a namespace, not namespaced resources.
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass
class RequestInfo:
    """What a request addresses, as the API server's request-info resolver sees it."""

    verb: str
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None
    path: str = ""


def parse_path(method: str, path: str, query: Any) -> RequestInfo | None:
    """The resource a /api or /apis path addresses, or None for other paths."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch = query.get("watch") in ("1", "true", "True")
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    verb = _VERBS.get(method, method.lower())
    if name is None and verb == "get":
        verb = "watch" if watch else "list"
    elif name is None and verb == "delete":
        verb = "deletecollection"
    elif watch and verb == "get":
        verb = "watch"
    return RequestInfo(verb, group, version, rest[0], sub, namespace, name, path)
