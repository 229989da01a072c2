"""Deleting an object, in the API server's steps: refuse what may not go (protected namespaces,
failed preconditions), read the propagation policy into finalizers, choose the grace period, mark
the object (deletionTimestamp), and remove it once nothing holds it (finalizers, grace)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from streams_k8s.sandbox.clock import stamp
from streams_k8s.sandbox.errors import ApiError, cause, conflict, invalid
from streams_k8s.sandbox.object_meta import check_uid
from streams_k8s.sandbox.resources import ResourceType

PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")
_NAMESPACES = ("", "namespaces")
_POLICIES = (None, "Background", "Foreground", "Orphan")


def check_allowed(rt: ResourceType, obj: dict[str, Any], options: dict[str, Any]) -> None:
    """403 for a protected namespace; 409 when a precondition (uid, resourceVersion) fails."""
    meta = obj["metadata"]
    name = meta["name"]
    if rt.key == _NAMESPACES and name in PROTECTED_NAMESPACES:
        raise ApiError(
            403,
            f'namespaces "{name}" is forbidden: this namespace may not be deleted',
            reason="Forbidden",
            name=name,
            kind="namespaces",
        )
    pre = options.get("preconditions") or {}
    check_uid(rt, name, pre.get("uid"), meta)
    if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
        raise conflict(
            rt.plural,
            name,
            rt.group,
            "Precondition failed: ResourceVersion in precondition: "
            f"{pre['resourceVersion']}, ResourceVersion in object meta: {meta['resourceVersion']}",
        )


def finalizers(obj: dict[str, Any], options: dict[str, Any]) -> list[str]:
    """The object's finalizers with the one its propagation policy adds (Foreground, Orphan)."""
    policy = options.get("propagationPolicy")
    if policy is None and options.get("orphanDependents") is not None:
        policy = "Orphan" if options["orphanDependents"] else "Background"
    if policy not in _POLICIES:
        raise invalid(
            "DeleteOptions",
            "",
            [
                cause(
                    "propagationPolicy",
                    f'Unsupported value: "{policy}": supported values: "Foreground", "Background", "Orphan"',
                    "FieldValueNotSupported",
                )
            ],
        )
    found = list(obj["metadata"].get("finalizers") or [])
    if policy == "Foreground" and "foregroundDeletion" not in found:
        found.append("foregroundDeletion")
    if policy == "Orphan" and "orphan" not in found:
        found.append("orphan")
    return found


def grace_period(rt: ResourceType, obj: dict[str, Any], options: dict[str, Any], graceful_pods: bool) -> int:
    """Seconds the object stays before removal: a running pod's (when the kubelet terminates pods
    gracefully) from the options or its spec; anything else goes at once."""
    graceful = (
        rt.key == ("", "pods")
        and graceful_pods
        and obj.get("spec", {}).get("nodeName")
        and obj.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    )
    if not graceful:
        return 0
    grace = options.get("gracePeriodSeconds")
    chosen: int = obj["spec"].get("terminationGracePeriodSeconds", 30) if grace is None else grace
    return chosen


def marked(rt: ResourceType, obj: dict[str, Any], finalizers: list[str], grace: int) -> dict[str, Any]:
    """The object marked for deletion (a new dict): deletionTimestamp and grace period (a second
    delete may only shorten it), its finalizers, a Terminating namespace."""
    meta = obj["metadata"]
    new = dict(obj)
    new_meta = new["metadata"] = dict(meta)
    if finalizers:
        new_meta["finalizers"] = finalizers
    if not meta.get("deletionTimestamp"):
        new_meta["deletionTimestamp"] = stamp(datetime.now(UTC) + timedelta(seconds=grace))
        new_meta["deletionGracePeriodSeconds"] = grace
        if rt.generation:
            new_meta["generation"] = meta.get("generation", 1) + 1
    else:
        new_meta["deletionGracePeriodSeconds"] = min(grace, meta.get("deletionGracePeriodSeconds", grace))
    if rt.key == _NAMESPACES:
        new["status"] = {**new.get("status", {}), "phase": "Terminating"}
    return new


def may_remove(rt: ResourceType, obj: dict[str, Any]) -> bool:
    """Whether a marked object goes now: no finalizers (a namespace's spec ones too), no grace left."""
    meta = obj["metadata"]
    if meta.get("finalizers"):
        return False
    if rt.key == _NAMESPACES and (obj.get("spec") or {}).get("finalizers"):
        return False
    return not meta.get("deletionGracePeriodSeconds")
