"""The built-in kinds' schemas: one source for decoding (field types, unknown fields), the OpenAPI
documents and the conformance guard.

They are kubernetes-validate's JSON schemas, generated from kube-apiserver's own OpenAPI document for
each Kubernetes release, so field names, types, descriptions, list keys and patch strategies are the
real server's, for the release the sandbox serves (`sandbox.release`).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import orjson

from streams_k8s.sandbox.release import KUBERNETES_VERSION

_DEFS_PREFIX = "#/$defs/"
# Definitions both decoding and the OpenAPI documents treat apart from the rest.
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
OBJECT_META = META + "ObjectMeta"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"


def _schema_dir(strict: bool) -> Any:
    name = f"v{KUBERNETES_VERSION}.0-local" + ("-strict" if strict else "")
    try:
        package = resources.files("kubernetes_validate")
    except ModuleNotFoundError:
        raise RuntimeError(
            "the sandbox needs the kubernetes-validate package: pip install 'streams-k8s[sandbox]'"
        ) from None
    return package / "kubernetes-json-schema" / name


def schema_file(name: str, strict: bool) -> dict[str, Any]:
    """One file of kubernetes-validate's schemas for the sandbox's release."""
    loaded: dict[str, Any] = orjson.loads((_schema_dir(strict) / name).read_bytes())
    return loaded


@cache
def definitions() -> dict[str, dict[str, Any]]:
    """Every definition by its OpenAPI name (`io.k8s.api.core.v1.Pod`); `$ref`s point within."""
    defs: dict[str, dict[str, Any]] = schema_file("_definitions.json", strict=False)["$defs"]
    return defs


@cache
def _by_kind() -> dict[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            index[(gvk["group"], gvk["version"], gvk["kind"])] = name
    return index


def definition_name(group: str, version: str, kind: str) -> str | None:
    """The definition of a kind (None for kinds the release does not have)."""
    return _by_kind().get((group, version, kind))


def ref_name(ref: str) -> str:
    """The definition a `$ref` names."""
    return ref[ref.index(_DEFS_PREFIX) + len(_DEFS_PREFIX) :]


def resolve(schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A schema with its `$ref` followed, and the name of the definition it came from."""
    ref = schema.get("$ref")
    if ref is None:
        return schema, None
    name = ref_name(ref)
    return definitions()[name], name
