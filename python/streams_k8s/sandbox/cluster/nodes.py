"""Simulated nodes: their configuration (names, zones, labels, taints, capacity) and Node objects."""

from __future__ import annotations

import hashlib
import ipaddress
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from streams_k8s.sandbox.release import KUBERNETES_VERSION

ZONE_LABEL = "topology.kubernetes.io/zone"
# Loopback addresses: a simulated PE calls from its own pod's address (`pe_runtime`). Node N's
# pods get 127.244.N.0/24.
POD_NETWORK = ipaddress.ip_network("127.244.0.0/16")
HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass
class NodeSpec:
    """One simulated node. `cpu` and `memory` are allocatable quantities."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    zone: str | None = None
    taints: list[dict[str, str]] = field(default_factory=list)
    cpu: str = "8"
    memory: str = "32Gi"
    pods: int = 110
    unschedulable: bool = False
    address: str | None = None

    def to_object(self, index: int) -> dict[str, Any]:
        labels = {
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            HOSTNAME_LABEL: self.name,
            **({ZONE_LABEL: self.zone} if self.zone else {}),
            **self.labels,
        }
        digest = hashlib.sha256(self.name.encode()).hexdigest()
        resources = {"cpu": str(self.cpu), "memory": str(self.memory), "pods": str(self.pods)}
        spec: dict[str, Any] = {"podCIDR": str(list(POD_NETWORK.subnets(new_prefix=24))[index])}
        if self.taints:
            spec["taints"] = self.taints
        if self.unschedulable:
            spec["unschedulable"] = True
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": labels},
            "spec": spec,
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "addresses": [
                    {"type": "InternalIP", "address": self.address or f"192.168.0.{index + 10}"},
                    {"type": "Hostname", "address": self.name},
                ],
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status (simulated)",
                    },
                ],
                "nodeInfo": {
                    "machineID": digest[:32],
                    "systemUUID": str(uuid.UUID(digest[:32])),
                    "bootID": digest[32:],
                    "kernelVersion": "6.1.0-sandbox",
                    "osImage": "streams-k8s sandbox",
                    "containerRuntimeVersion": "sandbox://1",
                    "kubeletVersion": f"v{KUBERNETES_VERSION}.0-sandbox",
                    "kubeProxyVersion": f"v{KUBERNETES_VERSION}.0-sandbox",
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                },
            },
        }


def make_nodes(count: int, zones: list[str] | None = None) -> list[NodeSpec]:
    """`count` nodes `node-0`..., spread round-robin over `zones` (when given)."""
    zones = zones or []
    return [NodeSpec(f"node-{i}", zone=zones[i % len(zones)] if zones else None) for i in range(count)]


def load_nodes(path: Path, zones: list[str] | None = None) -> list[NodeSpec]:
    """Nodes from a YAML file: a list (or `{nodes: [...]}`) of NodeSpec fields."""
    data = yaml.safe_load(path.read_text())
    if isinstance(data, dict):
        data = data.get("nodes")
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of nodes or a mapping with a 'nodes' list")
    specs = []
    known = set(NodeSpec.__dataclass_fields__)
    for i, entry in enumerate(data):
        if not isinstance(entry, dict) or "name" not in entry:
            raise ValueError(f"{path}: node #{i} must be a mapping with a 'name'")
        unknown = set(entry) - known
        if unknown:
            raise ValueError(f"{path}: node {entry['name']!r} has unknown fields {sorted(unknown)}")
        spec = NodeSpec(**entry)
        if spec.zone is None and zones:
            spec.zone = zones[i % len(zones)]
        specs.append(spec)
    return specs
