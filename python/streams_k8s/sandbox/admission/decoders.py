"""Decoders of the built-in kinds' Go types, built once per schema: each definition of
`builtin_schemas` becomes a closure (a table of its fields' checks) on first use, instead of the
schema being walked anew on every write. A check raises `DecodeTypeError` with the Go decoder's
words for a value its Go type cannot hold, and removes (and reports) fields the type does not
declare. Paths are kept as linked segments and spelled out only for an error or an unknown field.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

import orjson

from streams_k8s.api.quantity import parse_quantity
from streams_k8s.sandbox.admission import builtin_schemas
from streams_k8s.sandbox.admission.builtin_schemas import INT_OR_STRING, QUANTITY
from streams_k8s.sandbox.admission.field_errors import go_quote
from streams_k8s.sandbox.admission.field_validation import join_path

_TIMES = ("io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime")
_QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

# Where a value sits: None (the object itself) or (parent, segment); a segment is a field name
# (str), a list index (int) or a map key (a 1-tuple: in the path, not in Go's field path).
Path = tuple[Any, Any] | None
# Checks `value` at `(parent, segment)`; unknown fields are appended to the list as messages.
Check = Callable[[Any, Path, Any, list[str]], None]
# Checks the fields of an object at `path`.
Fields = Callable[[dict[str, Any], Path, list[str]], None]


class DecodeTypeError(Exception):
    """A value the kind's Go type cannot hold; the message is the decoder's."""


def _segments(path: Path) -> list[Any]:
    out = []
    while path is not None:
        path, segment = path
        out.append(segment)
    out.reverse()
    return out


def field_path(path: Path) -> str:
    """`spec.containers[0].env[1].name`, as unknown fields are reported."""
    text = ""
    for segment in _segments(path):
        if isinstance(segment, int):
            text += f"[{segment}]"
        else:
            text = join_path(text, segment[0] if isinstance(segment, tuple) else segment)
    return text


class EmbeddedField(str):
    """A field a struct has through an embedded struct (`Probe`'s `httpGet`, from its
    `ProbeHandler`): Go's decoder names it with the embedded type's name (`ProbeHandler.httpGet`)."""

    via: str

    def __new__(cls, name: str, via: str) -> EmbeddedField:
        field = super().__new__(cls, name)
        field.via = via
        return field


def _go_field_path(path: Path) -> str:
    """`spec.containers.env.name`: the struct fields only, as Go's decoder names a field."""
    return ".".join(
        f"{s.via}.{s}" if isinstance(s, EmbeddedField) else s for s in _segments(path) if isinstance(s, str)
    )


@cache
def _go_structs() -> dict[str, list[list[Any]]]:
    """The Go structs of the built-in kinds, by protobuf message name (tools/protobuf-fields)."""
    document = orjson.loads(resources.files(__package__).joinpath("protobuf_fields.json").read_bytes())
    structs: dict[str, list[list[Any]]] = document["messages"]
    return structs


def _embedded(message: str) -> dict[str, str]:
    """JSON field -> the path of embedded structs (`ProbeHandler`) a struct has it through."""
    out: dict[str, str] = {}
    for field in _go_structs().get(message, []):
        go_type, flags = field[3], field[4]
        if "i" in flags:
            via = go_type.rsplit(".", 1)[-1]
            out.update(dict.fromkeys(_declared(go_type), via))
            out.update({name: f"{via}.{inner}" for name, inner in _embedded(go_type).items()})
    return out


def _declared(message: str) -> list[str]:
    return [field[2] for field in _go_structs().get(message, []) if field[2]]


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


def mismatch(value: Any, go_type: str, path: Path, struct: str, literal: bool = False) -> DecodeTypeError:
    shown = f"number {value}" if literal else _json_kind(value)
    field = f"{struct.rsplit('.', 1)[-1]}.{_go_field_path(path)}"
    return DecodeTypeError(f"json: cannot unmarshal {shown} into Go struct field {field} of type {go_type}")


@cache
def struct_fields(name: str) -> Fields:
    """The field checks of a named definition with properties (a Go struct), built once."""
    message = name.replace("io.k8s.", "k8s.io.", 1)  # the definition's Go type, as protobuf names it
    return _fields(builtin_schemas.definitions()[name], name, _embedded(message))


def _fields(schema: dict[str, Any], struct: str, embedded: dict[str, str] | None = None) -> Fields:
    props: dict[str, Any] | None = schema.get("properties")
    extra = schema.get("additionalProperties")
    checks = {k: _check(s, struct) for k, s in props.items()} if props is not None else None
    extra_check = _check(extra, struct) if isinstance(extra, dict) else None
    via = embedded or {}
    segments = {k: EmbeddedField(k, via[k]) if k in via else k for k in props or ()}

    def fields(value: dict[str, Any], path: Path, unknown: list[str]) -> None:
        for k in list(value):
            if checks is not None and k in checks:
                check = checks[k]
                if check is not None:
                    check(value[k], path, segments[k], unknown)
            elif extra_check is not None:
                extra_check(value[k], path, (k,), unknown)
            elif checks is not None:
                unknown.append(f'unknown field "{field_path((path, k))}"')
                del value[k]

    return fields


