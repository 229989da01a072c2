"""The simulated nodes' pod addresses, and where a pod address listens on this host.

Each node hands out the addresses of its podCIDR in turn (host-local IPAM's round robin), never
one a live pod of the node holds: the kubelet adopts the addresses of the pods it finds before it
starts any (so a restarted simulation does not reuse them), and releases an address when its pod
terminates or goes.

Pods of a cluster have network namespaces of their own; on this host a pod whose container runs
as a process (`pod_processes`) listens on a loopback address of its own instead: 127.245.N.M for
pod address 10.244.N.M. `HostNetwork` is the one table "pod IP -> where it listens here" that
whoever calls a pod's address (a Service's endpoint) reads.
"""

from __future__ import annotations

import ipaddress

from streams_k8s.sandbox.cluster.nodes import POD_NETWORK

# Loopback addresses of the pods that listen on this host, offset as their pod addresses are.
HOST_NETWORK = ipaddress.ip_network("127.245.0.0/16")


class NoFreeAddress(Exception):
    """Every address of a node's podCIDR is held by a live pod."""


class PodAddresses:
    """The pod addresses in use on each node, and the next one each node gives out."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, str]] = {}  # pod uid -> (node, address)
        self._by_node: dict[str, set[str]] = {}
        self._next: dict[str, int] = {}

    def adopt(self, node: str, uid: str, address: str) -> None:
        """A live pod of ``node`` holds ``address`` (found running, or just given it)."""
        if self._held.get(uid) == (node, address):
            return
        self.release(uid)
        self._held[uid] = (node, address)
        self._by_node.setdefault(node, set()).add(address)

    def release(self, uid: str) -> None:
        held = self._held.pop(uid, None)
        if held is not None:
            self._by_node.get(held[0], set()).discard(held[1])

    def held_by(self, uid: str) -> str | None:
        held = self._held.get(uid)
        return held[1] if held is not None else None

    def allocate(self, node: str, cidr: str, uid: str) -> str:
        """The next free address of the node's ``cidr`` (network and broadcast left out)."""
        held = self.held_by(uid)
        if held is not None:
            return held
        network = ipaddress.ip_network(cidr, strict=False)
        hosts = network.num_addresses - 2
        if hosts < 1:
            raise NoFreeAddress(f"node {node}'s podCIDR {cidr} has no host addresses")
        used = self._by_node.setdefault(node, set())
        start = self._next.get(node, 0)
        for step in range(hosts):
            offset = (start + step) % hosts
            address = str(network.network_address + 1 + offset)
            if address not in used:
                self._next[node] = offset + 1
                self.adopt(node, uid, address)
                return address
        raise NoFreeAddress(f"every address of node {node}'s podCIDR {cidr} is held by a pod")


def host_address(pod_ip: str) -> str | None:
    """The loopback address a pod with ``pod_ip`` listens on here (None: outside the pod network)."""
    try:
        address = ipaddress.ip_address(pod_ip)
    except ValueError:
        return None
    if address not in POD_NETWORK:
        return None
    return str(HOST_NETWORK.network_address + (int(address) - int(POD_NETWORK.network_address)))


class HostNetwork:
    """Pod IP -> the address its processes listen on, on this host (only pods running a process)."""

    def __init__(self) -> None:
        self._listening: dict[str, str] = {}

    def listen(self, pod_ip: str, address: str) -> None:
        self._listening[pod_ip] = address

    def leave(self, pod_ip: str) -> None:
        self._listening.pop(pod_ip, None)

    def where(self, pod_ip: str) -> str | None:
        return self._listening.get(pod_ip)
