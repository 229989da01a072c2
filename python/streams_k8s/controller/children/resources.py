"""Job-wide resources divided among the job's PEs."""

from __future__ import annotations

import re
from decimal import ROUND_DOWN, Decimal

from streams_k8s.api.base import ResourceRequirements

_SPLIT = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)([A-Za-z]*)$")


def divide_quantity(quantity: str | int, parts: int) -> str:
    """`quantity / parts`, its unit suffix kept and at most 3 decimals (16 / 4 → "4", 64Gi / 4 → "16Gi")."""
    match = _SPLIT.match(str(quantity))
    if match is None:
        raise ValueError(f"'{quantity}' is not a quantity")
    amount, suffix = match.groups()
    share = (Decimal(amount) / parts).quantize(Decimal("0.001"), rounding=ROUND_DOWN).normalize()
    if share == 0:
        raise ValueError(
            f"{quantity} divided among {parts} PEs leaves nothing for each; raise it or give fewer PEs"
        )
    return f"{share:f}{suffix}"


def divide_resources(resources: ResourceRequirements, parts: int) -> ResourceRequirements:
    """Each PE's share of the job's requests and limits."""
    return ResourceRequirements(
        requests={k: divide_quantity(v, parts) for k, v in (resources.requests or {}).items()} or None,
        limits={k: divide_quantity(v, parts) for k, v in (resources.limits or {}).items()} or None,
    )
