"""Structural OpenAPI v3 schemas of CRDs: pruning, defaulting and validation with field causes."""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from typing import Any, NamedTuple

from streams_k8s.sandbox.errors import cause

_METADATA_FIELDS = ("apiVersion", "kind", "metadata")


def prune(
    obj: Any, schema: dict[str, Any], root: bool = False, dropped: list[str] | None = None, path: str = ""
) -> Any:
    """Drop fields the schema does not declare, unless it preserves unknown fields; the paths of
    dropped fields (`spec.x[0].y`) are appended to `dropped`."""
    if isinstance(obj, dict):
        if schema.get("x-kubernetes-embedded-resource") or root:
            keep = {k: obj[k] for k in _METADATA_FIELDS if k in obj}
        else:
            keep = {}
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
        for key, value in obj.items():
            if key in keep:
                continue
            sub = f"{path}.{key}" if path else key
            if props is not None and key in props:
                keep[key] = prune(value, props[key], dropped=dropped, path=sub)
            elif isinstance(extra, dict):
                keep[key] = prune(value, extra, dropped=dropped, path=sub)
            elif preserve or extra is True:
                keep[key] = value
            elif dropped is not None:
                dropped.append(sub)
        return keep
    if isinstance(obj, list) and isinstance(schema.get("items"), dict):
        return [prune(v, schema["items"], dropped=dropped, path=f"{path}[{i}]") for i, v in enumerate(obj)]
    return obj


def apply_defaults(obj: Any, schema: dict[str, Any]) -> Any:
    """Fill in `default:` values of absent fields (and of nulls in non-nullable fields); a null in
    a non-nullable field without a default is dropped, as the API server prunes it (a merge patch's
    null and a JSON patch's ``add`` of null both unset such a field)."""
    if isinstance(obj, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key in obj and obj[key] is None and not sub.get("nullable") and "default" not in sub:
                del obj[key]
            if "default" in sub and (key not in obj or (obj[key] is None and not sub.get("nullable"))):
                obj[key] = copy.deepcopy(sub["default"])
            if key in obj:
                obj[key] = apply_defaults(obj[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in obj:
                if key not in (schema.get("properties") or {}):
                    obj[key] = apply_defaults(obj[key], extra)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(v, schema["items"]) for v in obj]
    return obj


def validate(obj: Any, schema: dict[str, Any], path: str = "") -> list[dict[str, str]]:
    """Every violation of the schema, as API-server causes (`field` is a dotted path)."""
    errors: list[dict[str, str]] = []
    _validate(obj, schema, path, errors)
    return errors


_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
}


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _TYPES.get(kind, object))


class _Plan(NamedTuple):
    """Which keywords a schema uses, worked out once per schema (validation is on every write)."""

    type: str | None
    nullable: bool
    int_or_string: bool
    enum: list[Any] | None
    number: bool
    string: bool
    array: bool
    object: bool
    combinators: bool


_PLANS: dict[int, tuple[dict[str, Any], _Plan]] = {}


def _plan(schema: dict[str, Any]) -> _Plan:
    cached = _PLANS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    plan = _Plan(
        type=schema.get("type"),
        nullable=bool(schema.get("nullable")),
        int_or_string=bool(schema.get("x-kubernetes-int-or-string")),
        enum=schema.get("enum"),
        number=any(k in schema for k in ("minimum", "maximum", "multipleOf")),
        string=any(k in schema for k in ("maxLength", "minLength", "pattern")),
        array=any(k in schema for k in ("maxItems", "minItems", "items", "x-kubernetes-list-type")),
        object=any(
            k in schema
            for k in ("required", "properties", "additionalProperties", "maxProperties", "minProperties")
        ),
        combinators=any(k in schema for k in ("allOf", "anyOf", "oneOf", "not")),
    )
    if len(_PLANS) > 10_000:
        _PLANS.clear()
    _PLANS[id(schema)] = (schema, plan)
    return plan


