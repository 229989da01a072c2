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
import datetime
import functools
import math
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import orjson

PROTOBUF = "application/vnd.kubernetes.protobuf"
_PREFIX = b"k8s\x00"
_WIRE_TYPES = {"varint": 0, "fixed64": 1, "bytes": 2, "fixed32": 5}
_VARINT, _FIXED64, _BYTES, _START_GROUP, _END_GROUP, _FIXED32 = 0, 1, 2, 3, 4, 5
_ZERO_TIME = -62135596800  # Go's zero time.Time (January 1, year 1) in Unix seconds
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
                    _WIRE_TYPES[wire],
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
        for number, wire, value in _wire_fields(body[len(_PREFIX) :], "Unknown"):
            if number == 1:
                type_meta = _length_delimited(wire, value, "TypeMeta")
                for meta_number, meta_wire, meta_value in _wire_fields(type_meta, "TypeMeta"):
                    if meta_number == 1:
                        api_version = _text(_length_delimited(meta_wire, meta_value, "APIVersion"))
                    elif meta_number == 2:
                        kind = _text(_length_delimited(meta_wire, meta_value, "Kind"))
            elif number == 2:
                raw = _length_delimited(wire, value, "Raw")
            elif number in (3, 4):
                _length_delimited(wire, value, "ContentEncoding" if number == 3 else "ContentType")
    except _WireError as err:
        raise UnreadableEnvelope(str(err)) from None
    return Envelope(api_version, kind, raw)


def message_of(api_version: str, kind: str) -> str | None:
    """The message a kind travels as (None: not a built-in kind)."""
    return table().kinds.get(api_version, {}).get(kind)


def decode_object(envelope: Envelope, message: str) -> dict[str, Any]:
    """The JSON object of the envelope's kind, with its apiVersion and kind."""
    try:
        fields = _Decoder(table()).message(message, envelope.raw)
    except _WireError as err:
        raise UnreadableObject(envelope.api_version, envelope.kind, str(err)) from None
    except RecursionError:  # hostile nesting: Go's stack grows, Python's does not
        raise UnreadableObject(envelope.api_version, envelope.kind, "proto: nesting too deep") from None
    return {"kind": envelope.kind, "apiVersion": envelope.api_version, **fields}


# -- the wire -----------------------------------------------------------------------------------


class _WireError(ValueError):
    """Bytes that are not the message they should be: worded as gogo-protobuf's generated code."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if shift >= 64:
            raise _WireError("proto: integer overflow")
        if pos >= len(data):
            raise _WireError("unexpected EOF")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7


def _wire_fields(data: bytes, message: str) -> Iterator[tuple[int, int, int | bytes]]:
    """Each field of a message, in order: number, wire type, and an int (varint, fixed) or the bytes
    (length-delimited). Groups, which no Kubernetes message has, are skipped."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == _END_GROUP:
            raise _WireError(f"proto: {message}: wiretype end group for non-group")
        if number <= 0:
            raise _WireError(f"proto: {message}: illegal tag {number} (wire type {wire})")
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
            if pos + size > end:
                raise _WireError("unexpected EOF")
            value, pos = int.from_bytes(data[pos : pos + size], "little"), pos + size
        elif wire == _BYTES:
            length, pos = _varint(data, pos)
            if length >= 1 << 63:
                raise _WireError("proto: negative length found during unmarshaling")
            if pos + length > end:
                raise _WireError("unexpected EOF")
            value, pos = data[pos : pos + length], pos + length
        elif wire == _START_GROUP:
            pos = _skip_group(data, pos)
            continue
        else:
            raise _WireError(f"proto: illegal wireType {wire}")
        yield number, wire, value


def _skip_group(data: bytes, pos: int) -> int:
    depth = 1
    while depth:
        key, pos = _varint(data, pos)
        wire = key & 7
        if wire == _START_GROUP:
            depth += 1
        elif wire == _END_GROUP:
            depth -= 1
        elif wire == _VARINT:
            _, pos = _varint(data, pos)
        elif wire in (_FIXED64, _FIXED32):
            pos += 8 if wire == _FIXED64 else 4
        elif wire == _BYTES:
            length, pos = _varint(data, pos)
            pos += length
        else:
            raise _WireError(f"proto: illegal wireType {wire}")
        if pos > len(data):
            raise _WireError("unexpected EOF")
    return pos


def _length_delimited(wire: int, value: int | bytes, field: str) -> bytes:
    if wire != _BYTES or not isinstance(value, bytes):
        raise _WireError(f"proto: wrong wireType = {wire} for field {field}")
    return value


