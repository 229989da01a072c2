"""One reading of a PE's metrics: the Prometheus text a PE serves on ``sys-metrics`` (9696), parsed.

The Open Streams runtime's families (``../shared/specs/open-streams-runtime.md``, "Metrics"): per
operator input port (labels ``name``, ``logical_name``, ``op_port``) tuples processed, dropped and
queued, the queue's size and enqueue waits; per operator output port tuples submitted; per PE
port (``pe_port``) tuples processed and submitted; per PE output connection (``pe_port``,
``connection="(peId:portId)"``) the congestion factor; per operator (``name``) its share of its PE's
CPU (``op_system_relative_operator_cost``, percent) and a source's backlog (the custom gauge
``nTuplesPending``, as a broker source reports its lag), which the autoscaler reads. Only these
lines are parsed (a PE serves ten times as many): a cheap prefix test per line, labels only on
the lines kept, so reading a thousand PEs stays a small part of the operator's CPU.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

INPUT_COUNTERS = {
    "op_input_n_tuples_processed": "processed",
    "op_input_n_tuples_dropped": "dropped",
    "op_input_n_enqueue_waits": "enqueue_waits",
}
INPUT_GAUGES = {"op_input_n_tuples_queued": "queued", "op_input_queue_size": "queue_size"}
OUTPUT_SUBMITTED = "op_output_n_tuples_submitted"
CONGESTION = "pe_output_congestion_factor"
PE_PROCESSED = "pe_input_n_tuples_processed"
PE_SUBMITTED = "pe_output_n_tuples_submitted"
OPERATOR_COST = "op_system_relative_operator_cost"
PENDING = "nTuplesPending"
_WANTED = frozenset(
    {
        *INPUT_COUNTERS,
        *INPUT_GAUGES,
        OUTPUT_SUBMITTED,
        CONGESTION,
        PE_PROCESSED,
        PE_SUBMITTED,
        OPERATOR_COST,
        PENDING,
    }
)
_PREFIXES = ("op_input_", "op_output_", CONGESTION, PE_PROCESSED, PE_SUBMITTED, OPERATOR_COST, PENDING)
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')
_CONNECTION = re.compile(r"\(?\s*(\d+)\s*:\s*(\d+)\s*\)?")


class ExpositionError(ValueError):
    """A line of the families read here that is not Prometheus text; the message quotes it."""


@dataclass(frozen=True, slots=True, order=True)
class PortKey:
    """An operator port as the runtime names it: the operator's physical name (``a.b[2].c``), its
    logical name (the channel's ``[n]`` taken out) and the port index."""

    operator: str
    logical: str
    port: int


@dataclass(slots=True)
class InputPort:
    processed: float = 0.0
    dropped: float = 0.0
    enqueue_waits: float = 0.0
    queued: float = 0.0
    queue_size: float = 0.0


@dataclass(frozen=True, slots=True, order=True)
class Connection:
    """A PE output port's connection, ``target`` as its label gives it: ``(peId:portId)``."""

    pe_port: int
    target: str

    @property
    def dst_pe(self) -> int | None:
        """The receiving PE's id; None when the label names none (its congestion still counts)."""
        match = _CONNECTION.fullmatch(self.target.strip())
        return int(match.group(1)) if match else None


@dataclass(slots=True)
class PeSample:
    """The families of one reading; counters are totals since the PE started."""

    inputs: dict[PortKey, InputPort] = field(default_factory=dict)
    outputs: dict[PortKey, float] = field(default_factory=dict)
    congestion: dict[Connection, float] = field(default_factory=dict)
    pe_inputs: dict[int, float] = field(default_factory=dict)  # by PE input port: tuples processed
    pe_outputs: dict[int, float] = field(default_factory=dict)  # by PE output port: tuples submitted
    costs: dict[str, float] = field(default_factory=dict)  # by operator: percent of its PE's CPU
    pending: dict[str, float] = field(default_factory=dict)  # by source: its backlog, tuples

    def operators(self) -> set[tuple[str, str]]:
        """(physical, logical) names of the operators this PE reported."""
        return {(k.operator, k.logical) for k in (*self.inputs, *self.outputs)}


def _unescape(value: str) -> str:
    return value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def _plain_labels(text: str) -> dict[str, str] | None:
    """Labels without escapes in their values (what the runtime serves), split without a regular
    expression; None when that does not hold."""
    text = text.rstrip(", ")
    if "\\" in text or not text.endswith('"'):
        return None
    labels: dict[str, str] = {}
    for part in text[:-1].split('",'):  # each part `key="value`, its closing quote split off
        key, sep, value = part.partition('="')
        if not sep or '"' in value or not key.strip().isidentifier():
            return None
        labels[key.strip()] = value
    return labels


def _labels(text: str, line: str) -> dict[str, str]:
    plain = _plain_labels(text)
    if plain is not None:
        return plain
    labels: dict[str, str] = {}
    at = 0
    while at < len(text):
        match = _LABEL.match(text, at)
        if match is None:
            raise ExpositionError(f"unreadable labels in {line[:200]!r}")
        labels[match.group(1)] = _unescape(match.group(2))
        at = match.end()
    return labels


def _split(line: str) -> tuple[str, dict[str, str], float]:
    """(name, labels, value) of a sample line."""
    brace = line.find("{")
    if brace < 0:
        name, _, rest = line.partition(" ")
        labels: dict[str, str] = {}
    else:
        close = line.rfind("}")
        if close < brace:
            raise ExpositionError(f"unclosed labels in {line[:200]!r}")
        name, rest = line[:brace], line[close + 1 :]
        labels = _labels(line[brace + 1 : close], line)
    fields = rest.split()
    try:
        value = float(fields[0])
    except (IndexError, ValueError):
        raise ExpositionError(f"no sample value in {line[:200]!r}") from None
    return name.strip(), labels, value


def _port(labels: dict[str, str], line: str) -> PortKey:
    try:
        port = int(labels["op_port"])
        name = labels["name"]
    except (KeyError, ValueError):
        raise ExpositionError(f"an operator port without name and op_port: {line[:200]!r}") from None
    return PortKey(name, labels.get("logical_name") or name, port)


def _pe_port(labels: dict[str, str], line: str) -> int:
    try:
        return int(labels["pe_port"])
    except (KeyError, ValueError):
        raise ExpositionError(f"a PE port without pe_port: {line[:200]!r}") from None


def _name(labels: dict[str, str], line: str) -> str:
    try:
        return labels["name"]
    except KeyError:
        raise ExpositionError(f"an operator metric without name: {line[:200]!r}") from None


def _connection(labels: dict[str, str], line: str) -> Connection:
    try:
        return Connection(int(labels["pe_port"]), labels["connection"])
    except (KeyError, ValueError):
        raise ExpositionError(f"a connection without pe_port and connection: {line[:200]!r}") from None


FAMILIES = frozenset(_WANTED)  # the families a reading keeps, by name


def record(sample: PeSample, name: str, labels: dict[str, str], value: float, line: str) -> None:
    """Keep one sample of a family in ``FAMILIES`` (``line`` quoted in an `ExpositionError`);
    a non-finite value (``NaN``: a gauge with no reading yet) is left out."""
    name = name.removesuffix("_total")  # a counter as OpenMetrics (and Prometheus after it) names it
    if not math.isfinite(value):
        return
    if name == CONGESTION:
        sample.congestion[_connection(labels, line)] = value
    elif name == PE_PROCESSED:
        sample.pe_inputs[_pe_port(labels, line)] = value
    elif name == PE_SUBMITTED:
        sample.pe_outputs[_pe_port(labels, line)] = value
    elif name == OPERATOR_COST:
        sample.costs[_name(labels, line)] = value
    elif name == PENDING:
        sample.pending[_name(labels, line)] = value
    elif name == OUTPUT_SUBMITTED:
        sample.outputs[_port(labels, line)] = value
    else:
        port = sample.inputs.setdefault(_port(labels, line), InputPort())
        setattr(port, INPUT_COUNTERS.get(name) or INPUT_GAUGES[name], value)


def parse_exposition(text: str) -> PeSample:
    """The families above in ``text``; any other line is skipped unread. `ExpositionError` on a
    malformed line of theirs."""
    sample = PeSample()
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith(_PREFIXES):
            continue
        name, labels, value = _split(line)
        if name.removesuffix("_total") in _WANTED:
            record(sample, name, labels, value, line)
    return sample
