"""A region's health, derived from its PEs and their current pods (the FSM's Health input).

A PE is healthy when its connectivity is Full and the pod of its current launch, owned by that
PE object, is Running. A launch count above 1 means the PE restarted: not a clean start, so
the region will be reset to its last checkpoint. The original dropped the whole observation as
soon as one PE or pod was missing; here a PE known to be unhealthy makes the region unhealthy
at once, and only an otherwise healthy region with missing objects is "unknown" (no event).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from streams_k8s.api.processing_element import (
    Connectivity,
    ProcessingElement,
    ProcessingElementStatus,
)
from streams_k8s.consistent.fsm import Health


@dataclass(frozen=True, slots=True)
class PodObservation:
    """What the coordinator needs of a PE pod (from its labels, owner and status)."""

    pe: int
    launch_count: int
    owner_uid: str | None
    phase: str | None


def region_health(
    pes_in_region: Iterable[int],
    pes: Mapping[int, ProcessingElement],
    pods: Iterable[PodObservation],
) -> Health | None:
    """The Health event for the region, or None while some PE or pod is not known yet."""
    current = {(p.pe, p.launch_count, p.owner_uid): p for p in pods}
    healthy = True
    unknown = False
    clean_start = True
    for pe_id in pes_in_region:
        pe = pes.get(pe_id)
        if pe is None:
            unknown = True
            continue
        # A PE without status has not been launched or connected yet.
        status = pe.status or ProcessingElementStatus()
        if status.launch_count > 1:
            clean_start = False
        if status.connectivity is not Connectivity.FULL:
            healthy = False
        pod = current.get((pe_id, status.launch_count, pe.metadata.uid))
        if pod is None:
            unknown = True
        elif pod.phase != "Running":
            healthy = False
    if not healthy:
        return Health(healthy=False, clean_start=clean_start)
    if unknown:
        return None
    return Health(healthy=True, clean_start=clean_start)
