"""CustomResourceDefinitions generated from the API models (never edited by hand).

The models are the single source of truth: their pydantic JSON schema is turned into a Kubernetes
structural schema (refs inlined, null branches dropped, OpenAPI v3.0 keywords), their validators'
CEL twins become ``x-kubernetes-validations``, and the kind's ClassVars give names, printer
columns and subresources.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, NoDefault
from pydantic_core import core_schema

from streams_k8s.api.base import GROUP, VERSION, PrinterColumn, Resource
from streams_k8s.api.contract import APP_LABEL, APP_VALUE
from streams_k8s.api.kinds import KINDS
from streams_k8s.api.quantity import QUANTITY_PATTERN

# File names of the original operator's manifests, so diffs against it stay readable.
_FILE_NAMES = {
    "Job": "streams-job.yaml",
    "ProcessingElement": "streams-pe.yaml",
    "HostPool": "streams-hostpool.yaml",
    "ParallelRegion": "streams-pr.yaml",
    "ConsistentRegion": "streams-cr.yaml",
    "ConsistentRegionOperator": "streams-cro.yaml",
    "Import": "streams-import.yaml",
    "Export": "streams-export.yaml",
    "JobAutoscaler": "streams-autoscaler.yaml",
}

_INT_OR_STRING = {"integer", "string"}
# kube-apiserver shows an Age column by itself only for CRDs that declare no columns: ours declare
# it, after their own.
AGE = PrinterColumn(name="Age", type="date", json_path=".metadata.creationTimestamp")


class _KubernetesJsonSchema(GenerateJsonSchema):
    """Pydantic's generator, adjusted for what the API server can express and apply."""

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        # Defaults given by factories are real defaults for users: the API server should apply them.
        factory = schema.get("default_factory")
        if factory is not None and not schema.get("default_factory_takes_data"):
            return factory()  # type: ignore[call-arg]
        return schema.get("default", NoDefault)

    def encode_default(self, dft: Any) -> Any:
        if isinstance(dft, BaseModel):
            return dft.model_dump(mode="json", by_alias=True, exclude_none=True)
        return super().encode_default(dft)

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        # An absent field is how Kubernetes spells "unset"; the API server prunes explicit nulls.
        return self.generate_inner(schema["schema"])


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _structural(node: Any, defs: dict[str, Any]) -> Any:
    """Rewrite one JSON-schema node into the structural OpenAPI v3.0 subset Kubernetes accepts."""
    if isinstance(node, list):
        return [_structural(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    ref = node.pop("$ref", None)
    if ref is not None:
        node = {**defs[ref.rsplit("/", 1)[-1]], **node}
    node.pop("title", None)
    if node.get("additionalProperties") is False or (
        node.get("additionalProperties") is True and node.get("x-kubernetes-preserve-unknown-fields")
    ):  # structural schemas say "any field" with the extension, not a boolean
        del node["additionalProperties"]
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if isinstance(node.get("exclusiveMinimum"), int | float) and not isinstance(
        node["exclusiveMinimum"], bool
    ):
        node["minimum"], node["exclusiveMinimum"] = node["exclusiveMinimum"], True
    if "default" in node:
        if node["default"] is None:
            del node["default"]
        else:
            node["default"] = _without_nulls(node["default"])
    branches = node.get("anyOf")
    if branches is not None and {b.get("type") for b in branches} == _INT_OR_STRING:
        # Quantities: the API server's int-or-string, with the quantity grammar for strings.
        node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        node["pattern"] = QUANTITY_PATTERN
        node["x-kubernetes-int-or-string"] = True
    return {key: _structural(value, defs) for key, value in node.items()}


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural OpenAPI schema of one model, as a CRD embeds it."""
    raw = model.model_json_schema(by_alias=True, mode="validation", schema_generator=_KubernetesJsonSchema)
    defs = raw.pop("$defs", {})
    schema: dict[str, Any] = _structural(raw, defs)
    return schema


def _model_of(kind: type[Resource], field: str) -> type[BaseModel]:
    annotation = kind.model_fields[field].annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    # `status: StatusT | None`: the model is the non-None member of the union.
    members = [a for a in getattr(annotation, "__args__", ()) if a is not type(None)]
    model = members[0]
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"{kind.kind_name}.{field} is not a model")
    return model


def crd_manifest(kind: type[Resource]) -> dict[str, Any]:
    """The apiextensions.k8s.io/v1 CustomResourceDefinition of one kind."""
    subresources: dict[str, Any] = {"status": {}}
    if kind.scale_paths is not None:
        spec_path, status_path = kind.scale_paths
        subresources["scale"] = {"specReplicasPath": spec_path, "statusReplicasPath": status_path}
        subresources["scale"]["labelSelectorPath"] = ".status.selector"
    root: dict[str, Any] = {
        "description": kind.description,
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": structural_schema(_model_of(kind, "spec")),
            "status": structural_schema(_model_of(kind, "status")),
        },
    }
    if kind.cel_rules:  # rules on the whole object (the only place CEL may read metadata.name)
        root["x-kubernetes-validations"] = [rule._asdict() for rule in kind.cel_rules]
    version: dict[str, Any] = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": root},
        "subresources": subresources,
    }
    if kind.printer_columns:
        version["additionalPrinterColumns"] = [
            {
                "name": c.name,
                "type": c.type,
                "jsonPath": c.json_path,
                **({"description": c.description} if c.description else {}),
            }
            for c in (*kind.printer_columns, AGE)
        ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.plural}.{GROUP}", "labels": {APP_LABEL: APP_VALUE}},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind.kind_name,
                "listKind": f"{kind.kind_name}List",
                "plural": kind.plural,
                "singular": kind.singular,
                "shortNames": list(kind.short_names),
                "categories": ["streams"],
            },
            "scope": "Namespaced",
            "versions": [version],
        },
    }


def render_yaml(manifest: dict[str, Any]) -> str:
    return yaml.safe_dump(manifest, sort_keys=False, width=100, allow_unicode=True)


def crd_files() -> dict[str, str]:
    """File name → YAML text of every CRD, as checked in under `crds/`."""
    return {_FILE_NAMES[kind.kind_name]: render_yaml(crd_manifest(kind)) for kind in KINDS}


def write_crds(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in crd_files().items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
