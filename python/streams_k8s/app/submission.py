"""Submission-time values and parallel widths: what the user gives at submission, checked.

A value is matched to the ADL's ``submissionTimeValue`` by bare name, ``<composite>.<name>``
(``::`` or ``.`` in the composite name) or a partially qualified suffix of it. Missing required
values, names that match nothing and names that match several values are errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from streams_k8s.api.spec_values import MAX_WIDTH
from streams_k8s.app.model import AdlParallelRegion, Application, SubmissionTimeValue


class SubmissionError(ValueError):
    """The submission-time values or width overrides do not fit the application."""


class RegionWidth(Protocol):
    """A width given for the regions ``alias`` names: a Job's `ParallelRegionWidth`, a `WidthOverride`."""

    @property
    def alias(self) -> str: ...
    @property
    def width(self) -> int: ...


@dataclass(frozen=True, slots=True)
class WidthOverride:
    """``alias`` is a region name where ``*`` matches any run of characters."""

    alias: str
    width: int


def _qualified(v: SubmissionTimeValue) -> str:
    return f"{v.composite_name.replace('::', '.')}.{v.name}"


def _matches(given: str, v: SubmissionTimeValue) -> bool:
    full = _qualified(v)
    wanted = given.replace("::", ".")
    return wanted == v.name or full == wanted or full.endswith("." + wanted)


def _literal(value: str) -> str:
    """SPL string literals in the ADL keep their quotes (``"1"``); the runtime wants the text."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def match_values(app: Application, given: Mapping[str, str]) -> dict[int, str]:
    """The values the user gave, by submission-time value index (unknown/ambiguous names refused)."""
    matched: dict[int, str] = {}
    for name, value in given.items():
        hits = [v for v in app.submission_time_values if _matches(name, v)]
        if not hits:
            known = ", ".join(sorted(_qualified(v) for v in app.submission_time_values)) or "none"
            raise SubmissionError(f"unknown submission-time value '{name}' (the application has: {known})")
        if len(hits) > 1:
            options = ", ".join(sorted(_qualified(v) for v in hits))
            raise SubmissionError(
                f"submission-time value '{name}' is ambiguous: qualify it as one of {options}"
            )
        if hits[0].index in matched:
            raise SubmissionError(f"submission-time value {_qualified(hits[0])} is given twice")
        matched[hits[0].index] = value
    return matched


def resolve_values(app: Application, given: Mapping[str, str]) -> dict[int, str]:
    """Map each submission-time value index to its value (given, else default)."""
    resolved = match_values(app, given)
    for v in app.submission_time_values:
        if v.index in resolved:
            continue
        if v.default_value is not None:
            resolved[v.index] = _literal(v.default_value)
        elif v.required:
            raise SubmissionError(f"required submission-time value {_qualified(v)} is missing")
    return resolved


def spl_literal(value: str, kind: str) -> str:
    """How a given value appears in a runtime constant: an SPL rstring, or a list of them for
    ``namedList`` values (given comma-separated)."""

    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    if kind == "namedList":
        return "[" + ",".join(quoted(item.strip()) for item in value.split(",")) + "]"
    return quoted(value)


def _pattern(alias: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(part) for part in alias.split("*")) + "$")


def override_of(region: str, overrides: Sequence[WidthOverride]) -> WidthOverride | None:
    """The override that sets the width of the region named ``region`` (the last that matches)."""
    return next((o for o in reversed(overrides) if _pattern(o.alias).match(region)), None)


def _width_of(region: AdlParallelRegion, values: Mapping[int, str], app: Application) -> int:
    if region.constant_width is not None:
        return region.constant_width
    assert region.width_value_index is not None  # the parser requires one of the two
    raw = values.get(region.width_value_index)
    value = next((v for v in app.submission_time_values if v.index == region.width_value_index), None)
    label = _qualified(value) if value else f"#{region.width_value_index}"
    if raw is None:
        raise SubmissionError(f"parallel region {region.name}: width value {label} has no value")
    try:
        return int(_literal(raw).strip())
    except ValueError:
        raise SubmissionError(
            f"parallel region {region.name}: width value {label}={raw!r} is not an integer"
        ) from None


def resolve_widths(
    app: Application, values: Mapping[int, str], overrides: Sequence[RegionWidth] = ()
) -> dict[int, int]:
    """Width of every parallel region (by region index); the last matching override wins."""
    return apply_overrides(app, {r.index: _width_of(r, values, app) for r in app.parallel_regions}, overrides)


def apply_overrides(
    app: Application, widths: Mapping[int, int], overrides: Sequence[RegionWidth]
) -> dict[int, int]:
    """``widths`` with the overrides applied (alias patterns, last match wins), all checked to be
    from 1 to MAX_WIDTH (widths from submission-time values are not checked by the CRD)."""
    widths = dict(widths)
    for override in overrides:
        pattern = _pattern(override.alias)
        hits = [r for r in app.parallel_regions if pattern.match(r.name)]
        if not hits:
            known = ", ".join(r.name for r in app.parallel_regions) or "none"
            raise SubmissionError(f"no parallel region matches alias '{override.alias}' (regions: {known})")
        for region in hits:
            widths[region.index] = override.width
    for region in app.parallel_regions:
        if widths[region.index] < 1:
            raise SubmissionError(f"parallel region {region.name}: width {widths[region.index]} is below 1")
        if widths[region.index] > MAX_WIDTH:
            raise SubmissionError(
                f"parallel region {region.name}: width {widths[region.index]} is above {MAX_WIDTH}, the most "
                f"channels a region may have"
            )
    return widths
