"""Typed Python face of the native consistent-region FSM.

A :class:`RegionMachine` is built from the ConsistentRegion's spec (static fields) and status
(dynamic fields), takes typed events and returns typed actions; ``status()`` gives back the
``ConsistentRegionStatus`` to persist. The caller performs the actions in order and publishes
the notification only once the status write is confirmed (and skips the write when
``persist`` is false).

The native FSM names its state its own way (``current_seq_id``, ``completion``,
``drain_times_ms``...); ``STATUS_FIELDS`` below is the one place that maps those names to the
CRD's status fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from streams_k8s._native import CrEvent, CrInvalidRegion, CrRegion, CrRejected, CrStep, cr_gauge_names
from streams_k8s.api.consistent_region import (
    ConsistentRegionSpec,
    ConsistentRegionStatus,
    RegionState,
)

GAUGE_NAMES: tuple[str, ...] = tuple(cr_gauge_names())

# The native FSM's status names → ConsistentRegionStatus fields (whose aliases are the CRD's names).
STATUS_FIELDS: Mapping[str, str] = {
    "state": "state",
    "region_healthy": "region_healthy",
    "clean_start": "clean_start",
    "must_reset": "must_reset",
    "healthy_first_time": "healthy_first_time",
    "current_reset_attempt": "current_reset_attempt",
    "current_max_reset_attempts": "current_max_reset_attempts",
    "current_seq_id": "current_seq_id",
    "last_completed_seq_id": "last_completed_seq_id",
    "pending_seq_id": "pending_seq_id",
    "to_retire_seq_id": "to_retire_seq_id",
    "current_timer_seq_id": "current_timer_seq_id",
    "completion": "pe_to_completion",
    "last_consistent_state_time_ms": "last_consistent_state_time",
    "last_reset_time_ms": "last_reset_time",
    "average_drain_time_ms": "avg_drain_time",
    "average_reset_time_ms": "avg_reset_time",
    "last_completed_drain_seq_id": "last_completed_drain",
    "last_completed_reset_seq_id": "last_completed_reset",
    "drain_start_time_ms": "drain_start_time",
    "reset_start_time_ms": "reset_start_time",
    "drain_times_ms": "recent_drain_times",
    "reset_times_ms": "recent_reset_times",
}


def _crd_names() -> dict[str, str]:
    """Native name → CRD name, for the status fields and the spec's (the CrRegion keywords)."""
    status = ConsistentRegionStatus.model_fields
    names = {native: status[field].alias or field for native, field in STATUS_FIELDS.items()}
    names.update((field, info.alias or field) for field, info in ConsistentRegionSpec.model_fields.items())
    return names


_CRD_NAMES = _crd_names()


class TimerKind(StrEnum):
    DRAIN_PERIOD = "DrainPeriod"
    DRAIN_TIMEOUT = "DrainTimeout"
    RESET_TIMEOUT = "ResetTimeout"


class NotificationType(StrEnum):
    """The `type` values the PE runtime understands."""

    TRIGGER_DRAIN = "triggerDrain"
    TRIGGER_RESET = "triggerReset"
    RESUME_SUBMISSION = "resumeSubmission"
    DRAINED = "drained"
    RESET_FAILED = "resetFailed"


# ---- events ----


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


Event = Health | CheckpointDone | BlockingCheckpointDone | ResetDone | Drain | Reset | TimerFired | Restarted


# ---- actions ----


@dataclass(frozen=True, slots=True)
class ClearBoard:
    """Remove this region's entry from the notification board of each of its PEs."""


@dataclass(frozen=True, slots=True)
class CancelTimers:
    """Cancel every timer of the region."""


@dataclass(frozen=True, slots=True)
class ArmTimer:
    """After `delay_ms`, feed ``TimerFired(timer, timer_seq_id)``."""

    timer: TimerKind
    delay_ms: int
    timer_seq_id: int


@dataclass(frozen=True, slots=True)
class Notify:
    """Post to every PE of the region (board + UDP hint), after the status write."""

    type: NotificationType
    message: str


Action = ClearBoard | CancelTimers | ArmTimer | Notify


@dataclass(frozen=True, slots=True)
class StepResult:
    """The actions of an accepted event, in the order to perform them."""

    actions: tuple[Action, ...]
    persist: bool
    gauges: Mapping[str, float] | None

    @property
    def notification(self) -> Notify | None:
        return next((a for a in self.actions if isinstance(a, Notify)), None)

    @property
    def timer(self) -> ArmTimer | None:
        return next((a for a in self.actions if isinstance(a, ArmTimer)), None)


