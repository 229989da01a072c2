"""Kubernetes resource quantities ("100m", "1.5", "128Mi", "2G", "1e3"): the API server's grammar,
their exact values, and a quantity divided into shares. One parser for every layer (the models,
the controller, the sandbox)."""

from __future__ import annotations

import re
from decimal import ROUND_DOWN, Decimal
from fractions import Fraction
from functools import lru_cache

_NUMBER = r"[+-]?(\d+(\.\d*)?|\.\d+)"
_SUFFIX = r"([KMGTPE]i)|[numkMGTPE]|([eE][+-]?\d+)"
# The pattern CRDs carry for quantity strings (the API server's grammar).
QUANTITY_PATTERN = f"^{_NUMBER}({_SUFFIX})?$"
QUANTITY = re.compile(QUANTITY_PATTERN)
_PARTS = re.compile(f"^(?P<number>{_NUMBER})(?P<suffix>{_SUFFIX})?$")
_EXPONENT = re.compile(r"[eE][+-]?\d+")
_SCALE = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


def split_quantity(value: str | int | float) -> tuple[str, str]:
    """(number, unit suffix) of a quantity, an exponent counting as part of the number
    ("64Gi" → ("64", "Gi"), "1e3" → ("1e3", "")); ValueError for text that is not one."""
    match = _PARTS.match(str(value).strip())
    if match is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    number, suffix = match.group("number"), match.group("suffix") or ""
    if _EXPONENT.fullmatch(suffix):  # not "E" (exa) nor "Ei"
        return number + suffix, ""
    return number, suffix


@lru_cache(maxsize=4096)
def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a quantity; ValueError for text that is not one."""
    if isinstance(value, int | float):
        return Fraction(value)
    number, suffix = split_quantity(value)
    mantissa, _, exponent = number.lower().partition("e")
    return Fraction(mantissa) * Fraction(10) ** int(exponent or 0) * _SCALE[suffix]


def divide_quantity(quantity: str | int, parts: int) -> str:
    """`quantity / parts`, its unit suffix kept and at most 3 decimals (16 / 4 → "4", 64Gi / 4 → "16Gi")."""
    number, suffix = split_quantity(quantity)
    share = (Decimal(number) / parts).quantize(Decimal("0.001"), rounding=ROUND_DOWN).normalize()
    if share == 0:
        raise ValueError(
            f"{quantity} divided among {parts} PEs leaves nothing for each; raise it or give fewer PEs"
        )
    return f"{share:f}{suffix}"
