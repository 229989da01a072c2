"""The coordinator's eight Prometheus gauges per region, with the original's names and label, and
its own health (`CoordinatorMetrics`).

``region_samples`` is the pure mapping (region index + gauge values -> samples);
``RegionGauges`` keeps them in a prometheus-client registry for the metrics endpoint (9696).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from streams_k8s.consistent.fsm import GAUGE_NAMES
from streams_k8s.k8s.manager import Manager

LABEL = "ConsistentRegion"

DESCRIPTIONS: Mapping[str, str] = {
    "average_drain_time_milliseconds": "Average duration of the last 10 drains (checkpoints).",
    "average_reset_time_milliseconds": "Average duration of the last 10 resets.",
    "last_consistent_state_time_milliseconds": "When the last checkpoint completed (epoch ms).",
    "last_reset_time_milliseconds": "When the last reset completed (epoch ms).",
    "last_completed_drain_seq_id": "Sequence id of the last completed drain (-1: none yet).",
    "last_completed_reset_seq_id": "Sequence id reset to by the last completed reset (-1: none yet).",
    "state": "Region state: 0 STARTED, 1 PROCESSING, 2 UNHEALTHY, 3 DRAINING, 4 RESETTING, "
    "5 MAXIMUM_RESET_ATTEMPTS_REACHED, 6 CHECKPOINT_PENDING.",
    "n_current_reset_attempts": "Consecutive reset attempts since the last completed checkpoint.",
}


def region_label(region_index: int) -> str:
    return f"ConsistentRegion_{region_index}"


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: Mapping[str, str]
    value: float


def region_samples(region_index: int, gauges: Mapping[str, float]) -> list[Sample]:
    """The region's eight samples in the spec's order; ``gauges`` must name all eight."""
    missing = set(GAUGE_NAMES) - set(gauges)
    if missing:
        raise ValueError(f"missing gauge values: {', '.join(sorted(missing))}")
    labels = {LABEL: region_label(region_index)}
    return [Sample(name, labels, float(gauges[name])) for name in GAUGE_NAMES]


class GaugeSink(Protocol):
    """Where the coordinator loop sends a region's gauge values."""

    def update(self, region_index: int, gauges: Mapping[str, float]) -> None: ...

    def remove(self, region_index: int) -> None: ...


# Extra labels of the gauges when one coordinator runs regions of many jobs (shared mode).
JOB_LABELS = ("namespace", "job")


class RegionGauges:
    """The eight gauges in a registry, set from each region's values after every write.

    With ``per_job`` (shared mode) the gauges also carry ``namespace`` and ``job`` labels, and
    ``for_job`` gives the sink of one job's regions."""

    def __init__(self, registry: CollectorRegistry, *, per_job: bool = False) -> None:
        labels = [LABEL, *JOB_LABELS] if per_job else [LABEL]
        self.per_job = per_job
        self._gauges = {
            name: Gauge(name, DESCRIPTIONS[name], labels, registry=registry) for name in GAUGE_NAMES
        }

    def update(self, region_index: int, gauges: Mapping[str, float], job: Sequence[str] = ()) -> None:
        for sample in region_samples(region_index, gauges):
            self._gauges[sample.name].labels(sample.labels[LABEL], *job).set(sample.value)

    def remove(self, region_index: int, job: Sequence[str] = ()) -> None:
        """Drop a region that is gone (its job was deleted or moved to another coordinator)."""
        label = region_label(region_index)
        for gauge in self._gauges.values():
            with contextlib.suppress(KeyError):
                gauge.remove(label, *job)

    def for_job(self, namespace: str, job: str) -> GaugeSink:
        return _JobGauges(self, (namespace, job) if self.per_job else ())


@dataclass(frozen=True, slots=True)
class _JobGauges:
    gauges: RegionGauges
    job: tuple[str, ...]

    def update(self, region_index: int, gauges: Mapping[str, float]) -> None:
        self.gauges.update(region_index, gauges, self.job)

    def remove(self, region_index: int) -> None:
        self.gauges.remove(region_index, self.job)


class CoordinatorMetrics:
    """The coordinator's own health, next to the runtime's metrics in the same registry."""

    def __init__(self, manager: Manager) -> None:
        registry = manager.metrics.registry
        self.jobs = Gauge("streams_cr_coordinator_jobs", "Jobs this coordinator runs.", registry=registry)
        self.regions = Gauge(
            "streams_cr_coordinator_regions", "Regions this coordinator runs.", registry=registry
        )
        self.backlog = Gauge(
            "streams_cr_coordinator_event_backlog", "Events queued, not yet processed.", registry=registry
        )
        self.status_writes = Counter(
            "streams_cr_coordinator_status_writes",
            "ConsistentRegion status writes by result (ok, error).",
            ["result"],
            registry=registry,
        )
        self.status_write_seconds = Histogram(
            "streams_cr_coordinator_status_write_seconds",
            "Time to get a status write confirmed by the API server.",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=registry,
        )
        self.rejected = Gauge(
            "streams_cr_coordinator_rejected_events",
            "Events the FSMs refused (stale, duplicate, unknown), since start.",
            registry=registry,
        )
