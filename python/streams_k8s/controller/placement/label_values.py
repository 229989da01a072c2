"""Label values: what Kubernetes accepts, and the runtime's sanitising of SPL names into them."""

from __future__ import annotations

import re

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
MAX_LABEL_VALUE = 63


def is_label_value(value: str) -> bool:
    """What Kubernetes accepts as a label value."""
    return len(value) <= MAX_LABEL_VALUE and _LABEL_VALUE.match(value) is not None


class LabelValueError(ValueError):
    """A token that cannot be represented as a Kubernetes label value."""


def sanitize_label_value(token: str) -> str:
    """The runtime's sanitising of SPL names into label values, then checked against Kubernetes rules.

    `[`/`]` → `-`, `::` → `.`, leading `_` → `u_`, trailing `_` → `_u`, leading `.` → `d.`,
    truncated to 63 characters. Unlike the original, a trailing `-` or `.` (as in `Op[3]`) is
    dropped: it made the value invalid. Values need not be unique: the key hashes the raw token.
    """
    value = token.replace("[", "-").replace("]", "-").replace("::", ".")
    if value.startswith("_"):
        value = "u" + value
    if value.endswith("_"):
        value += "u"
    if value.startswith("."):
        value = "d" + value
    value = value[:MAX_LABEL_VALUE].rstrip("-.")
    if not _LABEL_VALUE.match(value):
        raise LabelValueError(
            f"'{token}' cannot be a Kubernetes label value even as '{value}': use letters, digits, '-', '_' "
            "and '.', starting and ending with a letter or digit"
        )
    return value