class EventRejected(ValueError):
    """The region refused an event (stale, duplicate, unknown...); it did not change."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class InvalidRegion(ValueError):
    """A region spec or persisted status that cannot be run; ``field`` is the CRD field at fault."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    @classmethod
    def from_native(cls, err: CrInvalidRegion) -> InvalidRegion:
        field = _CRD_NAMES.get(err.field, err.field)
        return cls(f"{field} {err.problem}", field)


def _result(step: CrStep) -> StepResult:
    actions: list[Action] = []
    if step.clear_board:
        actions.append(ClearBoard())
    if step.cancel_timers:
        actions.append(CancelTimers())
    if (arm := step.arm) is not None:
        timer, delay_ms, timer_seq_id = arm
        actions.append(ArmTimer(TimerKind(timer), delay_ms, timer_seq_id))
    if (note := step.notification) is not None:
        actions.append(Notify(NotificationType(note[0]), note[1]))
    values = step.gauges
    gauges = dict(zip(GAUGE_NAMES, values, strict=True)) if values is not None else None
    return StepResult(tuple(actions), step.persist, gauges)


def _rejection(step: CrStep) -> EventRejected | None:
    if step.rejected is None:
        return None
    return EventRejected(step.rejected, step.error or step.rejected)


class RegionMachine:
    """One region's FSM, built from (and saved to) the ConsistentRegion's spec and status."""

    def __init__(self, spec: ConsistentRegionSpec, status: ConsistentRegionStatus | None = None) -> None:
        self.spec = spec
        self._base_status = status or ConsistentRegionStatus()
        try:
            self._native = self._build(spec, status)
        except CrInvalidRegion as err:
            raise InvalidRegion.from_native(err) from None
        except OverflowError as err:
            raise InvalidRegion(f"region {spec.region_index}: a number is out of range ({err})") from None
        self.pes: tuple[int, ...] = tuple(self._native.pes)  # sorted, distinct

    @staticmethod
    def _build(spec: ConsistentRegionSpec, status: ConsistentRegionStatus | None) -> CrRegion:
        return CrRegion(
            region_index=spec.region_index,
            trigger=spec.trigger.value,
            period=spec.period or 0.0,
            drain_timeout=spec.drain_timeout,
            reset_timeout=spec.reset_timeout,
            max_consecutive_reset_attempts=spec.max_consecutive_reset_attempts,
            pes_in_region=spec.pes_in_region,
            operators_to_start_region_map=spec.operators_to_start_region_map,
            operators_to_trigger_map=spec.operators_to_trigger_map,
            status=None if status is None else _native_status(status),
        )

    @property
    def region_index(self) -> int:
        return self.spec.region_index

    @property
    def state(self) -> RegionState:
        return RegionState(self._native.state)

    @property
    def timer_seq_id(self) -> int:
        return self._native.current_timer_seq_id

    def status(self) -> ConsistentRegionStatus:
        """The status to persist (conditions and observedGeneration carried over)."""
        wire: dict[str, Any] = self._base_status.to_wire()
        wire.update(self.snapshot())
        return ConsistentRegionStatus.model_validate(wire)

    def snapshot(self) -> dict[str, Any]:
        """The FSM's own fields, named as in the CRD, without building a model (cheap, for logs)."""
        return {_CRD_NAMES[name]: value for name, value in self._native.status().items()}

    def gauges(self) -> dict[str, float]:
        return dict(zip(GAUGE_NAMES, self._native.gauges(), strict=True))

    def step(self, event: Event, now_ms: int) -> StepResult:
        """Apply one event; raises EventRejected (and changes nothing) if it is refused."""
        try:
            return _result(self._native.step(event.to_native(), now_ms))
        except CrRejected as err:
            raise EventRejected(err.kind, str(err)) from None

    def step_many(self, events: Iterable[Event], now_ms: int) -> list[StepResult | EventRejected]:
        """Apply events in order at one instant; refusals are returned, not raised."""
        batch = self._native.step_many([e.to_native() for e in events], now_ms)
        out: list[StepResult | EventRejected] = []
        for i in range(len(batch)):
            step = batch[i]
            out.append(_rejection(step) or _result(step))
        return out

    def copy(self) -> RegionMachine:
        clone = RegionMachine.__new__(RegionMachine)
        clone.spec = self.spec
        clone._base_status = self._base_status
        clone._native = self._native.copy()
        clone.pes = self.pes
        return clone


def _native_status(status: ConsistentRegionStatus) -> dict[str, Any]:
    """The persisted status keyed by the native FSM's names (what ``CrRegion(status=...)`` takes)."""
    fields = status.model_dump(mode="json")
    return {native: fields[field] for native, field in STATUS_FIELDS.items()}
