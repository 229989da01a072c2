"""The metadata the API server owns: names generated from generateName, uid, creationTimestamp and
generation set on create; on an update, the checks that tie it to the stored object (name,
resourceVersion, uid) and what it may change (the server's metadata and, but through the status
subresource, the status stay)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

from streams_k8s.sandbox.clock import now
from streams_k8s.sandbox.errors import ApiError, bad_request, cause, conflict, invalid
from streams_k8s.sandbox.resources import ResourceType

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
# Kept from the stored object on every update.
_SERVER_OWNED = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "namespace",
    "name",
)


def generate_name(rt: ResourceType, meta: dict[str, Any], taken: Callable[[str], bool]) -> None:
    """Name an object that has only a generateName prefix (422 with neither)."""
    if meta.get("name"):
        return
    prefix = meta.get("generateName")
    if not prefix:
        required = cause(
            "metadata.name", "Required value: name or generateName is required", "FieldValueRequired"
        )
        raise invalid(rt.kind, "", [required], rt.group)
    for _ in range(16):
        name = prefix + "".join(random.choices(_NAME_CHARS, k=5))
        if not taken(name):
            meta["name"] = name
            return
    raise ApiError(409, f"could not generate a unique name from prefix {prefix!r}", reason="AlreadyExists")


def on_create(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Set what the server owns on a new object (a custom resource's status comes only through its
    status subresource)."""
    meta = obj["metadata"]
    for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"):
        meta.pop(field, None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now()
    if rt.generation:
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    if rt.status_subresource and not rt.builtin:
        obj.pop("status", None)


def check_name(name: str, meta: dict[str, Any]) -> None:
    """400 when the body names another object than the URL."""
    if meta.get("name", name) != name:
        raise bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
        )


def check_update(
    rt: ResourceType, name: str, meta: dict[str, Any], old_meta: dict[str, Any], require_rv: bool
) -> None:
    """An update names the stored object: the URL's name, its resourceVersion (required of custom
    resources unless `require_rv` is off, as for patches), its uid when given."""
    check_name(name, meta)
    rv = meta.get("resourceVersion")
    if rv:
        if rv != old_meta["resourceVersion"]:
            raise conflict(rt.plural, name, rt.group)
    elif require_rv and not rt.builtin:
        raise invalid(
            rt.kind,
            name,
            [cause("metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update")],
            rt.group,
        )
    check_uid(rt, name, meta.get("uid"), old_meta)


def check_uid(rt: ResourceType, name: str, wanted: str | None, meta: dict[str, Any]) -> None:
    """409 when a uid precondition (`wanted`) is not the stored object's."""
    if wanted and wanted != meta["uid"]:
        raise conflict(
            rt.plural,
            name,
            rt.group,
            f"Precondition failed: UID in precondition: {wanted}, UID in object meta: {meta['uid']}",
        )


def scope_update(
    rt: ResourceType, name: str, new: dict[str, Any], old: dict[str, Any], subresource: str | None
) -> dict[str, Any]:
    """The object an update stores, changed only where the write may change it: a status write
    changes status (and records a status apply's managedFields); any other keeps the status of a kind
    with a status subresource, and the server's metadata."""
    meta, old_meta = new["metadata"], old["metadata"]
    if subresource == "status":
        new = {**old, "status": new.get("status")} if "status" in new else dict(old)
        if new.get("status") is None:
            new.pop("status", None)
        new["metadata"] = dict(old_meta)
        if "managedFields" in meta:  # a status apply records its ownership
            new["metadata"]["managedFields"] = meta["managedFields"]
        return new
    if rt.status_subresource:
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
    new["metadata"] = merge_on_update(rt, name, meta, old_meta)
    return new


def merge_on_update(
    rt: ResourceType, name: str, meta: dict[str, Any], old_meta: dict[str, Any]
) -> dict[str, Any]:
    """The written metadata with the server's fields kept; no finalizer may join a deleting object."""
    merged = dict(meta)
    for field in _SERVER_OWNED:
        if field in old_meta:
            merged[field] = old_meta[field]
        else:
            merged.pop(field, None)
    if old_meta.get("deletionTimestamp"):
        added = set(merged.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
        if added:
            forbidden = cause(
                "metadata.finalizers",
                "Forbidden: no new finalizers can be added if the object is being deleted, found new "
                f"finalizers {sorted(added)}",
                "FieldValueForbidden",
            )
            raise invalid(rt.kind, name, [forbidden], rt.group)
    return merged
