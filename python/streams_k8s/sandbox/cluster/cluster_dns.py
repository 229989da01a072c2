"""Name resolution for what the simulated pods call: a Service's DNS name (``svc.ns``,
``svc.ns.svc``, ``svc.ns.svc.cluster.local``) leads to its ready endpoints, at the loopback
address each listens on here (`HostNetwork`) and the Service port's target port, as cluster DNS
and kube-proxy would route it; an ExternalName Service's name is the name it gives (a CNAME, as
another watched namespace's `streams-api` names the operator's); any other name goes to the
system's resolver.

An aiohttp resolver: the URL keeps the Service's name, so the request's Host header is the one a
pod in the cluster would send (the shared coordinator pool tells jobs apart by it).
"""

from __future__ import annotations

import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from streams_k8s.k8s.objects import Object, ObjectKey
from streams_k8s.k8s.store import Store
from streams_k8s.sandbox.cluster.pod_network import HostNetwork
from streams_k8s.sandbox.cluster.service_endpoints import ServiceEndpoints

_CLUSTER_SUFFIXES = ((), ("svc",), ("svc", "cluster", "local"))
_MAX_ALIASES = 8  # ExternalName Services followed for one name (a loop of them resolves nothing)


class NoRoute(OSError):
    """A Service name with no ready endpoint reachable from this host."""


def service_of(host: str) -> ObjectKey | None:
    """(namespace, name) of a Service DNS name; None for any other host name."""
    parts = host.rstrip(".").split(".")
    if len(parts) < 2 or tuple(parts[2:]) not in _CLUSTER_SUFFIXES:
        return None
    return ObjectKey(parts[1], parts[0])


def external_name(service: Object | None) -> str | None:
    """The name an ExternalName Service stands for; None for any other Service."""
    spec = (service or {}).get("spec") or {}
    name = spec.get("externalName")
    return str(name) if spec.get("type") == "ExternalName" and name else None


class ClusterDns(AbstractResolver):
    def __init__(self, services: Store, endpoints: ServiceEndpoints, host_network: HostNetwork) -> None:
        self.services = services
        self.endpoints = endpoints
        self.host_network = host_network
        self._system = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        key = service_of(host)
        service = self.services.get(key) if key is not None else None
        for _ in range(_MAX_ALIASES):
            alias = external_name(service)
            if alias is None:
                break
            key = service_of(alias)
            if key is None:
                return await self._system.resolve(alias, port, family)
            service = self.services.get(key)
        if key is None or service is None:
            return await self._system.resolve(host, port, family)
        target = self.endpoints.target_port(key.namespace, service, port)
        here = [
            address
            for ip in self.endpoints.ready(key.namespace, key.name)
            if (address := self.host_network.where(ip)) is not None
        ]
        if not here:
            raise NoRoute(
                f"Service {key.name}.{key.namespace} has no ready endpoint reachable from this host"
            )
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=target,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in here
        ]

    async def close(self) -> None:
        await self._system.close()
