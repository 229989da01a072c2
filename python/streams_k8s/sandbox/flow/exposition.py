"""A simulated PE's Prometheus metrics, as the Streams runtime's metrics thread serves them on
``sys-metrics`` 9696 (``specs/open-streams-runtime.md`` §5.3 "Metrics"), read from the flow model.

Every family carries ``job`` and ``pe``. Served, with their types:

- operator input port (labels ``op``, ``name``, ``logical_name``, ``op_port``):
  ``op_input_n_tuples_processed``, ``op_input_n_tuples_dropped``, ``op_input_n_enqueue_waits``
  (counters); ``op_input_n_tuples_queued``, ``op_input_queue_size``,
  ``op_input_max_items_queued``, ``op_input_recent_max_items_queued``,
  ``op_input_recent_max_items_queued_interval`` (gauges);
- operator output port (same labels): ``op_output_n_tuples_submitted`` (counter);
- operator system (``name``): ``op_system_relative_operator_cost`` (gauge: the operator's percent
  of its PE's CPU over the last step);
- PE input port (``pe_port``): ``pe_input_n_tuples_processed`` (counter);
- PE output port (``pe_port``): ``pe_output_n_tuples_submitted``,
  ``pe_output_n_tuples_transmitted`` (counters), ``pe_output_connections`` (gauge);
- connection (``pe_port``, ``connection="(peId:portId)"``): ``pe_output_congestion_factor``
  (gauge, 0 to 100: the receiving queue's fill);
- a source's custom metric (``name``, as the runtime labels custom metrics): ``nTuplesPending``
  (gauge: its backlog, as a Kafka source reports its lag).

`pe_cpu_seconds` is what a PE pod's resource metrics (cAdvisor, the metrics API the HPA reads)
would say of its CPU: not served on 9696.

An operator instance is named as the runtime names a parallel channel's copy: ``Op[c]`` in a
region (``logical_name`` ``Op``), ``Op`` outside; ``op`` is its index among the job's instances.
Each instance has one input port 0 and one output port 0. A PE's input port i is its i-th
instance fed from another PE, its output port i its i-th instance feeding another PE.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from streams_k8s.sandbox.flow.graph import FlowGraph, Instance
from streams_k8s.sandbox.flow.model import RECENT, FlowState

COUNTER, GAUGE = "counter", "gauge"
PENDING = "nTuplesPending"  # a source's backlog: tuples its rate asked for, not submitted yet


def pe_ids(graph: FlowGraph) -> dict[str, str]:
    """PE key -> id, numbered from 1 in the order of their first instance (the default when the
    caller has no job of its own to follow)."""
    return {pe: str(n) for n, pe in enumerate(dict.fromkeys(graph.pe_of[i] for i in graph.instances), 1)}


def _labels(**values: object) -> str:
    text = ",".join(
        f'{k}="{str(v).replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in values.items()
    )
    return "{" + text + "}"


def _value(v: float) -> str:
    return str(int(v)) if math.isfinite(v) else "0"


def pe_metrics(
    graph: FlowGraph,
    state: FlowState,
    job: str,
    pe: str,
    *,
    ids: Mapping[str, str] | None = None,
    op_index: Mapping[Instance, int] | None = None,
) -> str:
    """The text exposition (format 0.0.4) of PE `pe` (a key of ``graph.pe_of``): `ids` gives each
    PE's ``pe`` label (default `pe_ids`), `op_index` an instance's ``op`` label (default its
    position among the graph's instances)."""
    ids = ids or pe_ids(graph)
    families: dict[str, tuple[str, list[str]]] = {}

    def add(family: str, kind: str, labels: str, value: float) -> None:
        families.setdefault(family, (kind, []))[1].append(f"{family}{labels} {_value(value)}")

    members = [i for i in graph.instances if graph.pe_of[i] == pe]
    index = {i: n for n, i in enumerate(graph.instances)} | dict(op_index or {})
    cpu = sum(state.of(i).cpu for i in members)
    room = graph.workload.queue_size
    in_ports = [i for i in members if any(graph.pe_of[link.sender] != pe for link in graph.incoming[i])]
    out_ports = [i for i in members if any(graph.pe_of[link.receiver] != pe for link in graph.outgoing[i])]
    for i in members:
        s = state.of(i)
        base = {"job": job, "pe": ids[pe]}
        op = _labels(**base, op=index[i], name=graph.name(i), logical_name=i[0], op_port=0)
        if graph.load(i).source is None:
            add("op_input_n_tuples_processed", COUNTER, op, s.processed)
            add("op_input_n_tuples_dropped", COUNTER, op, s.dropped)
            add("op_input_n_tuples_queued", GAUGE, op, s.queued)
            add("op_input_queue_size", GAUGE, op, room)
            add("op_input_max_items_queued", GAUGE, op, s.max_queued)
            add("op_input_recent_max_items_queued", GAUGE, op, s.recent_max_queued)
            add("op_input_recent_max_items_queued_interval", GAUGE, op, RECENT * 1000)
            add("op_input_n_enqueue_waits", COUNTER, op, s.enqueue_waits)
        if graph.outgoing[i]:
            add("op_output_n_tuples_submitted", COUNTER, op, s.submitted)
        if graph.load(i).source is not None:  # a custom metric, as a broker-reading source has
            add(PENDING, GAUGE, _labels(**base, name=graph.name(i)), s.queued)
        share = 100 * s.cpu / cpu if cpu > 0 else 0.0
        add("op_system_relative_operator_cost", GAUGE, _labels(**base, name=graph.name(i)), share)
    for port, i in enumerate(in_ports):
        add(
            "pe_input_n_tuples_processed",
            COUNTER,
            _labels(job=job, pe=ids[pe], pe_port=port),
            state.of(i).processed,
        )
    for port, i in enumerate(out_ports):
        labels = _labels(job=job, pe=ids[pe], pe_port=port)
        away = [link for link in graph.outgoing[i] if graph.pe_of[link.receiver] != pe]
        add("pe_output_n_tuples_submitted", COUNTER, labels, state.of(i).submitted)
        add("pe_output_n_tuples_transmitted", COUNTER, labels, state.of(i).submitted)
        add("pe_output_connections", GAUGE, labels, len(away))
        for link in away:
            receiver = graph.pe_of[link.receiver]
            port_in = _input_port(graph, receiver, link.receiver)
            connection = f"({ids[receiver]}:{port_in})"
            congestion = 100 * state.of(link.receiver).queued / room
            add(
                "pe_output_congestion_factor",
                GAUGE,
                _labels(job=job, pe=ids[pe], pe_port=port, connection=connection),
                congestion,
            )
    return "".join(_family(name, kind, lines) for name, (kind, lines) in families.items())


def _input_port(graph: FlowGraph, pe: str, instance: Instance) -> int:
    members = (i for i in graph.instances if graph.pe_of[i] == pe)
    ports = [i for i in members if any(graph.pe_of[link.sender] != pe for link in graph.incoming[i])]
    return ports.index(instance)


def _family(name: str, kind: str, lines: list[str]) -> str:
    return f"# TYPE {name} {kind}\n" + "".join(f"{line}\n" for line in lines)


def pe_cpu_seconds(
    graph: FlowGraph, state: FlowState, ids: Mapping[str, str] | None = None
) -> dict[str, float]:
    """CPU seconds each PE (by its ``pe`` label) has used so far."""
    ids = ids or pe_ids(graph)
    used: dict[str, float] = {}
    for i in graph.instances:
        label = ids[graph.pe_of[i]]
        used[label] = used.get(label, 0.0) + state.of(i).busy
    return used
