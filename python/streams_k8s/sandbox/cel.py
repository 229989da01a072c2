"""CRD `x-kubernetes-validations` (CEL) rules, evaluated with cel-python.

Rules that use Kubernetes-only CEL libraries (quantity(), url(), ...) cannot be compiled by
cel-python and are skipped with a warning rather than rejecting valid objects.

Ratcheting, as kube-apiserver does it since 1.30 (`CRDValidationRatcheting`, on by default): an
update that leaves the value a rule is on as it was gets no error from that rule unless the rule
uses ``oldSelf`` (transition rules always run). Such rules are not evaluated at all: besides
accepting what a real server accepts (an object stored before its CRD gained a rule), a status
write no longer evaluates every rule of the unchanged spec.

A rule gets only the fields of ``self`` (and ``oldSelf``) it names when it reads nothing else of
them: cel-python converts its whole input before evaluating, and a Job's root rules on
``self.metadata.name`` had it convert the job's status on every status write (1,000-element PE
lists of an upgrade record; kube-apiserver converts lazily, field by field).
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from typing import Any

import celpy
from celpy.adapter import json_to_cel

from streams_k8s.sandbox.errors import cause

log = logging.getLogger(__name__)


@lru_cache(maxsize=1024)
def _program(rule: str) -> Any:
    env = celpy.Environment()
    try:
        return env.program(env.compile(rule))
    except Exception as exc:  # cel-python raises its own parse error types
        log.warning("CEL rule %r cannot be compiled by cel-python and is skipped: %s", rule, exc)
        return None


# Whether a schema or one below it has rules, and transition rules, by the schema's id (kept with
# it, so an id is never taken for another schema's); a CRD's schemas are few, the table is
# emptied when full.
_RULED: dict[int, tuple[dict[str, Any], tuple[bool, bool]]] = {}
_RULED_MAX = 50_000


def check(obj: Any, old: Any, schema: dict[str, Any], path: str = "") -> list[dict[str, str]]:
    """Causes for every `x-kubernetes-validations` rule that evaluates to false."""
    errors: list[dict[str, str]] = []
    _walk(obj, old, schema, path, errors)
    return errors


def _ruled(schema: dict[str, Any]) -> tuple[bool, bool]:
    """Whether `schema` or a schema below it has rules, and transition rules: the parts of an
    object with none are not walked (a ProcessingElement's one rule is on
    `spec.checkpointRepository`), nor the unchanged parts of an update with no transition rule."""
    known = _RULED.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    below = [*(schema.get("properties") or {}).values(), schema.get("additionalProperties")]
    below.append(schema.get("items"))
    rules = [str(r.get("rule", "")) for r in schema.get("x-kubernetes-validations") or ()]
    found = [_ruled(sub) for sub in below if isinstance(sub, dict)]
    ruled = (
        bool(rules) or any(r for r, _ in found),
        any(_uses_old(r) for r in rules) or any(t for _, t in found),
    )
    if len(_RULED) >= _RULED_MAX:
        _RULED.clear()
    _RULED[id(schema)] = (schema, ruled)
    return ruled


def _uses_old(rule: str) -> bool:
    return "oldSelf" in rule


def _walk(value: Any, old: Any, schema: dict[str, Any], path: str, errors: list[dict[str, str]]) -> None:
    ruled, transitions = _ruled(schema)
    if value is None or not ruled:
        return
    unchanged = old is not None and value == old  # ratcheted (module docs)
    if unchanged and not transitions:
        return
    for rule in schema.get("x-kubernetes-validations") or []:
        if _uses_old(rule["rule"]) and old is None:
            continue  # transition rules only apply to updates
        if unchanged and not _uses_old(rule["rule"]):
            continue
        if not _holds(rule["rule"], value, old):
            field = path or "<root>"
            if rule.get("fieldPath"):
                field = f"{path}{rule['fieldPath']}" if path else rule["fieldPath"].lstrip(".")
            message = rule.get("message") or f"failed rule: {rule['rule']}"
            errors.append(
                cause(field, f'Invalid value: "object": {message}', rule.get("reason") or "FieldValueInvalid")
            )
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            sub_schema = props.get(key) if key in props else extra if isinstance(extra, dict) else None
            if sub_schema:
                sub_old = old.get(key) if isinstance(old, dict) else None
                _walk(sub, sub_old, sub_schema, f"{path}.{key}" if path else key, errors)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _walk(item, None, schema["items"], f"{path}[{i}]", errors)


# `self.field` (not `self.field(`: a macro or method on self) or a bare `self`.
_READS = {
    name: re.compile(rf"\b{name}\b(?:\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)(\s*\()?)?")
    for name in ("self", "oldSelf")
}


@lru_cache(maxsize=1024)
def _fields_read(rule: str, name: str) -> frozenset[str] | None:
    """The fields of ``name`` (``self`` or ``oldSelf``) the rule reads, when it reads them only as
    ``name.field``; None when it uses the value otherwise (whole, indexed, ``.?field``, macros)."""
    fields = set()
    for found in _READS[name].finditer(rule):
        if found.group(1) is None or found.group(2) is not None:
            return None
        fields.add(found.group(1))
    return frozenset(fields)


def _read_part(rule: str, name: str, value: Any) -> Any:
    fields = _fields_read(rule, name)
    if fields is None or not isinstance(value, dict):
        return value
    return {k: v for k, v in value.items() if k in fields}


def _holds(rule: str, value: Any, old: Any) -> bool:
    program = _program(rule)
    if program is None:
        return True
    activation = {"self": json_to_cel(_read_part(rule, "self", value))}
    if old is not None:
        activation["oldSelf"] = json_to_cel(_read_part(rule, "oldSelf", old))
    try:
        result = program.evaluate(activation)
    except Exception as exc:  # evaluation errors (missing field, type mismatch) fail the rule
        log.debug("CEL rule %r failed to evaluate: %s", rule, exc)
        return False
    return bool(result) if isinstance(result, bool | int) or type(result).__name__ == "BoolType" else False
