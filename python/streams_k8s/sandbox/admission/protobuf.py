"""Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`, what
client-go's typed clients send since 1.32: kubectl's `create` generators, `create token`,
`auth can-i`, `drain`'s pod deletions), read into exactly the dict the Go object would marshal to
in JSON, so that the rest of the write path sees what a JSON client would have sent.

A body is the `k8s\\x00` prefix and a `runtime.Unknown` message (apiVersion and kind, then the
object's own message as raw bytes). The object's fields come from `protobuf_fields.json`, the
wire facts that tools/protobuf-fields reads from the Kubernetes Go types: numbers, wire kinds, JSON
names and the Go facts that decide the JSON (omitempty and omitzero drop zero values; a pointer
keeps a zero it was given; nil slices and maps of fields without omitempty are null). The types
that marshal their own JSON (Time, Quantity, IntOrString, RawExtension, ...) are converted here.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import orjson

from streams_k8s.sandbox.admission.protobuf_custom import (
    int_or_string,
    list_or_schema,
    micro_time,
    quantity,
    schema_or_bool,
    time,
)
from streams_k8s.sandbox.admission.protobuf_wire import (
    BYTES,
    FIXED64,
    VARINT,
    WIRE_TYPES,
    WireError,
    length_delimited,
    scalar,
    text,
    varint,
    wire_fields,
)

PROTOBUF = "application/vnd.kubernetes.protobuf"
_PREFIX = b"k8s\x00"
_NIL = object()  # a field's nil pointer, slice, map or []byte: null in JSON, or omitted


class UnreadableEnvelope(ValueError):
    """The body is not a `k8s\\x00` + runtime.Unknown envelope (kube-apiserver: "the object
    provided is unrecognized")."""


class UnreadableObject(ValueError):
    """The envelope names a kind, whose message cannot be read."""

    def __init__(self, api_version: str, kind: str, why: str) -> None:
        super().__init__(why)
        self.api_version = api_version
        self.kind = kind


@dataclass(frozen=True)
class Envelope:
    """A body's runtime.Unknown: the kind it names and the object's message. Its contentEncoding
    and contentType are read and, as kube-apiserver does, not used."""

    api_version: str
    kind: str
    raw: bytes


@dataclass(frozen=True, slots=True)
class _Field:
    number: int
    wire: int
    json: str
    type: str
    omitempty: bool
    omitzero: bool
    repeated: bool
    pointer: bool
    inline: bool


# -- the wire facts ---------------------------------------------------------------------------


class _Table:
    """protobuf_fields.json, each message's fields parsed once when first needed."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.kinds: dict[str, dict[str, str]] = data["kinds"]
        self.custom: frozenset[str] = frozenset(data["custom"])
        self.lists: frozenset[str] = frozenset(data["lists"])
        self._rows: dict[str, list[list[Any]]] = data["messages"]
        self._fields: dict[str, dict[int, _Field]] = {}

    def fields(self, message: str) -> dict[int, _Field]:
        parsed = self._fields.get(message)
        if parsed is None:
            parsed = {}
            for number, wire, json, type_, flags, *_cast in self._rows[message]:
                parsed[number] = _Field(
                    number,
                    WIRE_TYPES[wire],
                    json,
                    type_,
                    "o" in flags,
                    "z" in flags,
                    "r" in flags,
                    "p" in flags,
                    "i" in flags,
                )
            self._fields[message] = parsed
        return parsed


@functools.cache
def table() -> _Table:
    text = resources.files(__package__).joinpath("protobuf_fields.json").read_bytes()
    return _Table(orjson.loads(text))


# -- the body -----------------------------------------------------------------------------------


def read_envelope(body: bytes) -> Envelope:
    """The runtime.Unknown of a body, worded as apimachinery's protobuf serializer on failure."""
    if not body:
        raise UnreadableEnvelope("empty data")
    if not body.startswith(_PREFIX):
        raise UnreadableEnvelope(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        )
    if len(body) == len(_PREFIX):
        raise UnreadableEnvelope("empty body")
    api_version = kind = ""
    raw = b""
    try:
        # runtime.Unknown: typeMeta = 1 (apiVersion = 1, kind = 2), raw = 2, contentEncoding = 3,
        # contentType = 4 (apimachinery/pkg/runtime/generated.proto)
        for number, wire, value in wire_fields(body[len(_PREFIX) :], "Unknown"):
            if number == 1:
                type_meta = length_delimited(wire, value, "TypeMeta")
                for meta_number, meta_wire, meta_value in wire_fields(type_meta, "TypeMeta"):
                    if meta_number == 1:
                        api_version = text(length_delimited(meta_wire, meta_value, "APIVersion"))
                    elif meta_number == 2:
                        kind = text(length_delimited(meta_wire, meta_value, "Kind"))
            elif number == 2:
                raw = length_delimited(wire, value, "Raw")
            elif number in (3, 4):
                length_delimited(wire, value, "ContentEncoding" if number == 3 else "ContentType")
    except WireError as err:
        raise UnreadableEnvelope(str(err)) from None
    return Envelope(api_version, kind, raw)


def message_of(api_version: str, kind: str) -> str | None:
    """The message a kind travels as (None: not a built-in kind)."""
    return table().kinds.get(api_version, {}).get(kind)


def decode_object(envelope: Envelope, message: str) -> dict[str, Any]:
    """The JSON object of the envelope's kind, with its apiVersion and kind."""
    try:
        fields = _Decoder(table()).message(message, envelope.raw)
    except WireError as err:
        raise UnreadableObject(envelope.api_version, envelope.kind, str(err)) from None
    except RecursionError:  # hostile nesting: Go's stack grows, Python's does not
        raise UnreadableObject(envelope.api_version, envelope.kind, "proto: nesting too deep") from None
    return {"kind": envelope.kind, "apiVersion": envelope.api_version, **fields}


# -- messages to JSON ---------------------------------------------------------------------------


class _Decoder:
    def __init__(self, facts: _Table) -> None:
        self.facts = facts
        self._zeros: dict[str, Any] = {}

    def message(self, name: str, data: bytes) -> Any:
        """The JSON value of one message: an object, or what a custom or list type marshals to."""
        custom = CUSTOM_JSON.get(name)
        values = self._values(name, data, raw_bytes=custom is not None)
        if custom is not None:
            # no bytes unmarshal as the zero time (null), a Timestamp of zeros as the Unix epoch
            if not data and name in _TIMES:
                return None
            return custom({number: None if value is _NIL else value for number, value in values.items()})
        if name in self.facts.lists:
            return None if values[1] is _NIL else values[1]
        out: dict[str, Any] = {}
        inlined: list[dict[str, Any]] = []
        for field in self.facts.fields(name).values():
            value = values[field.number]
            if field.inline:
                if value is not _NIL:
                    inlined.append(value)
            elif not self._omitted(field, value):
                out[field.json] = None if value is _NIL else value
        for fields in inlined:  # an embedded struct's fields yield to the parent's own
            for key, value in fields.items():
                out.setdefault(key, value)
        return out

    def _values(self, name: str, data: bytes, raw_bytes: bool) -> dict[int, Any]:
        """Each field's value, as JSON (raw_bytes: a []byte as bytes, for the custom types): _NIL
        for a nil pointer, slice, map or []byte, the zero value for an absent plain field."""
        fields = self.facts.fields(name)
        found: dict[int, list[int | bytes]] = {}
        for number, wire, value in wire_fields(data, name.rsplit(".", 1)[-1]):
            field = fields.get(number)
            if field is None:
                continue  # unknown fields are skipped, as by the generated code
            packed = field.repeated and wire == BYTES and field.wire != BYTES
            if wire != field.wire and not packed:
                raise WireError(f"proto: wrong wireType = {wire} for field {field.json}")
            found.setdefault(number, []).append(value)
        return {
            number: self._field_value(field, found.get(number, []), raw_bytes)
            for number, field in fields.items()
        }

    def _field_value(self, field: _Field, occurrences: list[int | bytes], raw_bytes: bool) -> Any:
        if field.type.startswith("map["):
            if not occurrences:
                return _NIL
            key_type, value_type = field.type[4:].split("]", 1)
            entries: dict[str, Any] = {}
            for entry in occurrences:
                key, value = self._map_entry(key_type, value_type, entry)
                entries[key] = value
            return entries
        if field.repeated:
            items: list[Any] = []
            for value in occurrences:
                if isinstance(value, bytes) and field.wire != BYTES:
                    items += self._packed(field, value)
                else:
                    items.append(self._single(field.type, value))
            return items or _NIL
        if field.type in _ZEROS:
            if not occurrences:
                return _NIL if field.pointer or field.type == "bytes" else _ZEROS[field.type]
            last = occurrences[-1]  # a scalar set twice: the last one wins
            return last if raw_bytes and field.type == "bytes" else self._single(field.type, last)
        if not occurrences and field.pointer:
            return _NIL
        # a message set twice merges, as the concatenation of its occurrences does
        return self.message(field.type, b"".join(v for v in occurrences if isinstance(v, bytes)))

    def _single(self, type_: str, value: int | bytes) -> Any:
        if isinstance(value, int):
            return scalar(type_, value)
        if type_ == "string":
            return text(value)
        if type_ == "bytes":
            return base64.b64encode(value).decode()
        return self.message(type_, value)

    def _packed(self, field: _Field, data: bytes) -> list[Any]:
        items: list[Any] = []
        pos = 0
        while pos < len(data):
            if field.wire == VARINT:
                number, pos = varint(data, pos)
            else:
                size = 8 if field.wire == FIXED64 else 4
                if pos + size > len(data):
                    raise WireError("unexpected EOF")
                number, pos = int.from_bytes(data[pos : pos + size], "little"), pos + size
            items.append(scalar(field.type, number))
        return items

    def _map_entry(self, key_type: str, value_type: str, entry: int | bytes) -> tuple[str, Any]:
        """A map entry message: key = 1, value = 2; a missing one is its type's zero value."""
        assert isinstance(entry, bytes)
        key: Any = None
        value: Any = None
        for number, _, raw in wire_fields(entry, "MapEntry"):
            if number == 1:
                key = self._single(key_type, raw)
            elif number == 2:
                value = self._single(value_type, raw)
        if key is None:
            key = _ZEROS[key_type]
        if value is None:
            value = _ZEROS[value_type] if value_type in _ZEROS else self.message(value_type, b"")
        return str(key), value

    def _omitted(self, field: _Field, value: Any) -> bool:
        """encoding/json: omitempty and omitzero drop nil pointers, slices and maps; omitzero a zero
        value; omitempty false, 0, "" and empty slices and maps, never a struct (a zero Time stays,
        as null) nor what a pointer points to."""
        if value is _NIL:
            return field.omitempty or field.omitzero
        if field.pointer:
            return False
        if field.omitzero and value == self._zero(field.type):
            return True
        if not field.omitempty:
            return False
        slice_or_map = field.repeated or field.type.startswith("map[") or field.type in self.facts.lists
        return not value if field.type in _ZEROS or slice_or_map else False

    def _zero(self, type_: str) -> Any:
        if type_ in _ZEROS:
            return _ZEROS[type_]
        if type_ not in self._zeros:
            self._zeros[type_] = self.message(type_, b"")
        return self._zeros[type_]


# The zero values of the scalar types, as JSON (a []byte's is null: it is handled apart).
_ZEROS: dict[str, Any] = {
    "string": "",
    "bytes": "",
    "bool": False,
    "int32": 0,
    "int64": 0,
    "uint32": 0,
    "uint64": 0,
    "float32": 0,
    "float64": 0,
}


# -- types that marshal their own JSON ------------------------------------------------------------


def _raw_json(values: dict[int, Any]) -> Any:
    """RawExtension, FieldsV1: the raw bytes are the JSON (nil: null); an object embedded as
    protobuf is read as a body of its own."""
    raw: bytes | None = values[1]
    if raw is None:
        return None
    if raw.startswith(_PREFIX):
        try:
            envelope = read_envelope(raw)
        except UnreadableEnvelope as err:
            raise WireError(str(err)) from None
        message = message_of(envelope.api_version, envelope.kind)
        if message is None:
            raise WireError(f'no kind "{envelope.kind}" is registered for version "{envelope.api_version}"')
        fields = _Decoder(table()).message(message, envelope.raw)
        return {"kind": envelope.kind, "apiVersion": envelope.api_version, **fields}
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise WireError(f"json: error calling MarshalJSON: {err}") from None


def _json(values: dict[int, Any]) -> Any:
    """apiextensions JSON (a schema's default, example, enum values): the raw JSON; empty is null."""
    return _raw_json(values) if values[1] else None


_APIEXTENSIONS = "k8s.io.apiextensions-apiserver.pkg.apis.apiextensions."
_META = "k8s.io.apimachinery.pkg.apis.meta.v1."
_TIMES = frozenset({_META + "Time", _META + "MicroTime"})
# The JSON of the messages whose Go types marshal their own, from their fields by number.
CUSTOM_JSON: dict[str, Callable[[dict[int, Any]], Any]] = {
    _META + "Time": time,
    _META + "MicroTime": micro_time,
    _META + "FieldsV1": _raw_json,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": quantity,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": int_or_string,
    "k8s.io.apimachinery.pkg.runtime.RawExtension": _raw_json,
    **{
        _APIEXTENSIONS + version + name: handler
        for version in ("v1.", "v1beta1.")
        for name, handler in (
            ("JSON", _json),
            ("JSONSchemaPropsOrBool", schema_or_bool),
            ("JSONSchemaPropsOrStringArray", list_or_schema),
            ("JSONSchemaPropsOrArray", list_or_schema),
        )
    },
}
