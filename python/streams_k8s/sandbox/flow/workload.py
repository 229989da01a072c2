"""A job's simulated workload: what flows through it, declared in one place.

The declaration is the Job's annotation ``streams.ibm.com/simulated-workload`` (JSON or YAML), so
it travels with the Job: the one YAML a test, a benchmark or ``sandbox --demo`` applies shapes
the load its simulated PEs carry, no CRD field is added for what only a simulation reads, and a
real cluster (whose runtime ignores the annotation) accepts the same Job unchanged. The document::

    peCapacity: 1.0      # CPU seconds per second a PE has (default 1)
    queueSize: 1000      # tuples an operator input port holds (default 1000)
    operators:           # by the operator's logical name (the AADL's logicalName)
      Src:   {source: {rate: 2000}}                      # constant, tuples/s
      Burst: {source: {rate: 500, steps: [{at: 60, rate: 4000}, {at: 300, rate: 500}]}}
      Wave:  {source: {rate: 1000, amplitude: 400, period: 120}}   # rate + amplitude*sin(2πt/period)
      Parse: {inputs: [Src], cost: 0.0004, selectivity: 1.0, region: Work}
      Sink:  {inputs: [Parse], cost: 0.0001}

``cost`` is CPU seconds per tuple processed (a source's per tuple submitted, default 0);
``selectivity`` tuples submitted per tuple processed (default 1); ``region`` the alias of the
parallel region the operator is replicated in (one channel per width unit). ``inputs`` name the
upstream operators: within one region channel c feeds channel c; across a region's boundary every
sender splits its output evenly over the receiver's channels (round robin), and a merge gathers
every channel. Bad documents raise `WorkloadError` with one line saying what is wrong.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

WORKLOAD_ANNOTATION = "streams.ibm.com/simulated-workload"


class WorkloadError(ValueError):
    """A workload declaration that cannot be simulated."""


@dataclass(frozen=True, slots=True)
class RateStep:
    at: float  # seconds of simulated time
    rate: float


@dataclass(frozen=True, slots=True)
class SourceRate:
    """A source's offered rate over simulated time: constant, stepped, periodic, or both."""

    rate: float
    steps: tuple[RateStep, ...] = ()
    amplitude: float = 0.0
    period: float = 0.0

    def at(self, t: float) -> float:
        base = self.rate
        for step in self.steps:
            if t >= step.at:
                base = step.rate
        if self.period > 0:
            base += self.amplitude * math.sin(2 * math.pi * t / self.period)
        return max(0.0, base)


@dataclass(frozen=True, slots=True)
class OperatorLoad:
    name: str
    inputs: tuple[str, ...] = ()
    cost: float = 0.0
    selectivity: float = 1.0
    region: str | None = None
    source: SourceRate | None = None


@dataclass(frozen=True, slots=True)
class Workload:
    operators: tuple[OperatorLoad, ...]  # in topological order (every input before its reader)
    pe_capacity: float = 1.0
    queue_size: int = 1000

    def operator(self, name: str) -> OperatorLoad:
        return next(op for op in self.operators if op.name == name)

    @property
    def regions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(op.region for op in self.operators if op.region is not None))


