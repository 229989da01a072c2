"""Width autoscalers run against the simulated runtime's flow model on a fast clock: the DS2-style
autoscaler (`streams_k8s.controller.autoscaling`) and the HPA algorithm on CPU utilisation through
/scale, on the same workloads, measured the same way.

Every `interval` simulated seconds each PE's metrics are rendered as the runtime serves them
(`sandbox.flow.exposition`) with its pod's CPU seconds (what the metrics API gives the HPA), and
handed to the autoscaler; a width it asks for takes effect at once (`model.resize`: the PEs of
the new width start with the load and queues spread over them).

The HPA: per region, utilisation = the mean over the region's PEs of CPU used / CPU available over
its 15 s sync period; ``desired = ceil(current x utilisation / target)``, left alone within the 10 %
tolerance, scale-up limited to max(double, +4) per period and scale-down to the highest
recommendation of the last 300 s (its default behaviour).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streams_k8s.controller.autoscaling.decision import AutoscalerState, decide
from streams_k8s.controller.autoscaling.estimates import OperatorShape
from streams_k8s.controller.autoscaling.observations import Scrape, read_scrape, window
from streams_k8s.controller.autoscaling.settings import AutoscalerSettings
from streams_k8s.sandbox.flow.exposition import pe_cpu_seconds, pe_ids, pe_metrics
from streams_k8s.sandbox.flow.graph import FlowGraph, build_graph
from streams_k8s.sandbox.flow.model import FlowState, resize, start, step
from streams_k8s.sandbox.flow.workload import Workload, parse_workload

DT = 0.5  # seconds of simulated time per model step
TARGET = 0.8  # the utilisation both autoscalers aim at
HPA_PERIOD, HPA_TOLERANCE, HPA_DOWN_WINDOW = 15.0, 0.1, 300.0


@dataclass(frozen=True)
class Scenario:
    name: str
    workload: dict[str, Any]
    start: Mapping[str, int]  # initial widths
    phases: tuple[float, ...]  # simulated seconds at which the load changes, then the end

    @property
    def parsed(self) -> Workload:
        return parse_workload(self.workload)


def needed_widths(workload: Workload, t: float) -> dict[str, int]:
    """The narrowest widths at which every instance runs at most at TARGET utilisation, for the
    source rates at `t` (the ground truth, from the workload's costs)."""
    rates: dict[str, float] = {}
    need: dict[str, int] = dict.fromkeys(workload.regions, 1)
    for op in workload.operators:
        if op.source is not None:
            rates[op.name] = op.source.at(t)
            continue
        arriving = sum(rates[u] for u in op.inputs)
        rates[op.name] = arriving * op.selectivity
        if op.region is not None and op.cost > 0:
            per_channel = workload.pe_capacity / op.cost * TARGET
            need[op.region] = max(need[op.region], math.ceil(arriving / per_channel - 1e-9))
    return need


@dataclass
class Run:
    """What one autoscaler did over a scenario: every change (time, widths after)."""

    scenario: Scenario
    changes: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    widths: dict[str, int] = field(default_factory=dict)

    def phase(self, index: int) -> dict[str, float]:
        """Steps, time to the final widths, over-provisioning and changes after converging in a phase."""
        begin = self.scenario.phases[index - 1] if index else 0.0
        end = self.scenario.phases[index]
        inside = [(t, w) for t, w in self.changes if begin <= t < end]
        final = inside[-1][1] if inside else self._widths_at(begin)
        needed = needed_widths(self.scenario.parsed, begin)
        reached = next((t for t, w in inside if _within(w, needed)), None)
        after = [t for t, _ in inside if reached is not None and t > reached]
        return {
            "steps": len(inside),
            "reached_s": (reached - begin)
            if reached is not None
            else (0.0 if _within(final, needed) else math.inf),
            "over": sum(final.values()) / sum(needed.values()) - 1,
            "needed": sum(needed.values()),
            "final": sum(final.values()),
            "oscillations": len(after),
        }

    def _widths_at(self, t: float) -> dict[str, int]:
        widths = dict(self.scenario.start)
        for at, w in self.changes:
            if at < t:
                widths = w
        return widths


def _within(widths: Mapping[str, int], needed: Mapping[str, int]) -> bool:
    """Every region at least as wide as needed, all together within 10 % of the needed channels."""
    enough = all(widths[r] >= n for r, n in needed.items())
    return enough and sum(widths.values()) <= max(sum(needed.values()) * 1.1, sum(needed.values()) + 1)


Autoscaler = Callable[[FlowGraph, FlowState, dict[str, int]], dict[str, int] | None]


def simulate(scenario: Scenario, autoscaler: Autoscaler) -> Run:
    workload = scenario.parsed
    widths = dict(scenario.start)
    graph = build_graph(workload, widths)
    state = start(graph)
    run = Run(scenario, widths=widths)
    while state.t < scenario.phases[-1]:
        state = step(graph, state, DT)
        wanted = autoscaler(graph, state, widths)
        if wanted is not None and wanted != widths:
            widths = dict(wanted)
            new = build_graph(workload, widths)
            state, graph = resize(graph, state, new), new
            run.changes.append((state.t, dict(widths)))
    run.widths = widths
    return run


def topology_of(workload: Workload) -> list[OperatorShape]:
    return [OperatorShape(op.name, op.inputs, op.region) for op in workload.operators]


def scrape(graph: FlowGraph, state: FlowState) -> Scrape:
    """Every PE's metrics as served on 9696, with its pod's CPU seconds."""
    ids = pe_ids(graph)
    texts = {ids[pe]: pe_metrics(graph, state, "bench", pe, ids=ids) for pe in ids}
    return read_scrape(state.t, texts, pe_cpu_seconds(graph, state, ids))


class Ds2:
    """The DS2-style autoscaler in active mode, a window every `interval` seconds."""

    def __init__(self, workload: Workload, settings: AutoscalerSettings) -> None:
        self.topology = topology_of(workload)
        self.settings = settings
        self.state = AutoscalerState()
        self.last: Scrape | None = None
        self.decisions = 0

    def __call__(self, graph: FlowGraph, state: FlowState, widths: dict[str, int]) -> dict[str, int] | None:
        if self.last is not None and state.t - self.last.t < self.settings.interval - 1e-9:
            return None
        now = scrape(graph, state)
        previous, self.last = self.last, now
        if previous is None or any(graph.widths[r] != w for r, w in widths.items()):
            return None
        try:
            decision = decide(self.topology, widths, window(previous, now), self.settings, self.state)
        except ValueError:
            return None
        self.state = decision.state
        if decision.changed:
            self.last = None  # the new PEs' counters start again
            self.decisions += 1
            return dict(decision.widths)
        return None


class Hpa:
    """The HPA's algorithm on each region's CPU utilisation, through /scale."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.last: tuple[float, dict[str, float]] | None = None
        self.recommendations: list[tuple[float, dict[str, int]]] = []

    def utilisation(self, graph: FlowGraph, state: FlowState) -> dict[str, float]:
        cpu = pe_cpu_seconds(graph, state)
        ids = pe_ids(graph)
        if self.last is None:
            self.last = (state.t, cpu)
            return {}
        t0, before = self.last
        self.last = (state.t, cpu)
        per_region: dict[str, list[float]] = {}
        for i in graph.instances:
            region = graph.load(i).region
            if region is not None:
                label = ids[graph.pe_of[i]]
                used = (cpu[label] - before.get(label, cpu[label])) / (state.t - t0)
                per_region.setdefault(region, []).append(used / self.workload.pe_capacity)
        return {r: sum(u) / len(u) for r, u in per_region.items()}

    def __call__(self, graph: FlowGraph, state: FlowState, widths: dict[str, int]) -> dict[str, int] | None:
        if self.last is not None and state.t - self.last[0] < HPA_PERIOD - 1e-9:
            return None
        utilisation = self.utilisation(graph, state)
        if not utilisation:
            return None
        desired = {}
        for region, current in widths.items():
            ratio = utilisation[region] / TARGET
            want = current if abs(ratio - 1) <= HPA_TOLERANCE else math.ceil(current * ratio - 1e-9)
            desired[region] = max(1, min(want, max(2 * current, current + 4)))
        self.recommendations = [(t, d) for t, d in self.recommendations if t > state.t - HPA_DOWN_WINDOW]
        self.recommendations.append((state.t, desired))
        # scale-up at once; scale-down to the highest recommendation of the window, never up
        stable = {
            r: desired[r]
            if desired[r] > widths[r]
            else min(widths[r], max(d[r] for _, d in self.recommendations))
            for r in widths
        }
        if stable != widths:
            self.last = None  # new pods: a fresh measurement
            return stable
        return None
