"""Namespaces and Nodes: DNS-label namespace names and finalizers; node taints, pod CIDRs and the
fields a node keeps once set."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.admission import metadata, names, selectors
from streams_k8s.sandbox.admission.field_errors import FieldErrors, child, go_struct, index

_STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")


def validate_namespace(namespace: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(namespace["metadata"], names.name_is_dns_label, False, errors)
    for i, finalizer in enumerate((namespace.get("spec") or {}).get("finalizers") or []):
        path = index("spec.finalizers", i)
        messages = names.qualified_name(finalizer)
        errors.invalid_each(path, finalizer, messages)
        if not messages and "/" not in finalizer and finalizer not in _STANDARD_FINALIZERS:
            errors.invalid(
                path, finalizer, "name is neither a standard finalizer name nor is it fully qualified"
            )


def validate_namespace_update(namespace: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(namespace["metadata"], old["metadata"], errors)
    validate_namespace(namespace, errors)


def validate_node(node: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(node["metadata"], names.name_is_dns_subdomain, False, errors)
    spec = node.get("spec") or {}
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(spec.get("taints") or []):
        at = index("metadata.taints", i)  # kube-apiserver's own path for them (its ValidateNode)
        key = taint.get("key", "")
        errors.invalid_each(child(at, "key"), key, names.qualified_name(key))
        if taint.get("value"):
            value_messages = names.label_value(taint["value"])
            if value_messages:
                errors.invalid(child(at, "value"), taint["value"], ";".join(value_messages))
        effect = taint.get("effect", "")
        if not effect:
            errors.required(child(at, "effect"))
        else:
            selectors.taint_effect(effect, child(at, "effect"), errors)
        if (key, effect) in seen:
            printed = go_struct(
                Key=key, Value=taint.get("value", ""), Effect=effect, TimeAdded=taint.get("timeAdded")
            )
            errors.duplicate(at, printed, "taints must be unique by key and effect pair")
            continue
        seen.add((key, effect))
    # v1 keeps podCIDRs in step with podCIDR before validation
    cidrs = spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else [])
    for i, cidr in enumerate(cidrs):
        errors.invalid_each(index("spec.podCIDRs", i), cidr, names.cidr(cidr))


def validate_node_update(node: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(node["metadata"], old["metadata"], errors)
    validate_node(node, errors)
    spec, old_spec = node.get("spec") or {}, old.get("spec") or {}
    for field in ("podCIDR", "providerID"):
        if old_spec.get(field) and spec.get(field) != old_spec[field]:
            errors.forbidden(
                child("spec", field), f'node updates may not change {field} except from "" to valid'
            )
