"""The inputs of a region's FSM (what `fsm.RegionMachine.step` takes), typed on the Python side
and turned into the native `CrEvent` by ``to_native``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from streams_k8s._native import CrEvent
from streams_k8s.api.consistent_region import StartMode


class TimerKind(StrEnum):
    DRAIN_PERIOD = "DrainPeriod"
    DRAIN_TIMEOUT = "DrainTimeout"
    RESET_TIMEOUT = "ResetTimeout"


@dataclass(frozen=True, slots=True)
class Health:
    """The region's derived health changed (or was observed again)."""

    healthy: bool
    clean_start: bool = True

    def to_native(self) -> CrEvent:
        return CrEvent.health(self.healthy, self.clean_start)


@dataclass(frozen=True, slots=True)
class CheckpointDone:
    pe: int
    seq_id: int

    def to_native(self) -> CrEvent:
        return CrEvent.checkpoint(self.pe, self.seq_id)


@dataclass(frozen=True, slots=True)
class BlockingCheckpointDone:
    pe: int
    seq_id: int

    def to_native(self) -> CrEvent:
        return CrEvent.blocking_checkpoint(self.pe, self.seq_id)


@dataclass(frozen=True, slots=True)
class ResetDone:
    pe: int
    seq_id: int
    reset_attempt: int

    def to_native(self) -> CrEvent:
        return CrEvent.reset_done(self.pe, self.seq_id, self.reset_attempt)


@dataclass(frozen=True, slots=True)
class Drain:
    """A trigger operator started a drain (operator-driven regions)."""

    operator: str
    seq_id: int

    def to_native(self) -> CrEvent:
        return CrEvent.drain(self.operator, self.seq_id)


@dataclass(frozen=True, slots=True)
class Reset:
    force: bool = False

    def to_native(self) -> CrEvent:
        return CrEvent.reset(self.force)


@dataclass(frozen=True, slots=True)
class TimerFired:
    timer: TimerKind
    timer_seq_id: int

    def to_native(self) -> CrEvent:
        return CrEvent.timer(self.timer.value, self.timer_seq_id)


@dataclass(frozen=True, slots=True)
class Restarted:
    """The coordinator restarted: timers are lost and the region is reset once healthy."""

    def to_native(self) -> CrEvent:
        return CrEvent.restarted()


@dataclass(frozen=True, slots=True)
class CheckpointNow:
    """Drain and checkpoint now (spec.checkpointRequest); ``nonce`` is recorded with its answer."""

    nonce: str

    def to_native(self) -> CrEvent:
        return CrEvent.checkpoint_now()


@dataclass(frozen=True, slots=True)
class HoldDrains:
    """Hold (or release) the periodic drains (spec.holdDrains)."""

    held: bool

    def to_native(self) -> CrEvent:
        return CrEvent.hold_drains(self.held)


@dataclass(frozen=True, slots=True)
class Start:
    """Some of the region's PEs are about to be replaced (spec.startRequest): the next time the
    region becomes healthy it resets to its last checkpoint, or (mode clean) starts clean."""

    nonce: str
    mode: StartMode

    def to_native(self) -> CrEvent:
        return CrEvent.start(self.mode is StartMode.CLEAN)


Event = (
    Health
    | CheckpointDone
    | BlockingCheckpointDone
    | ResetDone
    | Drain
    | Reset
    | TimerFired
    | Restarted
    | CheckpointNow
    | HoldDrains
    | Start
)
