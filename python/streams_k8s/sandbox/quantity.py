"""Kubernetes resource quantities ("100m", "1.5", "128Mi", "2G", "1e3") as exact numbers."""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$")
_SUFFIX = {
    None: Fraction(1),
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


@lru_cache(maxsize=4096)
def parse_quantity(value: str | int | float) -> Fraction:
    """The value of a quantity; raises ValueError for text that is not one."""
    if isinstance(value, int | float):
        return Fraction(value)
    match = _QUANTITY.match(value.strip())
    if not match:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    number, suffix = Fraction(match.group(1)), match.group(2)
    if suffix and suffix[0] in "eE":
        return number * Fraction(10) ** int(suffix[1:])
    return number * _SUFFIX[suffix]