def _check(schema: dict[str, Any], struct: str) -> Check | None:
    """The check of a value of `schema` inside `struct`; None when any value decodes."""
    ref = schema.get("$ref")
    if ref is not None:
        return _ref_check(builtin_schemas.ref_name(ref), struct)
    kinds = _types(schema)
    if not kinds:
        return None
    kind = kinds[0]
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            return _map_check(schema, _check(extra, struct), struct)
        return _object_check(schema, _fields(schema, struct) if "properties" in schema else None, struct)
    if kind == "array":
        items = schema.get("items")
        return _list_check(schema, _check(items, struct) if isinstance(items, dict) else None, struct)
    if kind == "string":
        return _string_check(schema.get("format") == "byte", struct)
    if kind == "boolean":
        return _bool_check(struct)
    if kind in ("integer", "number"):
        return _number_check(schema, kind, struct)
    return None


def _ref_check(name: str, struct: str) -> Check | None:
    if name == INT_OR_STRING:
        return _int_or_string_check(struct)
    if name == QUANTITY:
        return _quantity
    if name in _TIMES:
        return _time_check(struct)
    target = builtin_schemas.definitions()[name]
    if "properties" not in target:
        return _check(target, struct)
    go_type = _go_package_type(name)
    fields: Fields | None = None  # bound on first use: definitions refer to themselves

    def check(value: Any, parent: Path, segment: Any, unknown: list[str]) -> None:
        nonlocal fields
        if not isinstance(value, dict):
            raise mismatch(value, go_type, (parent, segment), struct)
        if fields is None:
            fields = struct_fields(name)
        fields(value, (parent, segment), unknown)

    return check


def _map_check(schema: dict[str, Any], values: Check | None, struct: str) -> Check:
    def check(value: Any, parent: Path, segment: Any, unknown: list[str]) -> None:
        if not isinstance(value, dict):
            raise mismatch(value, _go_type(schema), (parent, segment), struct)
        if values is not None:
            path = (parent, segment)
            for k in list(value):
                values(value[k], path, (k,), unknown)

    return check


def _object_check(schema: dict[str, Any], fields: Fields | None, struct: str) -> Check:
    def check(value: Any, parent: Path, segment: Any, unknown: list[str]) -> None:
        if not isinstance(value, dict):
            raise mismatch(value, _go_type(schema), (parent, segment), struct)
        if fields is not None:
            fields(value, (parent, segment), unknown)

    return check


def _list_check(schema: dict[str, Any], items: Check | None, struct: str) -> Check:
    def check(value: Any, parent: Path, segment: Any, unknown: list[str]) -> None:
        if not isinstance(value, list):
            raise mismatch(value, _go_type(schema), (parent, segment), struct)
        if items is not None:
            path = (parent, segment)
            for i, item in enumerate(value):
                items(item, path, i, unknown)

    return check


def _string_check(byte_format: bool, struct: str) -> Check:
    def check(value: Any, parent: Path, segment: Any, unknown: list[str]) -> None:
        if not isinstance(value, str):
            raise mismatch(value, "string", (parent, segment), struct)
        if byte_format:
            _check_base64(value)

    return check


def _bool_check(struct: str) -> Check:
    def check(value: Any, parent: Path, segment: Any, unknown: list[str]) -> None:
        if not isinstance(value, bool):
            raise mismatch(value, "bool", (parent, segment), struct)

    return check


def _number_check(schema: dict[str, Any], kind: str, struct: str) -> Check:
    go_type = _go_type(schema)
    low, high = _INT64 if schema.get("format") == "int64" else _INT32
    integer = kind == "integer"

    def check(value: Any, parent: Path, segment: Any, unknown: list[str]) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise mismatch(value, go_type, (parent, segment), struct)
        if integer and (not isinstance(value, int) or not low <= value <= high):
            raise mismatch(value, go_type, (parent, segment), struct, literal=True)

    return check


def _int_or_string_check(struct: str) -> Check:
    def check(value: Any, parent: Path, segment: Any, unknown: list[str]) -> None:
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return
        raise mismatch(value, "int32", (parent, segment), struct)

    return check


def _quantity(value: Any, parent: Path, segment: Any, unknown: list[str]) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DecodeTypeError(_QUANTITY_MSG)
    try:
        parse_quantity(value)
    except ValueError:
        raise DecodeTypeError(_QUANTITY_MSG) from None


def _time_check(struct: str) -> Check:
    def check(value: Any, parent: Path, segment: Any, unknown: list[str]) -> None:
        if not isinstance(value, str):
            raise mismatch(value, "string", (parent, segment), struct)
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
            ok = "T" in value
        except ValueError:
            ok = False
        if not ok:
            raise DecodeTypeError(
                f'parsing time {go_quote(value)} as "2006-01-02T15:04:05Z07:00": cannot parse '
                f'{go_quote(value)} as "2006"'
            )

    return check


def _check_base64(value: str) -> None:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        bad = next(
            (i for i, c in enumerate(value) if not (c.isalnum() or c in "+/=")), max(len(value) - 1, 0)
        )
        raise DecodeTypeError(f"illegal base64 data at input byte {bad}") from None
