"""One job's flow as its running PEs carry it: the workload, the graph at the widths the PEs were
built for, the model's state, and which PE runs which operator instance. No I/O: the simulated
runtime (`sandbox.cluster.pe_flow`) places and removes PEs as their pods start and stop, advances
the flow to the simulated time its clock (`FlowClock`) reads, and renders each PE's metrics.

The regions' widths are those of the PEs that run: an instance's AADL says how many channels its
region has (``globalMaxChannels``), so a width change takes effect in the model when the first PE
built for the new width starts (queued tuples spread over the new channels, `model.resize`).
Instances whose PE is not running yet still flow in the model (the channel is planned); they are
served by no PE.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from streams_k8s.sandbox.flow.exposition import pe_metrics
from streams_k8s.sandbox.flow.graph import Instance, build_graph
from streams_k8s.sandbox.flow.model import FlowState, resize, start, step
from streams_k8s.sandbox.flow.workload import Workload

STEP = 0.1  # seconds of simulated time per model step
MAX_STEPS = 10_000  # per advance: a stalled clock catches up in bounded work


class FlowClock:
    """Simulated seconds since it started: wall time times `speed` (10: ten simulated seconds
    pass each second)."""

    def __init__(self, speed: float = 1.0, wall: Callable[[], float] = time.monotonic) -> None:
        if speed <= 0:
            raise ValueError(f"a flow clock's speed must be > 0, not {speed}")
        self.speed, self._wall = speed, wall
        self._start = wall()

    def now(self) -> float:
        return (self._wall() - self._start) * self.speed


@dataclass(frozen=True, slots=True)
class PlacedOperator:
    """An operator instance of a PE's AADL."""

    index: int  # operInstance index: the `op` label
    logical_name: str
    channel: int  # in its region (0 outside any)
    width: int  # its region's channel count (1 outside any)


class JobFlow:
    def __init__(self, job: str, workload: Workload, t: float = 0.0) -> None:
        self.job, self.workload = job, workload
        self.pes: dict[str, tuple[PlacedOperator, ...]] = {}  # PE id -> its operators
        self.graph = build_graph(workload, dict.fromkeys(workload.regions, 1))
        self.state: FlowState = start(self.graph, t)

    def place(self, pe: str, operators: tuple[PlacedOperator, ...]) -> list[str]:
        """PE `pe` runs `operators`; what of them the workload does not know (they carry no load)."""
        known = {op.name for op in self.workload.operators}
        self.pes[pe] = tuple(op for op in operators if op.logical_name in known)
        self._reshape()
        return sorted({op.logical_name for op in operators} - known)

    def remove(self, pe: str) -> None:
        if self.pes.pop(pe, None) is not None:
            self._reshape()

    def advance(self, t: float) -> None:
        """Step the model up to simulated time `t`."""
        steps = min(MAX_STEPS, int((t - self.state.t) / STEP))
        for _ in range(steps):
            self.state = step(self.graph, self.state, STEP)

    def metrics(self, pe: str) -> str:
        index: Mapping[Instance, int] = {
            (op.logical_name, op.channel): op.index for op in self.pes.get(pe, ())
        }
        return pe_metrics(self.graph, self.state, self.job, pe, op_index=index, ids=self._ids())

    def _ids(self) -> dict[str, str]:
        """A running PE is labelled with its id; a planned one not running yet with its name."""
        return {key: key for key in self.graph.pe_of.values()}

    def _reshape(self) -> None:
        widths = dict(self.graph.widths)
        for operators in self.pes.values():
            for op in operators:
                region = self.workload.operator(op.logical_name).region
                if region is not None:
                    widths[region] = op.width
        pe_of = {(op.logical_name, op.channel): pe for pe, ops in self.pes.items() for op in ops}
        graph = build_graph(self.workload, widths, pe_of)
        if graph.widths != self.graph.widths or graph.pe_of != self.graph.pe_of:
            self.state = resize(self.graph, self.state, graph)
            self.graph = graph
