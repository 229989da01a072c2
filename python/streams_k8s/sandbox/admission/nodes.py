"""Namespaces and Nodes: DNS-label namespace names and finalizers; node taints, pod CIDRs and the
fields a node keeps once set."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.admission import metadata, names, selectors
from streams_k8s.sandbox.admission.field_errors import FieldErrors, child, index

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
        at = index("spec.taints", i)
        key = taint.get("key", "")
        errors.invalid_each(child(at, "key"), key, names.qualified_name(key))
        if taint.get("value"):
            errors.invalid_each(child(at, "value"), taint["value"], names.label_value(taint["value"]))
        effect = taint.get("effect", "")
        if not effect:
            errors.required(child(at, "effect"))
        else:
            selectors.taint_effect(effect, child(at, "effect"), errors)
        if (key, effect) in seen:
            errors.duplicate(at, f"taints must be unique by key and effect pair: {key}:{effect}")
        seen.add((key, effect))
    for field in ("podCIDR",):
        if spec.get(field):
            errors.invalid_each(child("spec", field), spec[field], names.cidr(spec[field]))
    for i, cidr in enumerate(spec.get("podCIDRs") or []):
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
