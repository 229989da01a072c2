"""Decoding a written object as kube-apiserver decodes it into its Go types, before defaults and
validation: field types (400 BadRequest, worded as Go's JSON decoder words them), and unknown and
duplicate fields, which the request's `fieldValidation` directive turns into an error (Strict), a
`Warning` response header each (Warn, the default) or nothing (Ignore). Unknown fields are dropped.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from streams_k8s.sandbox import schema as structural
from streams_k8s.sandbox.admission import builtin_schemas
from streams_k8s.sandbox.admission.builtin_schemas import OBJECT_META
from streams_k8s.sandbox.admission.decoders import DecodeTypeError, struct_fields
from streams_k8s.sandbox.admission.field_validation import FieldValidation
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.resources import ResourceType

# -- decoding built-in kinds ----------------------------------------------------------------------


def decode(rt: ResourceType, version: str, obj: dict[str, Any], fields: FieldValidation | None) -> None:
    """Check field types and drop unknown fields in place (400 for a type error; unknown and
    duplicate fields per the directive)."""
    problems: list[str] = []
    if rt.builtin:
        name = builtin_schemas.definition_name(rt.group, version, rt.kind)
        if name is None:
            return
        try:
            struct_fields(name)(obj, None, problems)
        except DecodeTypeError as err:
            raise (fields or FieldValidation()).decode_error(rt, version, str(err)) from None
        if rt.key == ("", "secrets"):
            _merge_string_data(obj)
    else:
        try:
            struct_fields(OBJECT_META)(obj["metadata"], (None, "metadata"), problems)
        except DecodeTypeError as err:
            raise (fields or FieldValidation()).decode_error(rt, version, str(err)) from None
        spec_schema = rt.schemas.get(version)
        if spec_schema is not None:
            dropped: list[str] = []
            pruned = structural.prune(obj, spec_schema, root=True, dropped=dropped)
            obj.clear()
            obj.update(pruned)
            problems += [f'unknown field "{path}"' for path in dropped]
    if fields is not None:
        fields.report(rt, version, fields.duplicates + problems)
        fields.duplicates = []


def _merge_string_data(secret: dict[str, Any]) -> None:
    """`stringData` is write-only: the API server merges it into `data` (base64) on every write."""
    string_data = secret.pop("stringData", None)
    if string_data:
        data = secret.setdefault("data", {})
        for k, v in string_data.items():
            data[k] = base64.b64encode(v.encode()).decode()


# -- server-side apply configurations ------------------------------------------------------------


def check_apply_config(rt: ResourceType, version: str, name: str, config: dict[str, Any]) -> None:
    """Server-side apply converts the configuration to the kind's typed form first: a field the
    schema does not declare fails the request, whatever its `fieldValidation`, and kube-apiserver
    answers that with a 500 (kubernetes#122480)."""
    found: list[str] = []
    body = {k: v for k, v in config.items() if k not in ("apiVersion", "kind")}
    if rt.builtin:
        def_name = builtin_schemas.definition_name(rt.group, version, rt.kind)
        if def_name is None:
            return
        _undeclared(body, builtin_schemas.definitions()[def_name], "", found, builtin=True)
    else:
        meta = body.pop("metadata", None)
        if meta is not None:
            _undeclared(meta, builtin_schemas.definitions()[OBJECT_META], ".metadata", found, builtin=True)
        spec_schema = rt.schemas.get(version)
        if spec_schema is not None:
            _undeclared(body, spec_schema, "", found, builtin=False)
    if not found:
        return
    why = found[0] if len(found) == 1 else "errors:\n  " + "\n  ".join(found)
    group_version = f"{rt.group}/{version}" if rt.group else f"/{version}"
    # the typed object's own namespace and name: what the configuration says (a name alone, often)
    meta = config.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    where = f"{meta.get('namespace') or ''}/{meta.get('name') or name}"
    raise ApiError(
        500,
        f"failed to create typed patch object ({where}; {group_version}, Kind={rt.kind}): {why}",
        reason="",
    )


def _undeclared(value: Any, schema: dict[str, Any], path: str, found: list[str], builtin: bool) -> None:
    if builtin:
        schema, _ = builtin_schemas.resolve(schema)
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") or schema.get(
            "x-kubernetes-embedded-resource"
        )
        for k, v in value.items():
            sub = f"{path}.{k}"
            if props is not None and k in props:
                _undeclared(v, props[k], sub, found, builtin)
            elif isinstance(extra, dict):
                _undeclared(v, extra, sub, found, builtin)
            elif props is not None and not preserve and extra is not True:
                found.append(f"{sub}: field not declared in schema")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        keys = schema.get("x-kubernetes-list-map-keys") or []
        for i, item in enumerate(value):
            if keys and isinstance(item, dict) and all(k in item for k in keys):
                selector = ",".join(f"{k}={orjson.dumps(item[k]).decode()}" for k in keys)
                at = f"{path}[{selector}]"
            else:
                at = f"{path}[{i}]"
            _undeclared(item, schema["items"], at, found, builtin)
