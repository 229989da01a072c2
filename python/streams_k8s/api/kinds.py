"""Every kind of the group, in the order CRDs are written."""

from streams_k8s.api.autoscaler import JobAutoscaler
from streams_k8s.api.base import Resource
from streams_k8s.api.consistent_region import ConsistentRegion, ConsistentRegionOperator
from streams_k8s.api.host_pool import HostPool
from streams_k8s.api.import_export import Export, Import
from streams_k8s.api.job import Job
from streams_k8s.api.parallel_region import ParallelRegion
from streams_k8s.api.processing_element import ProcessingElement

KINDS: tuple[type[Resource], ...] = (
    Job,
    ProcessingElement,
    HostPool,
    ParallelRegion,
    ConsistentRegion,
    ConsistentRegionOperator,
    Import,
    Export,
    JobAutoscaler,
)
