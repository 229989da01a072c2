"""ObjectMeta rules every kind shares: the kind's name format, labels, annotations (keys and the
256 KiB total), owner references and finalizers, on create and on update."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.admission import names
from streams_k8s.sandbox.admission.field_errors import FieldErrors, GoJson, child, go_struct, index

TOTAL_ANNOTATION_SIZE = 256 * 1024
_STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")


def validate(
    meta: dict[str, Any],
    name_check: names.NameCheck,
    namespaced: bool,
    errors: FieldErrors,
    kube_finalizers: bool = True,
) -> None:
    """`kube_finalizers`: the kind is validated by Kubernetes' own ObjectMeta rules, which also
    refuse a finalizer without a domain (all built-in kinds but a few, such as Leases)."""
    path = "metadata"
    generate = meta.get("generateName")
    if generate:
        errors.invalid_each(child(path, "generateName"), generate, name_check(generate, True))
    name = meta.get("name")
    if not name:
        errors.required(child(path, "name"), "name or generateName is required")
    else:
        errors.invalid_each(child(path, "name"), name, name_check(name, False))
    namespace = meta.get("namespace")
    if namespaced:
        if not namespace:
            errors.required(child(path, "namespace"))
        else:
            errors.invalid_each(
                child(path, "namespace"), namespace, names.name_is_dns_label(namespace, False)
            )
    validate_labels(meta.get("labels"), child(path, "labels"), errors)
    validate_annotations(meta.get("annotations"), child(path, "annotations"), errors)
    _owner_references(meta.get("ownerReferences") or [], child(path, "ownerReferences"), errors)
    _finalizers(meta.get("finalizers") or [], child(path, "finalizers"), errors)
    if kube_finalizers:
        _standard_or_qualified(meta.get("finalizers") or [], child(path, "finalizers"), errors)


def validate_update(
    meta: dict[str, Any], old: dict[str, Any], errors: FieldErrors, kube_finalizers: bool = True
) -> None:
    """What may not change in metadata (the rest is validated as on create)."""
    for field in ("name", "namespace", "uid", "creationTimestamp"):
        if meta.get(field) != old.get(field):
            errors.immutable(child("metadata", field), meta.get(field))
    if kube_finalizers:
        _standard_or_qualified(meta.get("finalizers") or [], "metadata.finalizers", errors)


def validate_labels(labels: dict[str, str] | None, path: str, errors: FieldErrors) -> None:
    for k, v in sorted((labels or {}).items()):
        errors.invalid_each(path, k, names.qualified_name(k))
        errors.invalid_each(path, v, names.label_value(v))


def validate_annotations(annotations: dict[str, str] | None, path: str, errors: FieldErrors) -> None:
    total = 0
    for k, v in sorted((annotations or {}).items()):
        # Keys follow the label-key rule, whatever their case.
        errors.invalid_each(path, k, names.qualified_name(k.lower()))
        total += len(k.encode()) + len(v.encode())
    if total > TOTAL_ANNOTATION_SIZE:
        errors.too_long(path, TOTAL_ANNOTATION_SIZE)


def _owner_references(refs: list[dict[str, Any]], path: str, errors: FieldErrors) -> None:
    controller = ""
    for i, ref in enumerate(refs):
        at = index(path, i)
        api_version = ref.get("apiVersion", "")
        group_version = api_version.split("/")
        if not api_version:
            errors.required(child(at, "apiVersion"), "must not be empty")
        elif len(group_version) > 2 or not group_version[-1]:
            errors.invalid(child(at, "apiVersion"), api_version, "must be <group>/<version> or <version>")
        for field in ("kind", "name", "uid"):
            if not ref.get(field):
                errors.required(child(at, field), "must not be empty")
        if ref.get("controller"):
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if controller:
                errors.invalid(
                    path,
                    _printed(refs),
                    'Only one reference can have Controller set to true. Found "true" in references '
                    f"for {controller} and {current}",
                )
            else:
                controller = current


def _printed(refs: list[dict[str, Any]]) -> GoJson:
    """Owner references as metav1.OwnerReference marshals them (its fields in order, unset
    pointers left out)."""
    fields = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
    structs = []
    for ref in refs:
        present = {f: ref.get(f, "") for f in fields[:4]} | {f: ref[f] for f in fields[4:] if f in ref}
        structs.append(go_struct(**present))
    return GoJson("[" + ",".join(structs) + "]")


def _finalizers(finalizers: list[str], path: str, errors: FieldErrors) -> None:
    for finalizer in finalizers:
        errors.invalid_each(path, finalizer, names.qualified_name(finalizer))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errors.invalid(path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set")


def _standard_or_qualified(finalizers: list[str], path: str, errors: FieldErrors) -> None:
    for i, finalizer in enumerate(finalizers):
        if "/" not in finalizer and finalizer not in _STANDARD_FINALIZERS:
            why = "name is neither a standard finalizer name nor is it fully qualified"
            errors.invalid(index(path, i), finalizer, why)


def finalizer_warnings(meta: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
    """What the API server warns of a custom resource's finalizers that it adds without a domain
    (they are valid there)."""
    added = set(meta.get("finalizers") or []) - set((old or {}).get("finalizers") or [])
    warnings = []
    for finalizer in sorted(added):
        warnings += [f'metadata.finalizers: "{finalizer}": {m}' for m in names.qualified_name(finalizer)]
        if "/" not in finalizer and finalizer not in _STANDARD_FINALIZERS:
            including = " including a path (/)" if "." in finalizer else ""
            warnings.append(
                f'metadata.finalizers: "{finalizer}": prefer a domain-qualified finalizer name{including} '
                "to avoid accidental conflicts with other finalizer writers"
            )
    return warnings
