"""Custom resources: their CRD's structural schema (defaults, then types, formats and constraints)
and its `x-kubernetes-validations` CEL rules. Pruning of unknown fields happens when decoding."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox import cel, schema
from streams_k8s.sandbox.admission.field_errors import FieldErrors
from streams_k8s.sandbox.resources import ResourceType

_ENVELOPE = ("apiVersion", "kind", "metadata")


def validate(
    rt: ResourceType, version: str, obj: dict[str, Any], old: dict[str, Any] | None, errors: FieldErrors
) -> None:
    spec_schema = rt.schemas.get(version)
    if spec_schema is None:
        return
    defaulted = schema.apply_defaults(obj, spec_schema)
    if defaulted is not obj:
        obj.clear()
        obj.update(defaulted)
    errors.extend(
        schema.validate(
            {k: v for k, v in obj.items() if k not in _ENVELOPE},
            {**spec_schema, "required": [r for r in spec_schema.get("required") or [] if r not in _ENVELOPE]},
        )
    )
    errors.extend(cel.check(obj, old, spec_schema))
