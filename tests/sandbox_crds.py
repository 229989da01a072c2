"""CRD manifests the sandbox tests write themselves (independent of the generated crds/). A test
that changes the CRD itself gives it a group of its own (the real server's CRDs outlive a test)."""

from __future__ import annotations

from typing import Any

GROUP = "test.streams.ibm.com"


def widget_crd(
    scope: str = "Namespaced", group: str = GROUP, short_names: tuple[str, ...] = ("wd",)
) -> dict[str, Any]:
    """A CRD exercising every schema feature the sandbox implements, plus status and scale. A
    second Widget CRD beside the first (another group) goes without `wd`: kubectl would have to
    choose between them."""
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
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "shortNames": list(short_names),
            },
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


def widget(name: str, *, group: str = GROUP, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"color": "blue", **spec},
    }


def widgets_path(group: str = GROUP) -> str:
    """Where Widgets of `group` live in the test's namespace (a `Writes` or client path)."""
    return f"/apis/{group}/v1/namespaces/{{namespace}}/widgets"


WIDGETS = widgets_path()
