"""Patches: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

The strategic merge patch knows the merge keys of the built-in lists the system uses (containers by
name, env by name, ports by port number, conditions by type, ...); other lists are replaced, as they
are for fields without a `patchStrategy` in Kubernetes.
"""

from __future__ import annotations

import copy
from typing import Any

from streams_k8s.sandbox.errors import ApiError, bad_request

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# List field name -> merge key, for strategic merge patch of built-in kinds.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "volumes": "name",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
}
# Lists of scalars merged as sets.
_SET_LISTS = {"finalizers"}


def apply_patch(content_type: str, current: dict[str, Any], patch: Any, strategic: bool) -> Any:
    """`current` patched as the content type says (strategic merge only where `strategic`); 415
    for another content type."""
    if content_type == MERGE_PATCH:
        if not isinstance(patch, dict):
            raise bad_request("a merge patch must be a JSON object")
        return merge_patch(current, patch)
    if content_type == JSON_PATCH:
        return json_patch(current, patch)
    if content_type == STRATEGIC_PATCH and strategic:
        if not isinstance(patch, dict):
            raise bad_request("a strategic merge patch must be a JSON object")
        return strategic_merge_patch(current, patch)
    allowed = [JSON_PATCH, MERGE_PATCH] + ([STRATEGIC_PATCH] if strategic else [])
    raise ApiError(
        415,
        "the body of the request was in an unknown format - accepted media types "
        f"include: {', '.join(allowed)}",
    )


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 with `test`; a failed test or bad path is a 422 as in the API server."""
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation: {op!r}")
        kind = op["op"]
        if kind == "add":
            doc = _add(doc, op["path"], copy.deepcopy(_value(op)))
        elif kind == "remove":
            doc = _remove(doc, op["path"])
        elif kind == "replace":
            doc = _remove(doc, op["path"])
            doc = _add(doc, op["path"], copy.deepcopy(_value(op)))
        elif kind == "move":
            value = _get(doc, op["from"])
            doc = _remove(doc, op["from"])
            doc = _add(doc, op["path"], value)
        elif kind == "copy":
            doc = _add(doc, op["path"], copy.deepcopy(_get(doc, op["from"])))
        elif kind == "test":
            if _get(doc, op["path"]) != _value(op):  # the API server says no more than this
                raise ApiError(422, "the server rejected our request due to an error in our request")
        else:
            raise bad_request(f"unknown json patch operation {kind!r}")
    return doc


def _value(op: dict[str, Any]) -> Any:
    if "value" not in op:
        raise bad_request(f"json patch operation {op['op']!r} on {op['path']!r} needs a value")
    return op["value"]


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f"invalid json pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _missing(path: str) -> ApiError:
    return ApiError(422, f"the server rejected our request: path {path!r} does not exist")


def _parent(doc: Any, path: str) -> tuple[Any, str]:
    parts = _pointer(path)
    if not parts:
        raise ApiError(422, "json patch cannot operate on the whole document")
    cur = doc
    for part in parts[:-1]:
        cur = _step(cur, part, path)
    return cur, parts[-1]


def _step(cur: Any, part: str, path: str) -> Any:
    if isinstance(cur, dict):
        if part not in cur:
            raise _missing(path)
        return cur[part]
    if isinstance(cur, list):
        idx = _index(part, len(cur) - 1, path)
        return cur[idx]
    raise _missing(path)


def _index(part: str, limit: int, path: str) -> int:
    if not part.isdigit():
        raise _missing(path)
    idx = int(part)
    if idx > limit:
        raise _missing(path)
    return idx


def _get(doc: Any, path: str) -> Any:
    cur = doc
    for part in _pointer(path):
        cur = _step(cur, part, path)
    return cur


def _add(doc: Any, path: str, value: Any) -> Any:
    if path == "":
        return value
    parent, last = _parent(doc, path)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            parent.insert(_index(last, len(parent), path), value)
    else:
        raise _missing(path)
    return doc


def _remove(doc: Any, path: str) -> Any:
    parent, last = _parent(doc, path)
    if isinstance(parent, dict):
        if last not in parent:
            raise _missing(path)
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(last, len(parent) - 1, path)]
    else:
        raise _missing(path)
    return doc


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge patch for built-in kinds (directives `$patch`, `$deleteFromPrimitiveList`,
    `$setElementOrder` and `$retainKeys` are understood; ordering directives are not applied)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(key, result[key], value)
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(field: str, current: list[Any], patch: list[Any]) -> list[Any]:
    if field in _SET_LISTS:
        return current + [v for v in patch if v not in current]
    key = MERGE_KEYS.get(field)
    if field == "ports":
        key = "containerPort" if any("containerPort" in p for p in patch if isinstance(p, dict)) else "port"
    if key is None or not all(isinstance(p, dict) for p in patch):
        return copy.deepcopy(patch)
    merged = [copy.deepcopy(c) for c in current]
    for item in patch:
        directive = item.get("$patch")
        pos = next(
            (i for i, c in enumerate(merged) if isinstance(c, dict) and c.get(key) == item.get(key)), None
        )
        if directive == "delete":
            if pos is not None:
                del merged[pos]
        elif pos is None:
            merged.append({k: copy.deepcopy(v) for k, v in item.items() if k != "$patch"})
        else:
            merged[pos] = strategic_merge_patch(merged[pos], item)
    return merged
