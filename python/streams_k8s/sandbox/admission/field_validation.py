"""A write request's `fieldValidation` directive (Strict, Warn: the default, Ignore) and its body
parsed as kube-apiserver parses it: JSON or YAML with duplicate fields found, which the directive
turns into an error, a `Warning` response header each, or nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml

from streams_k8s.sandbox.admission.field_errors import FieldErrors
from streams_k8s.sandbox.errors import ApiError, bad_request, invalid
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.warnings import warn

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"


@dataclass
class FieldValidation:
    """One write request's `fieldValidation` directive, and the duplicate fields found while
    parsing its body. Warnings go to the request's `Warning` headers (`sandbox.warnings`)."""

    directive: str = WARN
    # A PATCH (other than apply): errors are reported as an invalid `patch`, whose value is the
    # patched object (JSON and merge patches) or the patch (strategic merge patches).
    patch: str | None = None
    duplicates: list[str] = field(default_factory=list)

    @classmethod
    def from_query(cls, value: str | None) -> FieldValidation:
        directive = value or WARN
        if directive not in (STRICT, WARN, IGNORE):
            errors = FieldErrors()
            errors.not_supported("fieldValidation", directive, ["", IGNORE, STRICT, WARN])
            raise invalid("CreateOptions", "", errors, "meta.k8s.io")
        return cls(directive)

    def report(self, rt: ResourceType, version: str, problems: list[str]) -> None:
        """Apply the directive to unknown/duplicate-field problems of the decoded object."""
        if not problems or self.directive == IGNORE:
            return
        if self.directive == WARN:
            for problem in problems:
                warn(problem)
            return
        raise self.decode_error(rt, version, "strict decoding error: " + ", ".join(problems))

    def decode_error(self, rt: ResourceType, version: str, why: str) -> ApiError:
        """A body the kind cannot be decoded from: 400 for a create or update, 422 for a patch."""
        if self.patch is not None:
            errors = FieldErrors()
            errors.invalid("patch", self.patch, why)
            return invalid("", "", errors)
        return bad_request(f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}: {why}')


# -- parsing request bodies ---------------------------------------------------------------------


def parse_json(body: bytes, fields: FieldValidation | None) -> Any:
    """A JSON body; with field validation on, duplicate keys are noted (by path) for the directive."""
    if fields is None or fields.directive == IGNORE:
        return orjson.loads(body)
    seen: dict[int, list[str]] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) < len(items):  # a key set twice: which, in order
            keys: set[str] = set()
            repeated = []
            for k, _ in items:
                if k in keys:
                    repeated.append(k)
                keys.add(k)
            seen[id(out)] = repeated
        return out

    parsed = json.loads(body, object_pairs_hook=pairs)
    if seen:
        fields.duplicates.extend(_duplicate_paths(parsed, seen, ""))
    return parsed


def _duplicate_paths(value: Any, seen: dict[int, list[str]], path: str) -> list[str]:
    out = []
    if isinstance(value, dict):
        out += [f'duplicate field "{join_path(path, k)}"' for k in seen.get(id(value), [])]
        for k, v in value.items():
            out += _duplicate_paths(v, seen, join_path(path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _duplicate_paths(v, seen, f"{path}[{i}]")
    return out


class _DuplicateKeyLoader(yaml.SafeLoader):
    """Safe YAML that records keys set twice in a mapping (YAML otherwise keeps the last)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.repeated: list[str] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = set()
        for key_node, _ in node.value:
            k = self.construct_object(key_node, deep=deep)
            if k in keys:
                self.repeated.append(f'line {key_node.start_mark.line + 1}: key "{k}" already set in map')
            keys.add(k)
        return super().construct_mapping(node, deep=deep)


def parse_yaml(body: bytes, fields: FieldValidation | None) -> Any:
    """A YAML body (server-side apply); repeated keys fail a Strict request, or warn."""
    loader = _DuplicateKeyLoader(body)
    try:
        data = loader.get_single_data()
    finally:
        loader.dispose()
    if loader.repeated and fields is not None and fields.directive != IGNORE:
        why = "error converting YAML to JSON: yaml: unmarshal errors:\n  " + "\n  ".join(loader.repeated)
        if fields.directive == STRICT:
            raise bad_request(f"error strict decoding YAML: {why}")
        warn(why)
    return data


def join_path(path: str, name: str) -> str:
    """A field's dotted path under `path` (the top level: '')."""
    return f"{path}.{name}" if path else name
