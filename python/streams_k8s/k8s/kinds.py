"""The built-in REST resources several layers read and write (our own kinds: `Resource.of` a model)."""

from __future__ import annotations

from streams_k8s.k8s.client import Resource

PODS = Resource("", "v1", "pods", "Pod")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SERVICES = Resource("", "v1", "services", "Service")
SECRETS = Resource("", "v1", "secrets", "Secret")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
STATEFULSETS = Resource("apps", "v1", "statefulsets", "StatefulSet")
NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
