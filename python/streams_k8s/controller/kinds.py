"""REST resources the instance operator reads and writes."""

from __future__ import annotations

from streams_k8s.api import (
    GROUP,
    VERSION,
    ConsistentRegion,
    ConsistentRegionOperator,
    Export,
    HostPool,
    Import,
    Job,
    ParallelRegion,
    ProcessingElement,
)
from streams_k8s.k8s.client import Resource

JOBS = Resource(GROUP, VERSION, Job.plural, Job.kind_name)
PES = Resource(GROUP, VERSION, ProcessingElement.plural, ProcessingElement.kind_name)
HOSTPOOLS = Resource(GROUP, VERSION, HostPool.plural, HostPool.kind_name)
PODS = Resource("", "v1", "pods", "Pod")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SERVICES = Resource("", "v1", "services", "Service")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
PARALLEL_REGIONS = Resource(GROUP, VERSION, ParallelRegion.plural, ParallelRegion.kind_name)
CONSISTENT_REGIONS = Resource(GROUP, VERSION, ConsistentRegion.plural, ConsistentRegion.kind_name)
CONSISTENT_REGION_OPERATORS = Resource(
    GROUP, VERSION, ConsistentRegionOperator.plural, ConsistentRegionOperator.kind_name
)
EXPORTS = Resource(GROUP, VERSION, Export.plural, Export.kind_name)
IMPORTS = Resource(GROUP, VERSION, Import.plural, Import.kind_name)
SECRETS = Resource("", "v1", "secrets", "Secret")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
