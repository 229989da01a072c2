"""The protobuf wire format as Kubernetes' generated (gogo-protobuf) code reads it: varints, fixed
numbers, length-delimited fields, and the scalar values they carry, with that code's error texts."""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from typing import Any

WIRE_TYPES = {"varint": 0, "fixed64": 1, "bytes": 2, "fixed32": 5}
VARINT, FIXED64, BYTES, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5


class WireError(ValueError):
    """Bytes that are not the message they should be: worded as gogo-protobuf's generated code."""


def varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if shift >= 64:
            raise WireError("proto: integer overflow")
        if pos >= len(data):
            raise WireError("unexpected EOF")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7


def wire_fields(data: bytes, message: str) -> Iterator[tuple[int, int, int | bytes]]:
    """Each field of a message, in order: number, wire type, and an int (varint, fixed) or the bytes
    (length-delimited). Groups, which no Kubernetes message has, are skipped."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == END_GROUP:
            raise WireError(f"proto: {message}: wiretype end group for non-group")
        if number <= 0:
            raise WireError(f"proto: {message}: illegal tag {number} (wire type {wire})")
        value: int | bytes
        if wire == VARINT:
            value, pos = varint(data, pos)
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
            if pos + size > end:
                raise WireError("unexpected EOF")
            value, pos = int.from_bytes(data[pos : pos + size], "little"), pos + size
        elif wire == BYTES:
            length, pos = varint(data, pos)
            if length >= 1 << 63:
                raise WireError("proto: negative length found during unmarshaling")
            if pos + length > end:
                raise WireError("unexpected EOF")
            value, pos = data[pos : pos + length], pos + length
        elif wire == START_GROUP:
            pos = _skip_group(data, pos)
            continue
        else:
            raise WireError(f"proto: illegal wireType {wire}")
        yield number, wire, value


def _skip_group(data: bytes, pos: int) -> int:
    depth = 1
    while depth:
        key, pos = varint(data, pos)
        wire = key & 7
        if wire == START_GROUP:
            depth += 1
        elif wire == END_GROUP:
            depth -= 1
        elif wire == VARINT:
            _, pos = varint(data, pos)
        elif wire in (FIXED64, FIXED32):
            pos += 8 if wire == FIXED64 else 4
        elif wire == BYTES:
            length, pos = varint(data, pos)
            pos += length
        else:
            raise WireError(f"proto: illegal wireType {wire}")
        if pos > len(data):
            raise WireError("unexpected EOF")
    return pos


def length_delimited(wire: int, value: int | bytes, field: str) -> bytes:
    if wire != BYTES or not isinstance(value, bytes):
        raise WireError(f"proto: wrong wireType = {wire} for field {field}")
    return value


def text(data: bytes) -> str:
    # Go keeps the bytes; its JSON encoder writes each invalid one as U+FFFD
    return data.decode("utf-8", errors="replace")


def scalar(type_: str, value: int) -> Any:
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
        raise WireError(f"json: unsupported value: {number}")
    return int(number) if number.is_integer() else number  # Go writes 5, not 5.0
