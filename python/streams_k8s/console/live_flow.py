"""A job's flow as the job page's snapshot carries it (JSON), and the level each rate is drawn at.

Where a flow comes from is given to the console (`FlowSource`: the operator's reading of its PEs,
`controller.flow`); the console derives nothing itself. Rates are tuples/s. Each operator has a
``level``: ``none`` (it moved nothing over the window: drawn black, as in the Streams console),
``low``/``mid``/``high`` (by thirds of the job's highest operator rate), or ``unknown`` (its PE not read
twice yet, or failing; never shown as no flow). A connection between two PEs whose congestion
factor reaches ``CONGESTED`` is marked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from streams_k8s.app.flow import JobFlow, OperatorFlow
from streams_k8s.k8s.objects import ObjectKey


class FlowSource(Protocol):
    """The jobs' flows and a call when they were read anew (``controller.flow.FlowScraper``)."""

    def flow(self, namespace: str, job: str) -> JobFlow | None: ...

    def add_listener(self, listener: Callable[[set[ObjectKey]], None]) -> None: ...


CONGESTED = 50.0  # congestion factor (0-100) from which a connection is marked congested


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def level(rate: float | None, highest: float) -> str:
    if rate is None:
        return "unknown"
    if rate <= 0:
        return "none"
    if rate < highest / 3:
        return "low"
    return "mid" if rate < 2 * highest / 3 else "high"


def _operator(op: OperatorFlow, highest: float) -> dict[str, Any]:
    rate = op.tuples_out if op.tuples_out is not None and op.outputs else op.tuples_in
    return {
        "in": _round(op.tuples_in),
        "out": _round(op.tuples_out),
        "drops": _round(op.drops),
        "fill": None if op.queue_fill is None else round(op.queue_fill, 3),
        "congestion": _round(op.congestion),
        "level": level(rate, highest),
    }


def _pe(flow: JobFlow, pe: int, highest: float) -> dict[str, Any]:
    """A PE's reading state and, once read, its own ports' rates (what a collapsed PE box shows)."""
    found = flow.pe_flows.get(pe)
    rates = (found.tuples_in, found.tuples_out) if found is not None else (None, None)
    rate = rates[1] if rates[1] is not None else rates[0]
    return {
        "state": flow.pes[pe].value,
        "in": _round(rates[0]),
        "out": _round(rates[1]),
        "level": level(rate, highest) if found is not None else "unknown",
    }


def flow_row(flow: JobFlow | None) -> dict[str, Any] | None:
    """The snapshot's ``flow``: None when nothing reads the job's PEs."""
    if flow is None:
        return None
    rates = [r for op in flow.operators for r in (op.tuples_in, op.tuples_out) if r is not None]
    highest = max(rates, default=0.0)
    return {
        "highest": _round(highest),
        "operators": {op.name: _operator(op, highest) for op in flow.operators},
        "links": {f"{src}->{dst}": round(c, 1) for (src, dst), c in sorted(flow.links.items())},
        "congested": CONGESTED,
        "pes": {str(pe): _pe(flow, pe, highest) for pe in sorted(flow.pes)},
        "problems": {str(pe): problem for pe, problem in sorted(flow.problems.items())},
    }
