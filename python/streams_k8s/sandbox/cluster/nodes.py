"""Simulated nodes: their configuration (names, zones, labels, taints, capacity), their pod
networks and the Node objects they register.

Pod addresses are not loopback ones: a real API server refuses loopback addresses in Endpoints and
EndpointSlices. Node N's pods get 10.244.N.0/24 (`POD_NETWORK`), N being the first /24 no other
node holds.
"""

from __future__ import annotations

import hashlib
import ipaddress
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from streams_k8s.sandbox.release import KUBERNETES_VERSION

ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# On every node the simulation registers: what it may adopt again after a restart.
SIMULATED_LABEL = "streams.ibm.com/simulated-node"
POD_NETWORK = ipaddress.ip_network("10.244.0.0/16")
NODE_PREFIX = 24


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

    def to_object(self, pod_cidr: str) -> dict[str, Any]:
        """The Node as its kubelet registers it, with this pod network."""
        labels = {
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            HOSTNAME_LABEL: self.name,
            SIMULATED_LABEL: "true",
            **({ZONE_LABEL: self.zone} if self.zone else {}),
            **self.labels,
        }
        spec: dict[str, Any] = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]}
        if self.taints:
            spec["taints"] = self.taints
        if self.unschedulable:
            spec["unschedulable"] = True
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": labels},
            "spec": spec,
            "status": self.status(pod_cidr),
        }

    def status(self, pod_cidr: str) -> dict[str, Any]:
        """What the node reports of itself: capacity, addresses, system info (conditions apart)."""
        digest = hashlib.sha256(self.name.encode()).hexdigest()
        resources = {"cpu": str(self.cpu), "memory": str(self.memory), "pods": str(self.pods)}
        # The node's own address: its pod network's .0 moved to 192.168 (a LAN address, not loopback).
        network = ipaddress.ip_network(pod_cidr)
        index = int(network.network_address) >> (32 - NODE_PREFIX) & 0xFF
        return {
            "capacity": resources,
            "allocatable": resources,
            "addresses": [
                {"type": "InternalIP", "address": self.address or f"192.168.0.{index % 240 + 10}"},
                {"type": "Hostname", "address": self.name},
            ],
            "nodeInfo": {
                "machineID": digest[:32],
                "systemUUID": str(uuid.UUID(digest[:32])),
                "bootID": digest[32:],
                "kernelVersion": "6.1.0-sandbox",
                "osImage": "streams-k8s simulated node",
                "containerRuntimeVersion": "sandbox://1",
                "kubeletVersion": f"v{KUBERNETES_VERSION}.0-sandbox",
                "kubeProxyVersion": f"v{KUBERNETES_VERSION}.0-sandbox",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }


def free_pod_cidr(taken: Iterable[str]) -> str:
    """The first /24 of `POD_NETWORK` that none of ``taken`` (other nodes' podCIDRs) overlaps."""
    used = []
    for cidr in taken:
        try:
            used.append(ipaddress.ip_network(cidr, strict=False))
        except ValueError:
            continue  # someone else's malformed CIDR takes nothing of ours
    for subnet in POD_NETWORK.subnets(new_prefix=NODE_PREFIX):
        if not any(subnet.overlaps(other) for other in used):
            return str(subnet)
    raise ValueError(f"every /{NODE_PREFIX} of the pod network {POD_NETWORK} is taken by a node")


def make_nodes(count: int, zones: list[str] | None = None, prefix: str = "node-") -> list[NodeSpec]:
    """`count` nodes `node-0`... (or another ``prefix``), spread round-robin over `zones`."""
    zones = zones or []
    return [NodeSpec(f"{prefix}{i}", zone=zones[i % len(zones)] if zones else None) for i in range(count)]


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
