"""Server-side apply (`application/apply-patch+yaml`): field ownership per manager in
`metadata.managedFields`, conflicts (409 unless `force`), removal of fields a manager stops applying.

Simpler than Kubernetes: only apply operations record ownership (PUT and other patches do not add
"Update" entries); lists are atomic except the built-in lists merged by key (containers by name,
...) and `finalizers`, which merges as a set.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.patch import MERGE_KEYS

Path = tuple[str, ...]
# Fields the server owns: never part of a manager's field set.
_SERVER_META = {
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
}


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        return "containerPort" if any(isinstance(i, dict) and "containerPort" in i for i in items) else "port"
    return MERGE_KEYS.get(field)


def field_set(config: dict[str, Any], status: bool) -> set[Path]:
    """The leaf paths a configuration sets (`f:` keys, `k:` keyed list items, `v:` set members)."""
    paths: set[Path] = set()
    for key, value in config.items():
        if key in ("apiVersion", "kind") or (key == "status") != status:
            continue
        if key == "metadata":
            value = {k: v for k, v in (value or {}).items() if k not in _SERVER_META}
            if not value:
                continue
        _collect(value, (f"f:{key}",), key, paths)
    return paths


def _collect(value: Any, path: Path, field: str, paths: set[Path]) -> None:
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            _collect(sub, (*path, f"f:{key}"), key, paths)
    elif isinstance(value, list) and field == "finalizers":
        paths.update((*path, f"v:{orjson.dumps(v).decode()}") for v in value)
    elif (
        isinstance(value, list)
        and value
        and (merge := _merge_key(field, value))
        and all(isinstance(i, dict) and merge in i for i in value)
    ):
        for item in value:
            item_path = (*path, f"k:{orjson.dumps({merge: item[merge]}).decode()}")
            paths.add((*item_path, "."))
            for key, sub in item.items():
                _collect(sub, (*item_path, f"f:{key}"), key, paths)
    else:
        paths.add(path)


def encode(paths: set[Path]) -> dict[str, Any]:
    """A field set in the `FieldsV1` form of managedFields."""
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(part, {})
    return root


def decode(fields: dict[str, Any], prefix: Path = ()) -> set[Path]:
    paths: set[Path] = set()
    for key, sub in fields.items():
        if key == ".":
            paths.add((*prefix, "."))
        elif sub:
            paths |= decode(sub, (*prefix, key))
        else:
            paths.add((*prefix, key))
    return paths


def _step(node: Any, part: str) -> Any:
    if part.startswith("f:") and isinstance(node, dict):
        return node.get(part[2:])
    if part.startswith("k:") and isinstance(node, list):
        key = orjson.loads(part[2:])
        return next(
            (i for i in node if isinstance(i, dict) and all(i.get(k) == v for k, v in key.items())), None
        )
    if part.startswith("v:") and isinstance(node, list):
        value = orjson.loads(part[2:])
        return value if value in node else None
    return node if part == "." else None


def value_at(obj: Any, path: Path) -> Any:
    node = obj
    for part in path:
        node = _step(node, part)
        if node is None:
            return None
    return node


def remove(obj: dict[str, Any], path: Path) -> None:
    """Remove the field at `path` (a keyed item when the path ends with "."), if present."""
    if path[-1] == ".":
        path = path[:-1]
    parent = value_at(obj, path[:-1]) if len(path) > 1 else obj
    last = path[-1]
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif isinstance(parent, list):
        target = _step(parent, last)
        if target is not None:
            parent.remove(target)


def merge(live: Any, config: Any, field: str = "") -> Any:
    """Apply `config` onto `live`: objects merge, keyed lists merge by key, the rest is replaced."""
    if isinstance(config, dict) and isinstance(live, dict):
        out = dict(live)
        for key, value in config.items():
            out[key] = merge(live.get(key), value, key)
        return out
    if isinstance(config, list) and isinstance(live, list):
        if field == "finalizers":
            return live + [v for v in config if v not in live]
        key = _merge_key(field, config)
        if key and all(isinstance(i, dict) and key in i for i in config + live):
            out_list = [copy.deepcopy(i) for i in live]
            for item in config:
                index = next((n for n, i in enumerate(out_list) if i.get(key) == item[key]), None)
                if index is None:
                    out_list.append(copy.deepcopy(item))
                else:
                    out_list[index] = merge(out_list[index], item, field)
            return out_list
    return copy.deepcopy(config)


def apply(
    live: dict[str, Any],
    config: dict[str, Any],
    manager: str,
    force: bool,
    api_version: str,
    now: str,
    status: bool,
) -> dict[str, Any]:
    """The object after `manager` applies `config` to `live` (raises 409 on conflicts unless forced)."""
    applied = field_set(config, status)
    entries = [dict(e) for e in live["metadata"].get("managedFields") or []]
    subresource = "status" if status else None
    mine = next(
        (
            e
            for e in entries
            if e.get("manager") == manager
            and e.get("operation") == "Apply"
            and e.get("subresource") == subresource
        ),
        None,
    )
    others = [e for e in entries if e is not mine]
    conflicts = []
    for entry in others:
        owned = decode(entry.get("fieldsV1") or {})
        for path in sorted(applied & owned):
            if path[-1] != "." and value_at(live, path) != value_at(config, path):
                conflicts.append((path, entry.get("manager", "")))
    if conflicts and not force:
        causes = [
            {"reason": "FieldManagerConflict", "message": f'conflict with "{who}"', "field": _dotted(p)}
            for p, who in conflicts
        ]
        raise ApiError(409, _conflict_message(conflicts), causes=causes)
    previous = decode(mine.get("fieldsV1") or {}) if mine else set()
    kept_by_others = set().union(*(decode(e.get("fieldsV1") or {}) for e in others)) if others else set()
    result = copy.deepcopy(live)
    for path in sorted(previous - applied - kept_by_others, key=len, reverse=True):
        remove(result, path)
    body = {k: v for k, v in config.items() if k not in ("apiVersion", "kind")}
    if "metadata" in body:
        body["metadata"] = {k: v for k, v in body["metadata"].items() if k not in _SERVER_META}
    result = dict(merge(result, body))
    if force:
        for entry in others:
            remaining = decode(entry.get("fieldsV1") or {}) - applied
            entry["fieldsV1"] = encode(remaining)
        others = [e for e in others if e["fieldsV1"]]
    record = {
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": encode(applied),
    }
    if status:
        record["subresource"] = "status"
    result["metadata"]["managedFields"] = [*others, record]
    return result


def _dotted(path: Path) -> str:
    return "".join(f".{p[2:]}" if p.startswith("f:") else f"[{p[2:]}]" for p in path if p != ".")


def _conflict_message(conflicts: list[tuple[Any, str]]) -> str:
    """As kube-apiserver words it: the one conflict, or the conflicting paths by manager."""
    if len(conflicts) == 1:
        path, who = conflicts[0]
        return f'Apply failed with 1 conflict: conflict with "{who}": {_dotted(path)}'
    lines = []
    for manager in sorted({who for _, who in conflicts}):
        lines.append(f'conflicts with "{manager}":')
        lines += [f"- {_dotted(path)}" for path, who in conflicts if who == manager]
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
