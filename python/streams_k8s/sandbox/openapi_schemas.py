"""The schemas of the OpenAPI documents, as kube-apiserver publishes them: built-in kinds' (the
release's own, from `admission.builtin_schemas`, with every definition they reference) and custom
resources' (their CRDs' structural schemas, with the envelope and list kinds around them), in
OpenAPI v3 form or converted to v2."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from streams_k8s.sandbox.admission import builtin_schemas
from streams_k8s.sandbox.admission.builtin_schemas import INT_OR_STRING, META, OBJECT_META, QUANTITY
from streams_k8s.sandbox.resources import ResourceType

_LIST_META = META + "ListMeta"
_COMMON = (META + "Status", META + "DeleteOptions", META + "Patch", OBJECT_META, _LIST_META)
V3_REFS = "#/components/schemas/"
V2_REFS = "#/definitions/"
_DESCRIPTIONS = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject unrecognized values. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
    "kind": "Kind is a string value representing the REST resource this object represents. Servers may "
    "infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More "
    "info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
    "metadata": "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
}


def schema_name(rt: ResourceType, version: str) -> str:
    """The component/definition name of a served kind: the release's name for built-ins, the
    reversed group for custom resources (`com.ibm.streams.v1.StreamsJob`)."""
    if rt.builtin:
        name = builtin_schemas.definition_name(rt.group, version, rt.kind)
        if name is not None:
            return name
    return ".".join(reversed(rt.group.split("."))) + f".{version}.{rt.kind}"


def schemas(types: Iterable[ResourceType], version: str, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    builtin_roots: list[str] = list(_COMMON)
    for rt in types:
        name = schema_name(rt, version)
        if rt.builtin and builtin_schemas.definition_name(rt.group, version, rt.kind) is not None:
            builtin_roots.append(name)
            list_name = name + "List"
            if list_name in builtin_schemas.definitions():
                builtin_roots.append(list_name)
            continue
        out[name] = _custom_resource_schema(rt, version, prefix)
        out[name + "List"] = _custom_list_schema(rt, version, name, prefix)
    for def_name in _closure(builtin_roots):
        out[def_name] = _convert_definition(def_name, prefix)
    return out


def _closure(roots: Iterable[str]) -> list[str]:
    """The definitions reachable from `roots` through `$ref`s."""
    defs = builtin_schemas.definitions()
    seen: dict[str, None] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen[name] = None
        pending.extend(_refs(defs[name]))
    return sorted(seen)


def _refs(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                yield builtin_schemas.ref_name(item)
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _convert_definition(name: str, prefix: str) -> dict[str, Any]:
    schema = builtin_schemas.definitions()[name]
    description = schema.get("description")
    if name == INT_OR_STRING:
        out: dict[str, Any] = {"type": "string", "format": "int-or-string"}
    elif name == QUANTITY:
        out = {"type": "string"}
    else:
        out = _convert(schema, prefix, kind_root="x-kubernetes-group-version-kind" in schema)
    if description:
        out["description"] = description
    return out


def _convert(schema: dict[str, Any], prefix: str, kind_root: bool = False) -> dict[str, Any]:
    """A kubernetes-validate JSON schema as an OpenAPI schema object (single types, OpenAPI refs)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("$schema", "$id") or (key == "additionalProperties" and value is False):
            continue
        if key == "$ref" and isinstance(value, str):
            out["$ref"] = prefix + builtin_schemas.ref_name(value)
        elif key == "type":
            kinds = [value] if isinstance(value, str) else [t for t in value if t != "null"]
            if kinds:
                out["type"] = kinds[0]
        elif key == "properties":
            out[key] = {
                k: _property(v, prefix, drop_enum=kind_root and k in ("apiVersion", "kind"))
                for k, v in value.items()
            }
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _property(value, prefix)
        else:
            out[key] = value
    return out


def _property(schema: dict[str, Any], prefix: str, drop_enum: bool = False) -> dict[str, Any]:
    converted = _convert(schema, prefix)
    if drop_enum:
        converted.pop("enum", None)
    ref = converted.get("$ref")
    if ref is not None and len(converted) > 1 and prefix == V3_REFS:
        # OpenAPI 3.0 ignores siblings of $ref: kube-apiserver wraps the reference in allOf.
        rest = {k: v for k, v in converted.items() if k != "$ref"}
        return {"allOf": [{"$ref": ref}], **rest}
    return converted


def _custom_resource_schema(rt: ResourceType, version: str, prefix: str) -> dict[str, Any]:
    schema = copy.deepcopy(
        rt.schemas.get(version) or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    )
    if prefix == V2_REFS:
        schema = to_v2(schema)
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"description": _DESCRIPTIONS["apiVersion"], "type": "string"}
    properties["kind"] = {"description": _DESCRIPTIONS["kind"], "type": "string"}
    meta_ref = prefix + OBJECT_META
    properties["metadata"] = (
        {"allOf": [{"$ref": meta_ref}], "description": _DESCRIPTIONS["metadata"]}
        if prefix == V3_REFS
        else {"$ref": meta_ref, "description": _DESCRIPTIONS["metadata"]}
    )
    schema["type"] = "object"
    schema["x-kubernetes-group-version-kind"] = [{"group": rt.group, "kind": rt.kind, "version": version}]
    return schema


def _custom_list_schema(rt: ResourceType, version: str, name: str, prefix: str) -> dict[str, Any]:
    return {
        "description": f"{rt.kind}List is a list of {rt.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": _DESCRIPTIONS["apiVersion"], "type": "string"},
            "items": {"type": "array", "items": {"$ref": prefix + name}},
            "kind": {"description": _DESCRIPTIONS["kind"], "type": "string"},
            "metadata": {"$ref": prefix + _LIST_META},
        },
        "x-kubernetes-group-version-kind": [{"group": rt.group, "kind": rt.list_kind, "version": version}],
    }


_V2_UNSUPPORTED = ("nullable", "oneOf", "anyOf", "allOf", "not", "x-kubernetes-validations")


def to_v2(schema: Any) -> Any:
    """What OpenAPI v2 can say of a structural schema (kube-apiserver drops the rest too)."""
    if isinstance(schema, dict):
        return {k: to_v2(v) for k, v in schema.items() if k not in _V2_UNSUPPORTED}
    if isinstance(schema, list):
        return [to_v2(v) for v in schema]
    return schema
