"""`streams-k8s schedule`: what the vreplica scheduler (or its autoscaler) would do."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click
import orjson

from streams_k8s.scheduler.simulator import SimulationError, simulate_autoscale, simulate_schedule


@click.command("schedule")
@click.option(
    "--input",
    "input_file",
    required=True,
    type=click.File("rb"),
    help="JSON cluster description: statefulSet, capacity, nodes, pods, vpods, policy, ... ('-' = stdin).",
)
@click.option("--autoscale", is_flag=True, help="Print the autoscaler's decision instead of scheduling.")
@click.option(
    "--scale-down", is_flag=True, help="With --autoscale: the periodic run (may scale down, compact)."
)
def schedule(input_file: Any, autoscale: bool, scale_down: bool) -> None:
    """Simulate the multi-tenant vreplica scheduler on a JSON description of the cluster."""
    if scale_down and not autoscale:
        _fail("--scale-down only applies with --autoscale")
    try:
        document = orjson.loads(input_file.read())
    except orjson.JSONDecodeError as err:
        _fail(f"{input_file.name}: not valid JSON: {err}")
    try:
        out = (
            simulate_autoscale(document, scale_down=scale_down) if autoscale else simulate_schedule(document)
        )
    except SimulationError as err:
        _fail(f"{input_file.name}: {err}")
    sys.stdout.write(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode() + "\n")


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)
