"""What the autoscaler reads of a running job over a window: two scrapes of its PEs' runtime
metrics (`specs/open-streams-runtime.md` §5.3, served on ``sys-metrics`` 9696) and, where the
cluster's resource metrics have them, each PE pod's CPU seconds — turned into one
`InstanceWindow` per operator instance (``name`` label, e.g. ``Score[2]``).

Rates are counter deltas over the window (a counter that went down — a restarted PE — is not
read: the instance is left out until a window without a restart). Queue fill is
``op_input_n_tuples_queued / op_input_queue_size`` at the window's start and at its end. The
operator's share of its PE's CPU is ``op_system_relative_operator_cost`` (percent) times the
PE's CPU over the window. A source
that reads from a broker reports its backlog as the custom gauge ``nTuplesPending`` (label
``name``), as a Kafka source reports its lag; its growth is demand the job does not absorb.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from streams_k8s.app.flow_samples import (
    OPERATOR_COST,
    OUTPUT_SUBMITTED,
    PENDING,
    PeSample,
    parse_exposition,
)

INPUT_PROCESSED, INPUT_QUEUED = "op_input_n_tuples_processed", "op_input_n_tuples_queued"
INPUT_QUEUE_SIZE = "op_input_queue_size"
Samples = Mapping[tuple[str, str], float]  # (family, instance name) -> value


@dataclass(frozen=True, slots=True)
class Scrape:
    """Every PE of a job read at time `t` (seconds): instance samples, its logical names, and
    the CPU seconds each PE's pod used so far (None: the cluster has no resource metrics)."""

    t: float
    samples: Samples
    logical: Mapping[str, str]  # instance name -> logical name
    pe_of: Mapping[str, str]  # instance name -> PE id
    cpu: Mapping[str, float] | None = None  # PE id -> CPU seconds


def scrape_of(t: float, samples: Mapping[str, PeSample], cpu: Mapping[str, float] | None = None) -> Scrape:
    """A scrape from each PE's reading as the operator's flow reading parsed it (PE id ->
    sample); an operator's input ports are summed."""
    found: dict[tuple[str, str], float] = {}
    logical: dict[str, str] = {}
    pe_of: dict[str, str] = {}

    def add(family: str, name: str, value: float) -> None:
        found[(family, name)] = found.get((family, name), 0.0) + value

    for pe, sample in samples.items():
        for key, port in sample.inputs.items():
            add(INPUT_PROCESSED, key.operator, port.processed)
            add(INPUT_QUEUED, key.operator, port.queued)
            add(INPUT_QUEUE_SIZE, key.operator, port.queue_size)
        for key, submitted in sample.outputs.items():
            add(OUTPUT_SUBMITTED, key.operator, submitted)
        for key in (*sample.inputs, *sample.outputs):
            logical[key.operator], pe_of[key.operator] = key.logical, pe
        for family, values in ((OPERATOR_COST, sample.costs), (PENDING, sample.pending)):
            for name, value in values.items():
                found[(family, name)] = value
    return Scrape(t, found, logical, pe_of, cpu)


def read_scrape(t: float, texts: Mapping[str, str], cpu: Mapping[str, float] | None = None) -> Scrape:
    """A scrape from each PE's text exposition (PE id -> text)."""
    return scrape_of(t, {pe: parse_exposition(text) for pe, text in texts.items()}, cpu)


@dataclass(frozen=True, slots=True)
class InstanceWindow:
    name: str
    operator: str  # logical name
    processed: float  # tuples/s in (None for a source: it has no input port)
    submitted: float  # tuples/s out
    fill: float  # input queue fill at the window's end, 0..1
    fill_start: float  # and at its start
    is_source: bool
    useful: float | None = None  # CPU seconds per second spent on it (None: no CPU metrics)
    pending_growth: float = 0.0  # tuples/s a source's backlog grew


@dataclass(frozen=True, slots=True)
class Window:
    start: float
    end: float
    instances: tuple[InstanceWindow, ...] = field(default=())

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def of(self, operator: str) -> list[InstanceWindow]:
        return [i for i in self.instances if i.operator == operator]


def _delta(a: Scrape, b: Scrape, family: str, name: str) -> float | None:
    before, after = a.samples.get((family, name)), b.samples.get((family, name))
    if after is None:
        return None
    if before is None or after < before:  # new or restarted in the window
        return None
    return after - before


def window(a: Scrape, b: Scrape) -> Window:
    """The window between two scrapes of the same job (`a` before `b`)."""
    seconds = b.t - a.t
    if seconds <= 0:
        raise ValueError(f"a window needs its second scrape after the first ({a.t} -> {b.t})")
    found = []
    for name in sorted(b.logical.keys() & a.logical.keys()):
        processed = _delta(a, b, INPUT_PROCESSED, name)
        submitted = _delta(a, b, OUTPUT_SUBMITTED, name)
        is_source = (INPUT_PROCESSED, name) not in b.samples
        if (processed is None and not is_source) or (is_source and submitted is None):
            continue
        size = b.samples.get((INPUT_QUEUE_SIZE, name)) or 0
        queued = (x.samples.get((INPUT_QUEUED, name), 0.0) for x in (a, b))
        fill_start, fill = (q / size if size else 0.0 for q in queued)
        found.append(
            InstanceWindow(
                name,
                b.logical[name],
                (processed or 0.0) / seconds,
                (submitted or 0.0) / seconds,
                fill,
                fill_start,
                is_source,
                _useful(a, b, name, seconds),
                _growth(a, b, name, seconds),
            )
        )
    return Window(a.t, b.t, tuple(found))


def _growth(a: Scrape, b: Scrape, name: str, seconds: float) -> float:
    """How fast a source's backlog (a gauge) grew; negative when it shrank, 0 when not reported."""
    before, after = a.samples.get((PENDING, name)), b.samples.get((PENDING, name))
    return (after - before) / seconds if before is not None and after is not None else 0.0


def _useful(a: Scrape, b: Scrape, name: str, seconds: float) -> float | None:
    pe = b.pe_of.get(name)
    if a.cpu is None or b.cpu is None or pe is None or pe not in a.cpu or pe not in b.cpu:
        return None
    share = b.samples.get((OPERATOR_COST, name))
    if share is None:
        return None
    return max(0.0, b.cpu[pe] - a.cpu[pe]) / seconds * share / 100
