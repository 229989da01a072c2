"""True processing rates: what one instance of an operator would process per second if it did
nothing else, estimated from a window of what the runtime measures.

DS2 divides the tuples an operator processed by its *useful time* (time not spent waiting for
input or for room downstream). The Streams runtime has no busy-time counter, so useful time is
estimated, in this order:

1. **saturated**: the instance's input queue is at least half full at both ends of the window
   (work waits for it) and no operator it sends to is congested at its end (its queue under
   90 %: it is not held back): it was busy the whole window, so its true rate is the rate it
   processed;
2. **CPU**: its PE pod's CPU seconds over the window (the resource metrics the HPA reads) times
   its share of its PE (``op_system_relative_operator_cost``) is the time it spent on tuples; a
   thread blocked on a full queue or waiting for input uses no CPU, so back-pressure and idling
   are left out, and the true rate is processed / useful;
3. otherwise (no CPU metrics, not saturated) the rate is unknown: what it processed is a lower
   bound only, and the decision keeps such an operator's region as wide as it is.

An operator's true rate is the mean over its instances with an estimate. Selectivity is
submitted / processed over all its instances.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streams_k8s.controller.autoscaling.observations import InstanceWindow, Window

SATURATED = 0.5  # input queue fill from which an unblocked instance is busy all the time
CONGESTED = 0.9  # a receiver's queue fill that holds its senders back
MIN_USEFUL = 0.005  # CPU seconds per second under which a rate from CPU is noise


@dataclass(frozen=True, slots=True)
class OperatorShape:
    """An operator of the job's logical graph as the autoscaler sees it."""

    name: str
    inputs: tuple[str, ...] = ()
    region: str | None = None  # the parallel region's alias


Topology = Sequence[OperatorShape]  # in topological order


@dataclass(frozen=True, slots=True)
class RateEstimate:
    operator: str
    true_rate: float | None  # tuples/s an instance processes when always busy (None: unknown)
    observed: float  # tuples/s processed by all its instances (a source: submitted)
    selectivity: float  # tuples out per tuple in (1 when nothing came in)
    how: str  # how its instances were estimated: "saturated", "cpu", "cpu+saturated", "unknown"
    # a source: tuples/s it is asked for, what it submitted plus what its backlog grew by (less
    # what it shrank by while it catches up): the rate its broker offers
    target: float = 0.0


def _instance_rate(i: InstanceWindow, blocked: bool) -> tuple[float | None, str]:
    if not i.is_source and min(i.fill, i.fill_start) >= SATURATED and not blocked:
        return i.processed, "saturated"
    if i.useful is not None and i.useful >= MIN_USEFUL:
        return (i.submitted if i.is_source else i.processed) / i.useful, "cpu"
    return None, "unknown"


def estimate(topology: Topology, window: Window) -> dict[str, RateEstimate]:
    """Every operator's estimate from one window."""
    readers: dict[str, list[str]] = {op.name: [] for op in topology}
    for op in topology:
        for upstream in op.inputs:
            readers.setdefault(upstream, []).append(op.name)
    fills: Mapping[str, float] = {
        op.name: max((i.fill for i in window.of(op.name)), default=0.0) for op in topology
    }
    found = {}
    for op in topology:
        instances = window.of(op.name)
        blocked = any(fills[r] >= CONGESTED for r in readers.get(op.name, ()))
        rates = [_instance_rate(i, blocked) for i in instances]
        known = [r for r, _ in rates if r is not None]
        processed = sum(i.processed for i in instances)
        submitted = sum(i.submitted for i in instances)
        source = bool(instances) and all(i.is_source for i in instances)
        found[op.name] = RateEstimate(
            op.name,
            sum(known) / len(known) if known else None,
            submitted if source else processed,
            submitted / processed if processed > 0 and not source else 1.0,
            "+".join(sorted({how for _, how in rates})) or "unknown",
            max(0.0, sum(i.submitted + i.pending_growth for i in instances)) if source else 0.0,
        )
    return found
