"""API types: pydantic models of every streams.ibm.com/v1 kind, and their CRDs.

The names below are loaded on first use (PEP 562), not when the package is: importing one of its
modules that does not need pydantic (`contract`, `spec_values`, `quantity`) must not load every
model, so that `streams-k8s plan` of a bundle loads none.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streams_k8s.api.autoscaler import JobAutoscaler
    from streams_k8s.api.base import API_VERSION, GROUP, VERSION, Condition, ObjectMeta, Resource
    from streams_k8s.api.consistent_region import ConsistentRegion, ConsistentRegionOperator
    from streams_k8s.api.host_pool import HostPool
    from streams_k8s.api.import_export import Export, Import
    from streams_k8s.api.job import Job
    from streams_k8s.api.kinds import KINDS
    from streams_k8s.api.parallel_region import ParallelRegion
    from streams_k8s.api.processing_element import ProcessingElement

_EXPORTS = {
    "API_VERSION": "streams_k8s.api.base",
    "GROUP": "streams_k8s.api.base",
    "VERSION": "streams_k8s.api.base",
    "Condition": "streams_k8s.api.base",
    "ObjectMeta": "streams_k8s.api.base",
    "Resource": "streams_k8s.api.base",
    "ConsistentRegion": "streams_k8s.api.consistent_region",
    "ConsistentRegionOperator": "streams_k8s.api.consistent_region",
    "Export": "streams_k8s.api.import_export",
    "HostPool": "streams_k8s.api.host_pool",
    "Import": "streams_k8s.api.import_export",
    "Job": "streams_k8s.api.job",
    "JobAutoscaler": "streams_k8s.api.autoscaler",
    "KINDS": "streams_k8s.api.kinds",
    "ParallelRegion": "streams_k8s.api.parallel_region",
    "ProcessingElement": "streams_k8s.api.processing_element",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


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
    "JobAutoscaler",
    "ObjectMeta",
    "ParallelRegion",
    "ProcessingElement",
    "Resource",
]
