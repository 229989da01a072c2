"""A PE's and a job's health as `streamtool lsjobs` and `lspes` summarise them, from the PE objects.

A PE is ``healthy`` when its pod runs and every one of its connections is up (connectivity
``Full``), ``partiallyHealthy`` when its pod runs with some connections down, ``unhealthy``
otherwise (no pod, or one pending, failed or stopping). A job is:

| health | its PEs |
|---|---|
| `healthy` | all healthy |
| `partiallyHealthy` | all running, some not fully connected |
| `partiallyUnhealthy` | some not running, some running |
| `unhealthy` | none running |
| `unknown` | none yet (not submitted, or no PE objects) |
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from streams_k8s.k8s.objects import Object


class Health(StrEnum):
    HEALTHY = "healthy"
    PARTIALLY_HEALTHY = "partiallyHealthy"
    PARTIALLY_UNHEALTHY = "partiallyUnhealthy"
    UNHEALTHY = "unhealthy"
    UNKNOWN = "unknown"


_RUNNING = "Running"
_FULL = "Full"


def pe_health(pe: Object) -> Health:
    status = pe.get("status") or {}
    if status.get("phase") != _RUNNING:
        return Health.UNHEALTHY
    return Health.HEALTHY if status.get("connectivity") == _FULL else Health.PARTIALLY_HEALTHY


def job_health(pes: Iterable[Object]) -> Health:
    healths = [pe_health(pe) for pe in pes]
    if not healths:
        return Health.UNKNOWN
    running = sum(h is not Health.UNHEALTHY for h in healths)
    if running == 0:
        return Health.UNHEALTHY
    if running < len(healths):
        return Health.PARTIALLY_UNHEALTHY
    return Health.HEALTHY if all(h is Health.HEALTHY for h in healths) else Health.PARTIALLY_HEALTHY
