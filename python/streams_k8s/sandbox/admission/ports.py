"""Ports wherever they appear (containers, Services, Endpoints, EndpointSlices, NetworkPolicies):
numbers, IANA service names and protocols."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.admission import names
from streams_k8s.sandbox.admission.field_errors import FieldErrors

PROTOCOLS = ["SCTP", "TCP", "UDP"]


def protocol(value: str, path: str, errors: FieldErrors) -> None:
    if not value:
        errors.required(path)
    elif value not in PROTOCOLS:
        errors.not_supported(path, value, PROTOCOLS)


def number(value: int, path: str, errors: FieldErrors) -> None:
    errors.invalid_each(path, value, names.port_number(value))


def number_or_name(value: Any, path: str, errors: FieldErrors) -> None:
    """A port given by number or by the name of a container port."""
    if isinstance(value, int):
        number(value, path, errors)
    elif isinstance(value, str) and value:
        errors.invalid_each(path, value, names.port_name(value))
    else:
        errors.invalid(path, value if value is not None else 0, "must contain an int or a string")
