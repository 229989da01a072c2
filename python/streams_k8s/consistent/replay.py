"""Replaying events through one region's FSM (`streams-k8s cr-replay`), for users debugging a
region and for tests.

REGION.json holds the ConsistentRegion spec's static fields (camelCase) and optionally
``"restarted": true`` to start as a restarted coordinator would; a persisted status (a live
region's ``.status``) may be given to start from instead of the initial state. Each event line is one JSON
object (see :data:`EventLine`); each produces one output record with the region's counters
after the event, the notifications and timers it caused, and ``error`` (null, or why the line
or the event was refused). A bad line never stops the replay.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from streams_k8s.api.consistent_region import ConsistentRegionSpec, ConsistentRegionStatus, StartMode
from streams_k8s.consistent.fsm import (
    BlockingCheckpointDone,
    CheckpointDone,
    CheckpointNow,
    Drain,
    Event,
    EventRejected,
    Health,
    HoldDrains,
    InvalidRegion,
    RegionMachine,
    Reset,
    ResetDone,
    Restarted,
    Start,
    StepResult,
    TimerFired,
    TimerKind,
)

# Events carry no time; the clock only feeds duration metrics, which the records leave out.
REPLAY_NOW_MS = 0

Id = Annotated[int, Field(ge=0, le=2**64 - 1)]
SeqId = Annotated[int, Field(ge=0, le=2**64 - 1, alias="seqId")]


class RegionFileError(ValueError):
    """REGION.json cannot describe a region; the message is one line."""


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class HealthLine(_Line):
    type: Literal["health"]
    healthy: bool
    clean_start: bool = Field(alias="cleanStart")


class CheckpointLine(_Line):
    type: Literal["checkpoint"]
    pe: Id
    seq_id: SeqId


class BlockingCheckpointLine(_Line):
    type: Literal["blockingCheckpoint"]
    pe: Id
    seq_id: SeqId


class ResetDoneLine(_Line):
    type: Literal["resetDone"]
    pe: Id
    seq_id: SeqId
    reset_attempt: Id = Field(alias="resetAttempt")


class DrainLine(_Line):
    type: Literal["drain"]
    operator: str
    seq_id: SeqId


class ResetLine(_Line):
    type: Literal["reset"]
    force: bool


class TimerLine(_Line):
    type: Literal["timer"]
    timer: Literal["DrainPeriod", "DrainTimeout", "ResetTimeout"]
    timer_seq_id: Id | None = Field(
        None, alias="timerSeqId", description="Defaults to the region's current one."
    )


class CheckpointNowLine(_Line):
    type: Literal["checkpointNow"]
    nonce: str = "replay"


class HoldDrainsLine(_Line):
    type: Literal["holdDrains"]
    held: bool


class StartLine(_Line):
    type: Literal["start"]
    mode: Literal["reset", "clean"]
    nonce: str = "replay"


EventLine = Annotated[
    HealthLine
    | CheckpointLine
    | BlockingCheckpointLine
    | ResetDoneLine
    | DrainLine
    | ResetLine
    | TimerLine
    | CheckpointNowLine
    | HoldDrainsLine
    | StartLine,
    Field(discriminator="type"),
]
_EVENT_LINE: TypeAdapter[EventLine] = TypeAdapter(EventLine)
_TAGS = frozenset(
    (
        "health",
        "checkpoint",
        "blockingCheckpoint",
        "resetDone",
        "drain",
        "reset",
        "timer",
        "checkpointNow",
        "holdDrains",
        "start",
    )
)


def _one_line(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = list(first["loc"])
    if loc and loc[0] in _TAGS:  # the union member the line was checked against
        loc = loc[1:]
    where = ".".join(str(p) for p in loc)
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}" if where else f"{first['msg']}{more}"


def _object(data: bytes | str, what: str) -> dict[str, Any]:
    try:
        doc: Any = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise RegionFileError(f"not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise RegionFileError(f"expected a JSON object with {what}")
    return doc


def load_status(data: bytes | str) -> ConsistentRegionStatus:
    """A persisted status to start from (a ConsistentRegion's ``.status``)."""
    try:
        return ConsistentRegionStatus.model_validate(_object(data, "the ConsistentRegion status fields"))
    except ValidationError as err:
        raise RegionFileError(_one_line(err)) from None


def load_region(data: bytes | str, status: ConsistentRegionStatus | None = None) -> RegionMachine:
    """The region of REGION.json, in its initial state or in `status`, then restarted if
    REGION.json says so."""
    doc = _object(data, "the ConsistentRegion spec's fields")
    restarted = doc.pop("restarted", False)
    if not isinstance(restarted, bool):
        raise RegionFileError("restarted: must be true or false")
    try:
        spec = ConsistentRegionSpec.model_validate(doc)
        machine = RegionMachine(spec, status)
    except ValidationError as err:
        raise RegionFileError(_one_line(err)) from None
    except InvalidRegion as err:
        raise RegionFileError(str(err)) from None
    if restarted:
        machine.step(Restarted(), REPLAY_NOW_MS)
    return machine


def parse_event(line: bytes | str, machine: RegionMachine) -> Event:
    """The event of one line; raises ValueError with a one-line reason."""
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err}") from None
    try:
        parsed = _EVENT_LINE.validate_python(doc)
    except ValidationError as err:
        raise ValueError(_one_line(err)) from None
    match parsed:
        case HealthLine():
            return Health(parsed.healthy, parsed.clean_start)
        case CheckpointLine():
            return CheckpointDone(parsed.pe, parsed.seq_id)
        case BlockingCheckpointLine():
            return BlockingCheckpointDone(parsed.pe, parsed.seq_id)
        case ResetDoneLine():
            return ResetDone(parsed.pe, parsed.seq_id, parsed.reset_attempt)
        case DrainLine():
            return Drain(parsed.operator, parsed.seq_id)
        case ResetLine():
            return Reset(parsed.force)
        case TimerLine():
            seq = machine.timer_seq_id if parsed.timer_seq_id is None else parsed.timer_seq_id
            return TimerFired(TimerKind(parsed.timer), seq)
        case CheckpointNowLine():
            return CheckpointNow(parsed.nonce)
        case HoldDrainsLine():
            return HoldDrains(parsed.held)
        case StartLine():
            return Start(parsed.nonce, StartMode(parsed.mode))


