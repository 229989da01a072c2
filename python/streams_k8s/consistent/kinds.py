"""Our kinds' REST resources the coordinator reads and writes, derived from their models (the
instance operator's are `controller.kinds`, which this layer may not import)."""

from __future__ import annotations

from streams_k8s.api import ConsistentRegion, ConsistentRegionOperator, Job, ProcessingElement
from streams_k8s.k8s.client import Resource

CONSISTENT_REGIONS = Resource.of(ConsistentRegion)
REGION_OPERATORS = Resource.of(ConsistentRegionOperator)
PROCESSING_ELEMENTS = Resource.of(ProcessingElement)
JOBS = Resource.of(Job)
