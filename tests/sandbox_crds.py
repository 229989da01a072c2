"""CRD manifests the sandbox tests write themselves (independent of the generated crds/)."""

from __future__ import annotations

from typing import Any

GROUP = "test.streams.ibm.com"


def widget_crd(scope: str = "Namespaced") -> dict[str, Any]:
    """A CRD exercising every schema feature the sandbox implements, plus status and scale."""
    spec_schema = {
        "type": "object",
        "required": ["color"],
        "x-kubernetes-validations": [
            {"rule": "self.size <= 5 || self.color == 'red'", "message": "only red widgets are bigger than 5"}
        ],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
            "color": {"type": "string", "enum": ["red", "blue"]},
            "label": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
            "replicas": {"type": "integer", "minimum": 0, "default": 1},
            "tags": {"type": "array", "maxItems": 3, "items": {"type": "string"}},
            "port": {"x-kubernetes-int-or-string": True},
            "note": {"type": "string", "nullable": True},
            "mode": {"type": "string", "default": "fast"},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "limits": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": spec_schema,
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "replicas": {"type": "integer"},
                                        "phase": {"type": "string"},
                                        "selector": {"type": "string"},
                                        "conditions": {
                                            "type": "array",
                                            "items": {
                                                "type": "object",
                                                "x-kubernetes-preserve-unknown-fields": True,
                                            },
                                        },
                                    },
                                },
                            },
                        }
                    },
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                    "additionalPrinterColumns": [
                        {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                    ],
                }
            ],
        },
    }


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"color": "blue", **spec},
    }


WIDGETS = f"/apis/{GROUP}/v1/namespaces/default/widgets"
