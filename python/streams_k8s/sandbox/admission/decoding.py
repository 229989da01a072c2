"""Decoding a written object as kube-apiserver decodes it into its Go types, before defaults and
validation: field types (400 BadRequest, worded as Go's JSON decoder words them), and unknown and
duplicate fields, which the request's `fieldValidation` directive turns into an error (Strict), a
`Warning` response header each (Warn, the default) or nothing (Ignore). Unknown fields are dropped.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any

import orjson

from streams_k8s.api.quantity import parse_quantity
from streams_k8s.sandbox import schema as structural
from streams_k8s.sandbox.admission import builtin_schemas
from streams_k8s.sandbox.admission.builtin_schemas import INT_OR_STRING, OBJECT_META, QUANTITY
from streams_k8s.sandbox.admission.field_errors import go_quote
from streams_k8s.sandbox.admission.field_validation import FieldValidation, join_path
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.resources import ResourceType

_TIMES = ("io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime")
_QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


# -- decoding built-in kinds ----------------------------------------------------------------------


class _TypeError(Exception):
    """A value the kind's Go type cannot hold; the message is the decoder's."""


def decode(rt: ResourceType, version: str, obj: dict[str, Any], fields: FieldValidation | None) -> None:
    """Check field types and drop unknown fields in place (400 for a type error; unknown and
    duplicate fields per the directive)."""
    if rt.builtin:
        name = builtin_schemas.definition_name(rt.group, version, rt.kind)
        if name is None:
            return
        walk = _Walk()
        try:
            walk.object(obj, builtin_schemas.definitions()[name], "", "", name)
        except _TypeError as err:
            raise (fields or FieldValidation()).decode_error(rt, version, str(err)) from None
        problems = walk.unknown
        if rt.key == ("", "secrets"):
            _merge_string_data(obj)
    else:
        walk = _Walk()
        meta = obj["metadata"]
        try:
            walk.object(meta, builtin_schemas.definitions()[OBJECT_META], "metadata", "metadata", OBJECT_META)
        except _TypeError as err:
            raise (fields or FieldValidation()).decode_error(rt, version, str(err)) from None
        problems = walk.unknown
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


def _go_package_type(name: str) -> str:
    """`io.k8s.api.core.v1.PodSpec` -> `v1.PodSpec`, as Go prints a named type."""
    parts = name.split(".")
    return f"{parts[-2]}.{parts[-1]}"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _types(schema: dict[str, Any]) -> list[str]:
    declared = schema.get("type")
    if declared is None:
        return []
    if isinstance(declared, str):
        return [declared]
    return [t for t in declared if t != "null"]


def _go_type(schema: dict[str, Any]) -> str:
    ref = schema.get("$ref")
    if ref is not None:
        name = builtin_schemas.ref_name(ref)
        if name == QUANTITY:
            return "resource.Quantity"
        if name == INT_OR_STRING:
            return "intstr.IntOrString"
        target = builtin_schemas.definitions()[name]
        if "properties" not in target and _types(target) != ["object"]:
            return _go_type(target)
        return _go_package_type(name)
    kinds = _types(schema)
    kind = kinds[0] if kinds else "object"
    if kind == "integer":
        return "int64" if schema.get("format") == "int64" else "int32"
    if kind == "number":
        return "float64"
    if kind == "boolean":
        return "bool"
    if kind == "array":
        return "[]" + _go_type(schema.get("items") or {})
    if kind == "object":
        extra = schema.get("additionalProperties")
        return "map[string]" + _go_type(extra) if isinstance(extra, dict) else "map[string]interface {}"
    return "string"


class _Walk:
    """One pass over an object along its schema: type errors raise, unknown fields are collected
    (as `unknown field "spec.x[0].y"`) and removed."""

    def __init__(self) -> None:
        self.unknown: list[str] = []

    def object(
        self, value: dict[str, Any], schema: dict[str, Any], path: str, go_path: str, struct: str
    ) -> None:
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for k in list(value):
            sub_path = join_path(path, k)
            if props is not None and k in props:
                value[k] = self.value(value[k], props[k], sub_path, join_path(go_path, k), struct)
            elif isinstance(extra, dict):
                value[k] = self.value(value[k], extra, sub_path, go_path, struct)
            elif props is not None:
                self.unknown.append(f'unknown field "{sub_path}"')
                del value[k]

    def value(self, value: Any, schema: dict[str, Any], path: str, go_path: str, struct: str) -> Any:
        ref = schema.get("$ref")
        if ref is not None:
            name = builtin_schemas.ref_name(ref)
            if name == INT_OR_STRING:
                if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                    return value
                raise _TypeError(f"json: cannot unmarshal {_json_kind(value)} into Go value of type int32")
            if name == QUANTITY:
                _check_quantity(value)
                return value
            if name in _TIMES:
                _check_time(value, go_path, struct)
                return value
            target = builtin_schemas.definitions()[name]
            if "properties" in target:
                if not isinstance(value, dict):
                    raise self._mismatch(value, _go_package_type(name), go_path, struct)
                self.object(value, target, path, go_path, name)
                return value
            return self.value(value, target, path, go_path, struct)
        kinds = _types(schema)
        if not kinds:
            return value
        kind = kinds[0]
        if kind == "object":
            if not isinstance(value, dict):
                raise self._mismatch(value, _go_type(schema), go_path, struct)
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                for k in list(value):
                    value[k] = self.value(value[k], extra, join_path(path, k), go_path, struct)
            elif "properties" in schema:
                self.object(value, schema, path, go_path, struct)
            return value
        if kind == "array":
            if not isinstance(value, list):
                raise self._mismatch(value, _go_type(schema), go_path, struct)
            items = schema.get("items")
            if isinstance(items, dict):
                for i in range(len(value)):
                    value[i] = self.value(value[i], items, f"{path}[{i}]", go_path, struct)
            return value
        if kind == "string":
            if not isinstance(value, str):
                raise self._mismatch(value, "string", go_path, struct)
            if schema.get("format") == "byte":
                _check_base64(value)
            return value
        if kind == "boolean":
            if not isinstance(value, bool):
                raise self._mismatch(value, "bool", go_path, struct)
            return value
        if kind in ("integer", "number"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise self._mismatch(value, _go_type(schema), go_path, struct)
            if kind == "integer":
                low, high = _INT64 if schema.get("format") == "int64" else _INT32
                if not isinstance(value, int) or not low <= value <= high:
                    raise self._mismatch(value, _go_type(schema), go_path, struct, literal=True)
        return value

    @staticmethod
    def _mismatch(value: Any, go_type: str, go_path: str, struct: str, literal: bool = False) -> _TypeError:
        shown = f"number {value}" if literal else _json_kind(value)
        owner = struct.rsplit(".", 1)[-1]
        return _TypeError(
            f"json: cannot unmarshal {shown} into Go struct field {owner}.{go_path} of type {go_type}"
        )


def _check_quantity(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _TypeError(_QUANTITY_MSG)
    try:
        parse_quantity(value)
    except ValueError:
        raise _TypeError(_QUANTITY_MSG) from None


def _check_time(value: Any, go_path: str, struct: str) -> None:
    if not isinstance(value, str):
        raise _Walk._mismatch(value, "string", go_path, struct)
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
        ok = "T" in value
    except ValueError:
        ok = False
    if not ok:
        raise _TypeError(
            f'parsing time {go_quote(value)} as "2006-01-02T15:04:05Z07:00": cannot parse '
            f'{go_quote(value)} as "2006"'
        )


def _check_base64(value: str) -> None:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        bad = next(
            (i for i, c in enumerate(value) if not (c.isalnum() or c in "+/=")), max(len(value) - 1, 0)
        )
        raise _TypeError(f"illegal base64 data at input byte {bad}") from None


# -- server-side apply configurations ------------------------------------------------------------


def check_apply_config(
    rt: ResourceType, version: str, ns: str | None, name: str, config: dict[str, Any]
) -> None:
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
    where = f"{ns}/{name}" if ns else f"/{name}"
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
