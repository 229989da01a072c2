"""Schemas for object metadata and for the fields of built-in kinds that the sandbox and its
simulated cluster read, so malformed objects get 422 with field causes instead of being stored.

They check shapes and a few value rules (label values, quantities, enums, port ranges); they do not
reproduce every validation of the real API server.
"""

from __future__ import annotations

from typing import Any

_STRING = {"type": "string"}
_STRING_MAP = {"type": "object", "additionalProperties": _STRING}
_LABEL_VALUE = {
    "type": "string",
    "maxLength": 63,
    "pattern": r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
}
_QUANTITY = {
    "x-kubernetes-int-or-string": True,
    "pattern": r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?\d+))?$",
}
_QUANTITY_MAP = {"type": "object", "additionalProperties": _QUANTITY}
_PORT = {"type": "integer", "minimum": 1, "maximum": 65535}

METADATA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": _STRING,
        "generateName": _STRING,
        "namespace": _STRING,
        "uid": _STRING,
        "resourceVersion": _STRING,
        "generation": {"type": "integer"},
        "labels": {"type": "object", "additionalProperties": _LABEL_VALUE},
        "annotations": _STRING_MAP,
        "finalizers": {"type": "array", "items": _STRING},
        "ownerReferences": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["apiVersion", "kind", "name", "uid"],
                "properties": {
                    "apiVersion": _STRING,
                    "kind": _STRING,
                    "name": _STRING,
                    "uid": _STRING,
                    "controller": {"type": "boolean"},
                    "blockOwnerDeletion": {"type": "boolean"},
                },
            },
        },
        "managedFields": {"type": "array", "items": {"type": "object"}},
    },
}

_SELECTOR = {
    "type": "object",
    "properties": {
        "matchLabels": {"type": "object", "additionalProperties": _LABEL_VALUE},
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "operator"],
                "properties": {
                    "key": _STRING,
                    "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "items": _STRING},
                },
            },
        },
    },
}

_CONTAINER = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": _STRING,
        "image": _STRING,
        "ports": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["containerPort"],
                "properties": {"containerPort": _PORT},
            },
        },
        "env": {
            "type": "array",
            "items": {"type": "object", "required": ["name"], "properties": {"name": _STRING}},
        },
        "resources": {"type": "object", "properties": {"requests": _QUANTITY_MAP, "limits": _QUANTITY_MAP}},
    },
}

_POD_SPEC = {
    "type": "object",
    "required": ["containers"],
    "properties": {
        "containers": {"type": "array", "minItems": 1, "items": _CONTAINER},
        "initContainers": {"type": "array", "items": _CONTAINER},
        "nodeName": _STRING,
        "nodeSelector": _STRING_MAP,
        "hostname": _STRING,
        "subdomain": _STRING,
        "schedulerName": _STRING,
        "restartPolicy": {"type": "string", "enum": ["Always", "OnFailure", "Never"]},
        "terminationGracePeriodSeconds": {"type": "integer", "minimum": 0},
        "tolerations": {"type": "array", "items": {"type": "object"}},
        "affinity": {"type": "object"},
    },
}

_WORKLOAD_SPEC = {
    "type": "object",
    "required": ["selector", "template"],
    "properties": {
        "replicas": {"type": "integer", "minimum": 0},
        "serviceName": _STRING,
        "podManagementPolicy": {"type": "string", "enum": ["OrderedReady", "Parallel"]},
        "selector": _SELECTOR,
        "template": {"type": "object", "properties": {"metadata": {"type": "object"}, "spec": _POD_SPEC}},
    },
}


def _with_spec(spec: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {"type": "object", "required": ["spec"] if required else [], "properties": {"spec": spec}}


KINDS: dict[tuple[str, str], dict[str, Any]] = {
    ("", "pods"): _with_spec(_POD_SPEC),
    ("", "services"): _with_spec(
        {
            "type": "object",
            "properties": {
                "type": {"type": "string", "enum": ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"]},
                "clusterIP": _STRING,
                "selector": _STRING_MAP,
                "ports": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["port"],
                        "properties": {
                            "name": _STRING,
                            "port": _PORT,
                            "targetPort": {"x-kubernetes-int-or-string": True},
                            "protocol": {"type": "string", "enum": ["TCP", "UDP", "SCTP"]},
                        },
                    },
                },
            },
        },
        required=False,
    ),
    ("apps", "statefulsets"): _with_spec(_WORKLOAD_SPEC),
    ("apps", "deployments"): _with_spec(_WORKLOAD_SPEC),
    ("", "nodes"): _with_spec(
        {
            "type": "object",
            "properties": {
                "unschedulable": {"type": "boolean"},
                "podCIDR": _STRING,
                "taints": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["key", "effect"],
                        "properties": {
                            "key": _STRING,
                            "value": _STRING,
                            "effect": {
                                "type": "string",
                                "enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"],
                            },
                        },
                    },
                },
            },
        },
        required=False,
    ),
    ("", "configmaps"): {"type": "object", "properties": {"data": _STRING_MAP, "binaryData": _STRING_MAP}},
    ("", "secrets"): {"type": "object", "properties": {"data": _STRING_MAP, "stringData": _STRING_MAP}},
    ("coordination.k8s.io", "leases"): _with_spec(
        {
            "type": "object",
            "properties": {
                "holderIdentity": _STRING,
                "leaseDurationSeconds": {"type": "integer"},
                "leaseTransitions": {"type": "integer"},
            },
        },
        required=False,
    ),
}
