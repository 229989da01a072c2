"""The flow model: what every operator instance of a job processes, queues and submits, stepped
over simulated time by one pure function (`step`), with no I/O and no clock of its own.

A fluid model of the Streams runtime's threaded ports: each instance has an input queue of
``queueSize`` tuples; it processes at most ``peCapacity / cost`` tuples/s (its PE's CPU; fused
instances share their PE's capacity in proportion to what they ask of it) and submits
``selectivity`` tuples per tuple processed. A step of ``dt`` seconds makes three passes:

1. demand, in topological order: what each instance would process (its queue plus what arrives,
   up to its capacity), sources offering their rate at ``t`` plus any backlog;
2. back-pressure, in reverse order: an instance accepts what it processes plus the room left in
   its queue; a sender whose output is accepted only in part is slowed as a whole (it blocks on
   the full connection, as the runtime's round-robin submit does), so a bottleneck's queue fills
   first, then those of the operators upstream of it, up to the sources, whose unsent tuples wait
   as a backlog (a source reading a broker lags behind it);
3. flow: what each instance really processes and submits, queues updated, counters advanced.

So congestion (a receiver's queue fill, as ``pe_output_congestion_factor`` reports it on the
connection) shows upstream of a bottleneck, and a width change (`resize`) spreads an operator's
load and queued tuples over its new channels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from streams_k8s.sandbox.flow.graph import FlowGraph, Instance

FULL = 0.95  # a queue this full makes its senders wait (a fluid queue settles just under its size)
RECENT = 5.0  # seconds over which `recent_max_queued` is kept, as the runtime's recent-max interval


@dataclass(frozen=True, slots=True)
class InstanceState:
    """One instance's queue and cumulative counters (tuples, CPU seconds)."""

    queued: float = 0.0  # input queue; for a source, its backlog of tuples not yet submitted
    processed: float = 0.0
    submitted: float = 0.0
    dropped: float = 0.0
    enqueue_waits: float = 0.0  # tuples its senders had to wait to enqueue (sent to it while full)
    busy: float = 0.0  # CPU seconds spent
    pace: float = 0.0  # tuples/s processed (a source's: submitted) over the last step
    cpu: float = 0.0  # CPU seconds per second over the last step
    max_queued: float = 0.0
    recent_max_queued: float = 0.0
    recent_since: float = 0.0


@dataclass(frozen=True, slots=True)
class FlowState:
    t: float
    instances: Mapping[Instance, InstanceState]

    def of(self, instance: Instance) -> InstanceState:
        return self.instances.get(instance, _EMPTY)


_EMPTY = InstanceState()


def start(graph: FlowGraph, t: float = 0.0) -> FlowState:
    return FlowState(t, {i: InstanceState(recent_since=t) for i in graph.instances})


def capacity(graph: FlowGraph, instance: Instance) -> float:
    """Tuples/s the instance processes with its PE to itself (the ground truth an estimator seeks)."""
    cost = graph.load(instance).cost
    return graph.workload.pe_capacity / cost if cost > 0 else math.inf


def _demand(
    graph: FlowGraph, state: FlowState, dt: float
) -> tuple[dict[Instance, float], dict[Instance, float]]:
    """Pass 1: what each instance would process, and what would arrive at each."""
    arrivals = dict.fromkeys(graph.instances, 0.0)
    potential: dict[Instance, float] = {}
    for i in graph.instances:
        op = graph.load(i)
        queued = state.of(i).queued
        if op.source is not None:
            available = op.source.at(state.t) / graph.width(op) + queued / dt
        else:
            available = queued / dt + arrivals[i]
        potential[i] = min(available, capacity(graph, i))
        for link in graph.outgoing[i]:
            arrivals[link.receiver] += potential[i] * op.selectivity * link.share
    asked: dict[str, float] = {}
    for i, rate in potential.items():
        asked[graph.pe_of[i]] = asked.get(graph.pe_of[i], 0.0) + rate * graph.load(i).cost
    for i in potential:
        cpu = asked[graph.pe_of[i]]
        if cpu > graph.workload.pe_capacity:
            potential[i] *= graph.workload.pe_capacity / cpu
    return potential, arrivals


def _throttles(
    graph: FlowGraph,
    state: FlowState,
    dt: float,
    potential: Mapping[Instance, float],
    arrivals: Mapping[Instance, float],
) -> dict[Instance, float]:
    """Pass 2: the fraction of its pace each instance keeps once its receivers push back."""
    room = graph.workload.queue_size
    accepted: dict[Instance, float] = {}
    throttle: dict[Instance, float] = {}
    for i in reversed(graph.instances):
        f = min((accepted[link.receiver] for link in graph.outgoing[i]), default=1.0)
        throttle[i] = f
        if graph.load(i).source is None:
            accept = f * potential[i] + (room - state.of(i).queued) / dt
            accepted[i] = 1.0 if arrivals[i] <= accept else max(0.0, accept / arrivals[i])
    return throttle


def step(graph: FlowGraph, state: FlowState, dt: float) -> FlowState:
    """The state `dt` seconds later."""
    potential, demanded = _demand(graph, state, dt)
    throttle = _throttles(graph, state, dt, potential, demanded)
    room = graph.workload.queue_size
    t = state.t + dt
    arrivals = dict.fromkeys(graph.instances, 0.0)
    new: dict[Instance, InstanceState] = {}
    for i in graph.instances:
        op, s = graph.load(i), state.of(i)
        if op.source is not None:
            processed = throttle[i] * potential[i]
            queued = max(0.0, s.queued + (op.source.at(state.t) / graph.width(op) - processed) * dt)
            dropped = 0.0
        else:
            processed = min(throttle[i] * potential[i], s.queued / dt + arrivals[i])
            queued = max(0.0, s.queued + (arrivals[i] - processed) * dt)
            dropped = max(0.0, queued - room)
            queued -= dropped
        out = processed * op.selectivity
        for link in graph.outgoing[i]:
            arrivals[link.receiver] += out * link.share
        # every tuple enqueued while the queue is full waited for room
        waits = arrivals[i] * dt if op.source is None and queued >= room * FULL else 0.0
        fresh = t - s.recent_since >= RECENT
        new[i] = InstanceState(
            queued=queued,
            processed=s.processed + processed * dt,
            submitted=s.submitted + out * dt,
            dropped=s.dropped + dropped,
            enqueue_waits=s.enqueue_waits + waits,
            busy=s.busy + processed * op.cost * dt,
            pace=out if op.source is not None else processed,
            cpu=processed * op.cost,
            max_queued=max(s.max_queued, queued),
            recent_max_queued=queued if fresh else max(s.recent_max_queued, queued),
            recent_since=t if fresh else s.recent_since,
        )
    return FlowState(t, new)


def resize(old: FlowGraph, state: FlowState, new: FlowGraph) -> FlowState:
    """The state after a width change: channels that remain keep their counters, an operator's
    queued tuples are spread evenly over its new channels, new channels start empty."""
    queued: dict[str, float] = {}
    for (name, channel), s in state.instances.items():
        if (name, channel) in old.outgoing:
            queued[name] = queued.get(name, 0.0) + s.queued
    instances: dict[Instance, InstanceState] = {}
    for i in new.instances:
        width = new.width(new.load(i))
        kept = state.instances.get(i, InstanceState(recent_since=state.t))
        instances[i] = replace(kept, queued=queued.get(i[0], 0.0) / width)
    return FlowState(state.t, instances)