def _number(value: Any, where: str, *, minimum: float = 0.0, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WorkloadError(f"{where} must be a number, not {value!r}")
    if value < minimum or (positive and value <= 0):
        raise WorkloadError(f"{where} must be {'>' if positive else '>='} {minimum}, not {value}")
    return float(value)


def _source(doc: Any, where: str) -> SourceRate:
    if not isinstance(doc, Mapping):
        raise WorkloadError(f"{where} must be a mapping with a rate")
    unknown = set(doc) - {"rate", "steps", "amplitude", "period"}
    if unknown:
        raise WorkloadError(f"{where} has unknown keys {sorted(unknown)}")
    steps = []
    for i, step in enumerate(doc.get("steps") or []):
        if not isinstance(step, Mapping) or set(step) != {"at", "rate"}:
            raise WorkloadError(f"{where}.steps[{i}] must be {{at: seconds, rate: tuples/s}}")
        steps.append(RateStep(_number(step["at"], f"{where}.steps[{i}].at"), _number(step["rate"], where)))
    period = _number(doc.get("period", 0), f"{where}.period")
    amplitude = _number(doc.get("amplitude", 0), f"{where}.amplitude")
    if amplitude and not period:
        raise WorkloadError(f"{where}.amplitude needs a period")
    return SourceRate(
        _number(doc.get("rate"), f"{where}.rate"),
        tuple(sorted(steps, key=lambda s: s.at)),
        amplitude,
        period,
    )


def _operator(name: str, doc: Any) -> OperatorLoad:
    where = f"operators.{name}"
    if not isinstance(doc, Mapping):
        raise WorkloadError(f"{where} must be a mapping")
    unknown = set(doc) - {"inputs", "cost", "selectivity", "region", "source"}
    if unknown:
        raise WorkloadError(f"{where} has unknown keys {sorted(unknown)}")
    inputs = doc.get("inputs") or []
    if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
        raise WorkloadError(f"{where}.inputs must be a list of operator names")
    source = _source(doc["source"], f"{where}.source") if "source" in doc else None
    if (source is None) == (not inputs):
        raise WorkloadError(
            f"{where} must have either inputs or a source, not {'both' if source else 'neither'}"
        )
    region = doc.get("region")
    if region is not None and (not isinstance(region, str) or not region):
        raise WorkloadError(f"{where}.region must be a region alias")
    return OperatorLoad(
        name,
        tuple(inputs),
        _number(doc.get("cost", 0), f"{where}.cost"),
        _number(doc.get("selectivity", 1), f"{where}.selectivity"),
        region,
        source,
    )


def _ordered(operators: dict[str, OperatorLoad]) -> tuple[OperatorLoad, ...]:
    """Topological order (declaration order among equals); a cycle or an unknown input is refused."""
    done: dict[str, OperatorLoad] = {}
    visiting: set[str] = set()

    def visit(name: str, reader: str) -> None:
        if name in done:
            return
        if name not in operators:
            raise WorkloadError(f"operators.{reader}.inputs names {name!r}, which is not declared")
        if name in visiting:
            raise WorkloadError(f"operators form a cycle through {name!r}")
        visiting.add(name)
        for upstream in operators[name].inputs:
            visit(upstream, name)
        visiting.discard(name)
        done[name] = operators[name]

    for name in operators:
        visit(name, name)
    return tuple(done.values())


def parse_workload(doc: Any) -> Workload:
    """A workload from its parsed document (see the module docstring)."""
    if not isinstance(doc, Mapping):
        raise WorkloadError("a workload must be a mapping with operators")
    unknown = set(doc) - {"operators", "peCapacity", "queueSize"}
    if unknown:
        raise WorkloadError(f"unknown keys {sorted(unknown)}")
    ops = doc.get("operators")
    if not isinstance(ops, Mapping) or not ops:
        raise WorkloadError("operators must map operator names to their load")
    queue = doc.get("queueSize", 1000)
    if isinstance(queue, bool) or not isinstance(queue, int) or queue < 1:
        raise WorkloadError(f"queueSize must be a positive integer, not {queue!r}")
    return Workload(
        _ordered({str(name): _operator(str(name), op) for name, op in ops.items()}),
        _number(doc.get("peCapacity", 1.0), "peCapacity", positive=True),
        queue,
    )


def workload_of(annotations: Mapping[str, str] | None) -> Workload | None:
    """The workload a Job's annotations declare (None: none declared)."""
    text = (annotations or {}).get(WORKLOAD_ANNOTATION)
    if text is None:
        return None
    try:
        doc = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as err:
        raise WorkloadError(f"{WORKLOAD_ANNOTATION} is neither JSON nor YAML: {err}") from None
    return parse_workload(doc)
