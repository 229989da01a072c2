"""API types: pydantic models of every streams.ibm.com/v1 kind, and their CRDs."""

from streams_k8s.api.base import API_VERSION, GROUP, VERSION, Condition, ObjectMeta, Resource
from streams_k8s.api.consistent_region import ConsistentRegion, ConsistentRegionOperator
from streams_k8s.api.host_pool import HostPool
from streams_k8s.api.import_export import Export, Import
from streams_k8s.api.job import Job
from streams_k8s.api.parallel_region import ParallelRegion
from streams_k8s.api.processing_element import ProcessingElement

# Every kind of the group, in the order CRDs are written.
KINDS: tuple[type[Resource], ...] = (
    Job,
    ProcessingElement,
    HostPool,
    ParallelRegion,
    ConsistentRegion,
    ConsistentRegionOperator,
    Import,
    Export,
)

__all__ = [
    "API_VERSION",
    "GROUP",
    "KINDS",
    "VERSION",
    "Condition",
    "ConsistentRegion",
    "ConsistentRegionOperator",
    "Export",
    "HostPool",
    "Import",
    "Job",
    "ObjectMeta",
    "ParallelRegion",
    "ProcessingElement",
    "Resource",
]
