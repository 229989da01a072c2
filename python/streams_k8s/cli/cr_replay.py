"""`streams-k8s cr-replay`: feed events to one consistent region's FSM, one JSON line each."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import BinaryIO

import click
import orjson

from streams_k8s.consistent.replay import RegionFileError, load_region, load_status, replay


def _open(path: Path) -> BinaryIO:
    if str(path) == "-":
        return sys.stdin.buffer
    try:
        return path.open("rb")
    except OSError as err:
        raise click.ClickException(f"cannot read {path}: {err.strerror}") from None


@click.command("cr-replay")
@click.option(
    "--region",
    "region_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help='REGION.json: the ConsistentRegion spec\'s fields, optionally "restarted": true.',
)
@click.option(
    "--status",
    "status_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Start from this persisted status, e.g. kubectl get stcr NAME -o jsonpath='{.status}'.",
)
@click.argument("events", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
def cr_replay(region_path: Path, status_path: Path | None, events: Path) -> None:
    """Replay EVENTS (JSON lines, '-' for stdin) through the region's FSM.

    Prints one JSON line per event: the region's state and sequence ids after it, the
    notifications and timers it caused, and "error" when the line or the event was refused.
    """
    status = None
    if status_path is not None:
        with _open(status_path) as f:
            try:
                status = load_status(f.read())
            except RegionFileError as err:
                raise click.ClickException(f"{status_path}: {err}") from None
    with _open(region_path) as f:
        try:
            machine = load_region(f.read(), status)
        except RegionFileError as err:
            raise click.ClickException(f"{region_path}: {err}") from None
    out = sys.stdout.buffer
    with _open(events) as lines:
        for record in replay(machine, lines):
            out.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
    out.flush()
