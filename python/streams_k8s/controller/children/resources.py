"""Job-wide resources divided among the job's PEs."""

from __future__ import annotations

from streams_k8s.api.base import ResourceRequirements
from streams_k8s.api.quantity import divide_quantity


def divide_resources(resources: ResourceRequirements, parts: int) -> ResourceRequirements:
    """Each PE's share of the job's requests and limits."""
    return ResourceRequirements(
        requests={k: divide_quantity(v, parts) for k, v in (resources.requests or {}).items()} or None,
        limits={k: divide_quantity(v, parts) for k, v in (resources.limits or {}).items()} or None,
    )
