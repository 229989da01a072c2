"""CRD preparation: what the API server does when a CustomResourceDefinition is written (its shape
checked, names and scope defaulted, status accepted and established) and the served resource type
it then describes. The registry registers that type once the CRD is stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streams_k8s.sandbox import schema
from streams_k8s.sandbox.clock import now
from streams_k8s.sandbox.errors import cause, invalid
from streams_k8s.sandbox.resources import ResourceType, ScaleSpec
from streams_k8s.sandbox.store import ObjKey, clone

CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")


def prepare_crd(crd: dict[str, Any], types: Mapping[tuple[str, str], ResourceType]) -> None:
    """Check a written CRD's shape (names, group, one storage version, scope, its name; not a
    built-in resource of `types`), default its names and scope, and set its status as accepted and
    established. 422 Invalid with every broken rule."""
    spec = crd.get("spec")
    name = crd["metadata"].get("name", "")
    errors = []
    if not isinstance(spec, dict):
        raise invalid(
            "CustomResourceDefinition", name, [cause("spec", "Required value")], "apiextensions.k8s.io"
        )
    names = spec.get("names") or {}
    for field in ("plural", "kind"):
        if not names.get(field):
            errors.append(cause(f"spec.names.{field}", "Required value", "FieldValueRequired"))
    if not spec.get("group"):
        errors.append(cause("spec.group", "Required value", "FieldValueRequired"))
    versions = spec.get("versions") or []
    if not versions:
        errors.append(
            cause(
                "spec.versions",
                "Required value: must have exactly one version marked as storage version",
                "FieldValueRequired",
            )
        )
    elif sum(1 for v in versions if v.get("storage")) != 1:
        errors.append(
            cause("spec.versions", "Invalid value: must have exactly one version marked as storage version")
        )
    if spec.get("scope", "Namespaced") not in ("Namespaced", "Cluster"):
        errors.append(cause("spec.scope", f"Unsupported value: {spec.get('scope')!r}"))
    if not errors and name != f"{names['plural']}.{spec['group']}":
        errors.append(
            cause("metadata.name", f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group')
        )
    if not errors:
        taken = types.get((spec["group"], names["plural"]))
        if taken is not None and taken.builtin:
            errors.append(cause("spec.names.plural", "Invalid value: the resource is built in"))
    if errors:
        raise invalid("CustomResourceDefinition", name, errors, "apiextensions.k8s.io")
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", f"{names['kind']}List")
    spec.setdefault("scope", "Namespaced")
    at = now()
    crd["status"] = {
        "acceptedNames": names,
        "storedVersions": [v["name"] for v in versions if v.get("storage")],
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": at,
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": at,
            },
        ],
    }


def type_from_crd(crd: dict[str, Any]) -> ResourceType:
    """The served resource a CRD describes (the caller has validated the CRD's shape)."""
    spec = crd["spec"]
    names = spec["names"]
    versions = [v for v in spec["versions"] if v.get("served", True)]
    scale: ScaleSpec | None = None
    status = False
    schemas: dict[str, dict[str, Any]] = {}
    columns: dict[str, list[dict[str, Any]]] = {}
    for v in versions:
        subs = v.get("subresources") or {}
        if "status" in subs:
            status = True
        if subs.get("scale"):
            sc = subs["scale"]
            scale = ScaleSpec(sc["specReplicasPath"], sc["statusReplicasPath"], sc.get("labelSelectorPath"))
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if schema:
            schemas[v["name"]] = schema
        columns[v["name"]] = v.get("additionalPrinterColumns") or []
    return ResourceType(
        group=spec["group"],
        versions=[v["name"] for v in versions],
        plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(),
        kind=names["kind"],
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        short_names=list(names.get("shortNames") or []),
        categories=list(names.get("categories") or []),
        status_subresource=status,
        scale=scale,
        builtin=False,
        generation=True,
        return_deleted_object=True,
        field_selectors=tuple(
            f["jsonPath"].lstrip(".") for v in versions for f in v.get("selectableFields") or []
        ),
        schemas=schemas,
        printer_columns=columns,
        storage_version=next((v["name"] for v in spec["versions"] if v.get("storage")), versions[0]["name"]),
    )


def default_stored(objects: dict[ObjKey, dict[str, Any]], spec_schema: dict[str, Any]) -> None:
    """A changed CRD schema's new defaults show on stored objects, as the API server defaults
    what it reads from storage (no new resourceVersion, no watch event)."""
    for key, obj in list(objects.items()):
        defaulted = schema.apply_defaults(clone(obj), spec_schema)
        if defaulted != obj:
            objects[key] = defaulted
