"""The scale subresource (autoscaling/v1 Scale) of workloads and of custom resources that declare
one: replicas read from and written to the paths the resource type names."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.errors import cause, conflict, invalid, not_found
from streams_k8s.sandbox.patch import apply_patch
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType, get_path, set_path
from streams_k8s.sandbox.selectors import selector_to_string
from streams_k8s.sandbox.store import clone


def get_scale(registry: Registry, rt: ResourceType, ns: str | None, name: str) -> dict[str, Any]:
    if rt.scale is None:
        raise not_found(f"{rt.plural}/scale", name, rt.group)
    obj = registry.get(rt, ns, name)
    meta = obj["metadata"]
    status: dict[str, Any] = {"replicas": get_path(obj, rt.scale.status_replicas_path) or 0}
    if rt.scale.label_selector_path:
        selector = get_path(obj, rt.scale.label_selector_path)
        if selector:
            status["selector"] = selector
    elif rt.builtin:
        status["selector"] = selector_to_string(get_path(obj, ".spec.selector"))
    scale_meta = {
        k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
    }
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": get_path(obj, rt.scale.spec_replicas_path) or 0},
        "status": status,
    }


def update_scale(
    registry: Registry,
    rt: ResourceType,
    version: str,
    ns: str | None,
    name: str,
    scale: Any,
    dry_run: bool = False,
) -> dict[str, Any]:
    current = get_scale(registry, rt, ns, name)
    assert rt.scale is not None
    if not isinstance(scale, dict) or not isinstance((scale.get("spec") or {}).get("replicas"), int):
        raise invalid("Scale", name, [cause("spec.replicas", "Required value: an integer")], "autoscaling")
    if scale["spec"]["replicas"] < 0:
        raise invalid(
            "Scale",
            name,
            [
                cause(
                    "spec.replicas",
                    f"Invalid value: {scale['spec']['replicas']}: must be greater than or equal to 0",
                )
            ],
            "autoscaling",
        )
    rv = (scale.get("metadata") or {}).get("resourceVersion")
    if rv and rv != current["metadata"]["resourceVersion"]:
        raise conflict(rt.plural, name, rt.group)
    obj = clone(registry.get(rt, ns, name))
    set_path(obj, rt.scale.spec_replicas_path, scale["spec"]["replicas"])
    registry.update(rt, version, ns, name, obj, dry_run=dry_run)
    return get_scale(registry, rt, ns, name)


def patch_scale(
    registry: Registry,
    rt: ResourceType,
    version: str,
    ns: str | None,
    name: str,
    content_type: str,
    patch: Any,
    dry_run: bool = False,
) -> dict[str, Any]:
    current = get_scale(registry, rt, ns, name)
    patched = apply_patch(content_type, current, patch, strategic=True)
    return update_scale(registry, rt, version, ns, name, patched, dry_run)
