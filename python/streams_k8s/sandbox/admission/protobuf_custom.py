"""The JSON of the Kubernetes types that marshal their own (times, quantities, int-or-strings, the
apiextensions either-or types), from their message's fields by number."""

from __future__ import annotations

import datetime
from typing import Any

from streams_k8s.sandbox.admission.protobuf_wire import WireError

_ZERO_TIME = -62135596800  # Go's zero time.Time (January 1, year 1) in Unix seconds


def time(values: dict[int, Any]) -> Any:
    """metav1.Time: whole seconds (its nanos are not read), RFC 3339 in UTC; the zero time is null."""
    return _timestamp(values[1] * 1_000_000_000, "")


def micro_time(values: dict[int, Any]) -> Any:
    """metav1.MicroTime: RFC 3339 with microseconds in UTC; the zero time is null."""
    nanos = values[1] * 1_000_000_000 + values[2]
    return _timestamp(nanos, f".{nanos % 1_000_000_000 // 1000:06d}")


def _timestamp(nanos: int, fraction: str) -> Any:
    if nanos == _ZERO_TIME * 1_000_000_000:
        return None
    try:
        moment = _EPOCH + datetime.timedelta(seconds=nanos // 1_000_000_000)
    except OverflowError:
        raise WireError("Time.MarshalJSON: year outside of range [0,9999]") from None
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}{fraction}Z"


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def quantity(values: dict[int, Any]) -> Any:
    """resource.Quantity: its string (Go clients send the canonical form); none is "0"."""
    return values[1] or "0"


def int_or_string(values: dict[int, Any]) -> Any:
    """intstr.IntOrString: type 0 is the int, 1 the string."""
    if values[1] == 0:
        return values[2]
    if values[1] == 1:
        return values[3]
    raise WireError("impossible IntOrString.Type")


def schema_or_bool(values: dict[int, Any]) -> Any:
    """JSONSchemaPropsOrBool: the schema when there is one, else allows."""
    return values[2] if values[2] is not None else values[1]


def list_or_schema(values: dict[int, Any]) -> Any:
    """JSONSchemaPropsOrStringArray, JSONSchemaPropsOrArray: the list (properties, schemas) when
    not empty, else the schema (or null)."""
    return values[2] if values[2] else values[1]