def _record(machine: RegionMachine, result: StepResult | None, error: str | None) -> dict[str, Any]:
    s = machine.snapshot()
    notifications = []
    timers = []
    if result is not None:
        if (note := result.notification) is not None:
            notifications.append({"type": note.type.value, "message": note.message})
        if (arm := result.timer) is not None:
            timers.append({"timer": arm.timer.value, "delay": arm.delay_ms / 1000})
    return {
        "state": s["state"],
        "currentSeqID": s["currentSeqID"],
        "lastCompletedSeqID": s["lastCompletedSeqID"],
        "pendingSeqID": s["pendingSeqID"],
        "toRetireSeqID": s["toRetireSeqID"],
        "currentResetAttempt": s["currentResetAttempt"],
        "notifications": notifications,
        "timers": timers,
        "error": error,
    }


def replay_line(machine: RegionMachine, line: bytes | str) -> dict[str, Any]:
    """Applies one event line and returns its output record."""
    try:
        event = parse_event(line, machine)
        result = machine.step(event, REPLAY_NOW_MS)
    except EventRejected as err:
        return _record(machine, None, f"{err.kind}: {err.message}")
    except ValueError as err:
        return _record(machine, None, str(err))
    return _record(machine, result, None)


def replay(machine: RegionMachine, lines: Iterable[bytes | str]) -> Iterator[dict[str, Any]]:
    """One record per non-blank line."""
    for line in lines:
        if line.strip():
            yield replay_line(machine, line)
