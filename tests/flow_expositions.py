"""PE metric texts for tests and benches: recorded ones (tests/flow_data) and synthetic ones in the
Open Streams runtime's exposition format (its "Metrics" families, as a PE serves them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streams_k8s.app.flow import logical_name

DATA = Path(__file__).parent / "flow_data"


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class OperatorCounts:
    name: str  # physical: main.work[2]
    processed: float
    submitted: float
    queued: float = 0.0
    queue_size: float = 1000.0
    dropped: float = 0.0


def pe_text(
    job: int,
    pe: int,
    operators: list[OperatorCounts],
    congestion: dict[int, float],
    pe_ports: tuple[float, float] = (0.0, 0.0),
) -> str:
    """One PE's exposition: each operator with one input and one output port; ``congestion`` by
    destination PE (port 0 of each); ``pe_ports`` the tuples its input and output port 0 moved."""
    lines = []
    for index, op in enumerate(operators):
        names = f'name="{op.name}",logical_name="{logical_name(op.name)}"'
        labels = f'job="{job}",pe="{pe}",op="{index}",{names},op_port="0"'
        lines += [
            f"op_input_n_tuples_processed{{{labels}}} {op.processed}",
            f"op_input_n_tuples_dropped{{{labels}}} {op.dropped}",
            f"op_input_n_tuples_queued{{{labels}}} {op.queued}",
            f"op_input_queue_size{{{labels}}} {op.queue_size}",
            f"op_input_n_enqueue_waits{{{labels}}} 0",
            f"op_input_n_window_puncts_processed{{{labels}}} 0",
            f"op_input_recent_max_items_queued{{{labels}}} {op.queued}",
            f"op_output_n_tuples_submitted{{{labels}}} {op.submitted}",
            f"op_output_n_final_puncts_submitted{{{labels}}} 0",
            f'op_system_relative_operator_cost{{job="{job}",pe="{pe}",name="{op.name}"}} 10',
        ]
    for dst, factor in congestion.items():
        lines.append(
            f'pe_output_congestion_factor{{job="{job}",pe="{pe}",pe_port="0",connection="({dst}:0)"}} '
            f"{factor}"
        )
    ports = f'job="{job}",pe="{pe}",pe_port="0"'
    lines.append(f"pe_input_n_tuples_processed{{{ports}}} {pe_ports[0]}")
    lines.append(f"pe_output_n_tuples_submitted{{{ports}}} {pe_ports[1]}")
    return "# TYPE op_input_n_tuples_processed counter\n" + "\n".join(lines) + "\n"