def _validate(value: Any, schema: dict[str, Any], path: str, errors: list[dict[str, str]]) -> None:
    plan = _plan(schema)
    field = path or "<root>"
    if value is None:
        if not plan.nullable and plan.type:
            errors.append(
                cause(
                    field,
                    f'Invalid value: "null": {field} in body must be of type {plan.type}',
                    "FieldValueTypeInvalid",
                )
            )
        return
    if plan.int_or_string:
        if not (isinstance(value, str) or _type_ok(value, "integer")):
            errors.append(
                cause(
                    field,
                    f"Invalid value: {_show(value)}: {field} in body must be of type integer or string",
                    "FieldValueTypeInvalid",
                )
            )
            return
    elif plan.type and not _type_ok(value, plan.type):
        errors.append(
            cause(
                field,
                f'Invalid value: "{_type_name(value)}": {field} in body must be of '
                f'type {plan.type}: "{_type_name(value)}"',
                "FieldValueTypeInvalid",
            )
        )
        return
    if plan.enum is not None and value not in plan.enum:
        allowed = ", ".join(_show(v) for v in plan.enum)
        errors.append(
            cause(
                field,
                f"Unsupported value: {_show(value)}: supported values: {allowed}",
                "FieldValueNotSupported",
            )
        )
    if plan.number and isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, schema, field, errors)
    if plan.string and isinstance(value, str):
        _check_string(value, schema, field, errors)
    if plan.array and isinstance(value, list):
        _check_array(value, schema, path, errors)
    if plan.object and isinstance(value, dict):
        _check_object(value, schema, path, errors)
    if not plan.combinators:
        return
    for sub in schema.get("allOf") or []:
        _validate(value, sub, path, errors)
    if schema.get("anyOf") and not any(not validate(value, s, path) for s in schema["anyOf"]):
        errors.append(
            cause(
                field,
                f"Invalid value: {_show(value)}: {field} in body must match at least one schema in anyOf",
            )
        )
    if schema.get("oneOf") and sum(not validate(value, s, path) for s in schema["oneOf"]) != 1:
        errors.append(
            cause(
                field,
                f"Invalid value: {_show(value)}: {field} in body must match exactly one schema in oneOf",
            )
        )
    if isinstance(schema.get("not"), dict) and not validate(value, schema["not"], path):
        errors.append(
            cause(field, f"Invalid value: {_show(value)}: {field} in body must not match the schema in not")
        )


def _check_number(value: float, schema: dict[str, Any], field: str, errors: list[dict[str, str]]) -> None:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if lo is not None and (value < lo or (schema.get("exclusiveMinimum") and value == lo)):
        op = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
        errors.append(cause(field, f"Invalid value: {_show(value)}: {field} in body should be {op} {lo}"))
    if hi is not None and (value > hi or (schema.get("exclusiveMaximum") and value == hi)):
        op = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
        errors.append(cause(field, f"Invalid value: {_show(value)}: {field} in body should be {op} {hi}"))
    if schema.get("multipleOf") and value % schema["multipleOf"] != 0:
        errors.append(
            cause(
                field,
                f"Invalid value: {_show(value)}: {field} in body should be a multiple "
                f"of {schema['multipleOf']}",
            )
        )


def _check_string(value: str, schema: dict[str, Any], field: str, errors: list[dict[str, str]]) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(
            cause(field, f"Too long: may not be more than {schema['maxLength']} bytes", "FieldValueTooLong")
        )
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(
            cause(
                field,
                f"Invalid value: {_show(value)}: {field} in body should be at least "
                f"{schema['minLength']} chars long",
            )
        )
    if "pattern" in schema and not _regex(schema["pattern"]).search(value):
        errors.append(
            cause(field, f"Invalid value: {_show(value)}: {field} in body should match '{schema['pattern']}'")
        )


def _check_array(value: list[Any], schema: dict[str, Any], path: str, errors: list[dict[str, str]]) -> None:
    field = path or "<root>"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(
            cause(
                field,
                f"Too many: {len(value)}: must have at most {schema['maxItems']} items",
                "FieldValueTooMany",
            )
        )
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(
            cause(
                field,
                f"Invalid value: {len(value)}: {field} in body should have at least "
                f"{schema['minItems']} items",
            )
        )
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _validate(item, items, f"{path}[{i}]", errors)
    if schema.get("x-kubernetes-list-type") == "set" and len({_hashable(v) for v in value}) != len(value):
        errors.append(cause(field, "Duplicate value", "FieldValueDuplicate"))


def _check_object(
    value: dict[str, Any], schema: dict[str, Any], path: str, errors: list[dict[str, str]]
) -> None:
    for req in schema.get("required") or []:
        if req not in value:
            sub = f"{path}.{req}" if path else req
            errors.append(cause(sub, "Required value", "FieldValueRequired"))
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for key, sub_value in value.items():
        sub_path = f"{path}.{key}" if path else key
        if key in props:
            _validate(sub_value, props[key], sub_path, errors)
        elif isinstance(extra, dict):
            _validate(sub_value, extra, sub_path, errors)
    field = path or "<root>"
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(
            cause(
                field,
                f"Too many: {len(value)}: must have at most {schema['maxProperties']} items",
                "FieldValueTooMany",
            )
        )
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        errors.append(
            cause(
                field,
                f"Invalid value: {len(value)}: {field} in body should have at least "
                f"{schema['minProperties']} properties",
            )
        )


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _hashable(value: Any) -> Any:
    return repr(value) if isinstance(value, dict | list) else value


def _show(value: Any) -> str:
    return (
        f'"{value}"'
        if isinstance(value, str)
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