def _text(data: bytes) -> str:
    # Go keeps the bytes; its JSON encoder writes each invalid one as U+FFFD
    return data.decode("utf-8", errors="replace")


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
        for number, wire, value in _wire_fields(data, name.rsplit(".", 1)[-1]):
            field = fields.get(number)
            if field is None:
                continue  # unknown fields are skipped, as by the generated code
            packed = field.repeated and wire == _BYTES and field.wire != _BYTES
            if wire != field.wire and not packed:
                raise _WireError(f"proto: wrong wireType = {wire} for field {field.json}")
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
                if isinstance(value, bytes) and field.wire != _BYTES:
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
            return _number(type_, value)
        if type_ == "string":
            return _text(value)
        if type_ == "bytes":
            return base64.b64encode(value).decode()
        return self.message(type_, value)

    def _packed(self, field: _Field, data: bytes) -> list[Any]:
        items: list[Any] = []
        pos = 0
        while pos < len(data):
            if field.wire == _VARINT:
                number, pos = _varint(data, pos)
            else:
                size = 8 if field.wire == _FIXED64 else 4
                if pos + size > len(data):
                    raise _WireError("unexpected EOF")
                number, pos = int.from_bytes(data[pos : pos + size], "little"), pos + size
            items.append(_number(field.type, number))
        return items

    def _map_entry(self, key_type: str, value_type: str, entry: int | bytes) -> tuple[str, Any]:
        """A map entry message: key = 1, value = 2; a missing one is its type's zero value."""
        assert isinstance(entry, bytes)
        key: Any = None
        value: Any = None
        for number, _, raw in _wire_fields(entry, "MapEntry"):
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


def _number(type_: str, value: int) -> Any:
    if type_ == "bool":
        return value != 0
    if type_ in ("int32", "uint32"):  # Go truncates a varint to 32 bits
        value &= 0xFFFFFFFF
        return value - (1 << 32) if type_ == "int32" and value >= 1 << 31 else value
    if type_ == "int64":
        return value - (1 << 64) if value >= 1 << 63 else value
    if type_ == "float64":
        return _float(struct.unpack("<d", value.to_bytes(8, "little"))[0])
    if type_ == "float32":
        return _float(struct.unpack("<f", value.to_bytes(4, "little"))[0])
    return value


def _float(number: float) -> int | float:
    if not math.isfinite(number):
        raise _WireError(f"json: unsupported value: {number}")
    return int(number) if number.is_integer() else number  # Go writes 5, not 5.0


# -- types that marshal their own JSON ------------------------------------------------------------


def _time(values: dict[int, Any]) -> Any:
    """metav1.Time: whole seconds (its nanos are not read), RFC 3339 in UTC; the zero time is null."""
    return _timestamp(values[1] * 1_000_000_000, "")


def _micro_time(values: dict[int, Any]) -> Any:
    """metav1.MicroTime: RFC 3339 with microseconds in UTC; the zero time is null."""
    nanos = values[1] * 1_000_000_000 + values[2]
    return _timestamp(nanos, f".{nanos % 1_000_000_000 // 1000:06d}")


def _timestamp(nanos: int, fraction: str) -> Any:
    if nanos == _ZERO_TIME * 1_000_000_000:
        return None
    try:
        moment = _EPOCH + datetime.timedelta(seconds=nanos // 1_000_000_000)
    except OverflowError:
        raise _WireError("Time.MarshalJSON: year outside of range [0,9999]") from None
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}{fraction}Z"


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _quantity(values: dict[int, Any]) -> Any:
    """resource.Quantity: its string (Go clients send the canonical form); none is "0"."""
    return values[1] or "0"


def _int_or_string(values: dict[int, Any]) -> Any:
    """intstr.IntOrString: type 0 is the int, 1 the string."""
    if values[1] == 0:
        return values[2]
    if values[1] == 1:
        return values[3]
    raise _WireError("impossible IntOrString.Type")


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
            raise _WireError(str(err)) from None
        message = message_of(envelope.api_version, envelope.kind)
        if message is None:
            raise _WireError(f'no kind "{envelope.kind}" is registered for version "{envelope.api_version}"')
        fields = _Decoder(table()).message(message, envelope.raw)
        return {"kind": envelope.kind, "apiVersion": envelope.api_version, **fields}
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise _WireError(f"json: error calling MarshalJSON: {err}") from None


def _json(values: dict[int, Any]) -> Any:
    """apiextensions JSON (a schema's default, example, enum values): the raw JSON; empty is null."""
    return _raw_json(values) if values[1] else None


def _schema_or_bool(values: dict[int, Any]) -> Any:
    """JSONSchemaPropsOrBool: the schema when there is one, else allows."""
    return values[2] if values[2] is not None else values[1]


def _list_or_schema(values: dict[int, Any]) -> Any:
    """JSONSchemaPropsOrStringArray, JSONSchemaPropsOrArray: the list (properties, schemas) when
    not empty, else the schema (or null)."""
    return values[2] if values[2] else values[1]


_APIEXTENSIONS = "k8s.io.apiextensions-apiserver.pkg.apis.apiextensions."
_META = "k8s.io.apimachinery.pkg.apis.meta.v1."
_TIMES = frozenset({_META + "Time", _META + "MicroTime"})
# The JSON of the messages whose Go types marshal their own, from their fields by number.
CUSTOM_JSON: dict[str, Callable[[dict[int, Any]], Any]] = {
    _META + "Time": _time,
    _META + "MicroTime": _micro_time,
    _META + "FieldsV1": _raw_json,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _quantity,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
    "k8s.io.apimachinery.pkg.runtime.RawExtension": _raw_json,
    **{
        _APIEXTENSIONS + version + name: handler
        for version in ("v1.", "v1beta1.")
        for name, handler in (
            ("JSON", _json),
            ("JSONSchemaPropsOrBool", _schema_or_bool),
            ("JSONSchemaPropsOrStringArray", _list_or_schema),
            ("JSONSchemaPropsOrArray", _list_or_schema),
        )
    },
}
