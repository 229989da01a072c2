"""The schema guard: every built-in object the sandbox accepts is also checked against
kubernetes-validate's strict schemas of the sandbox's Kubernetes release, so a write the sandbox
lets through but a real cluster's schema would not (an unknown field, a wrong type) is reported.

The check is `kubernetes-validate --strict`'s own: the same schema files, the same JSON-schema
validator (draft 2020-12), built once per kind instead of once per object. Objects already checked
are remembered by content, so a test suite pays for each distinct object once. Custom resources are
left to their CRDs' schemas, which the sandbox enforces itself.

`Sandbox(schema_guard=True)` turns it on; with `schema_guard=None` the environment variable
`STREAMS_K8S_SANDBOX_SCHEMA_GUARD=1` does (the pytest plugin sets it for a whole session, which also
reaches sandboxes started in other processes). Violations are kept in `violations` (and in the
process-wide `VIOLATIONS`) and logged as errors.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections import OrderedDict
from functools import cache
from typing import Any

import jsonschema
import orjson
from referencing import Registry, Resource

from streams_k8s.sandbox.admission.builtin_schemas import schema_file
from streams_k8s.sandbox.release import KUBERNETES_VERSION
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import WatchEvent

log = logging.getLogger(__name__)

ENVIRONMENT = "STREAMS_K8S_SANDBOX_SCHEMA_GUARD"
VIOLATIONS: list[str] = []
"""Every violation any guard of this process found, in order (the pytest plugin reads it)."""

_REMEMBERED = 50_000


def enabled_by_environment() -> bool:
    return os.environ.get(ENVIRONMENT, "") not in ("", "0", "false")


@cache
def _definitions() -> Resource[Any]:
    return Resource.from_contents(schema_file("_definitions.json", strict=True))


@cache
def _validator(api_version: str, kind: str) -> jsonschema.Draft202012Validator | None:
    # kubernetes-validate's file naming: rbac.authorization.k8s.io/v1 -> rbac-v1.
    mangled = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = schema_file(f"{kind.lower()}-{mangled}.json", strict=True)
    except FileNotFoundError:
        return None
    registry: Registry[Any] = _definitions() @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


class SchemaGuard:
    """A store listener that checks every stored built-in object (see the module docstring)."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self._checked: OrderedDict[bytes, None] = OrderedDict()

    def __call__(self, rt: ResourceType, event: WatchEvent) -> None:
        if not rt.builtin or event.type == "DELETED":
            return
        obj = event.obj
        encoded = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
        digest = hashlib.blake2b(encoded, digest_size=16).digest()
        if digest in self._checked:
            self._checked.move_to_end(digest)
            return
        problem = check(obj)
        self._checked[digest] = None
        if len(self._checked) > _REMEMBERED:
            self._checked.popitem(last=False)
        if problem is not None:
            self.violations.append(problem)
            VIOLATIONS.append(problem)
            log.error("schema guard: %s", problem)


def check(obj: dict[str, Any]) -> str | None:
    """Why `obj` breaks its kind's strict schema (None when it conforms or has no schema)."""
    validator = _validator(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if validator is None:
        return None
    error = jsonschema.exceptions.best_match(validator.iter_errors(obj))
    if error is None:
        return None
    meta = obj.get("metadata") or {}
    name = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
    where = ".".join(str(p) for p in error.absolute_path) or "<root>"
    return (
        f"{obj.get('kind')} {name}: {where}: {error.message} "
        f"(kubernetes-validate --strict, Kubernetes {KUBERNETES_VERSION})"
    )
