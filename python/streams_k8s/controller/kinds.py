"""Our kinds' REST resources, derived from their models (built-in ones: `streams_k8s.k8s.kinds`)."""

from __future__ import annotations

from streams_k8s.api import (
    ConsistentRegion,
    ConsistentRegionOperator,
    Export,
    HostPool,
    Import,
    Job,
    JobAutoscaler,
    ParallelRegion,
    ProcessingElement,
)
from streams_k8s.k8s.client import Resource

JOBS = Resource.of(Job)
PES = Resource.of(ProcessingElement)
HOSTPOOLS = Resource.of(HostPool)
PARALLEL_REGIONS = Resource.of(ParallelRegion)
CONSISTENT_REGIONS = Resource.of(ConsistentRegion)
CONSISTENT_REGION_OPERATORS = Resource.of(ConsistentRegionOperator)
EXPORTS = Resource.of(Export)
IMPORTS = Resource.of(Import)
JOB_AUTOSCALERS = Resource.of(JobAutoscaler)
