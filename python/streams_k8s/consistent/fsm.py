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
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from streams_k8s._native import CrInvalidRegion, CrRegion, CrRejected, CrStep, cr_gauge_names
from streams_k8s.api.consistent_region import (
    ConsistentRegionSpec,
    ConsistentRegionStatus,
    RegionState,
)
from streams_k8s.consistent.fsm_events import (
    BlockingCheckpointDone,
    CheckpointDone,
    CheckpointNow,
    Drain,
    Event,
    Health,
    HoldDrains,
    Reset,
    ResetDone,
    Restarted,
    Start,
    TimerFired,
    TimerKind,
)
from streams_k8s.consistent.records import RegionRecords

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
    "checkpoint_requested": "checkpoint_requested",
    "drains_held": "drains_held",
    "start_clean": "start_clean",
}


def _crd_names() -> dict[str, str]:
    """Native name → CRD name, for the status fields and the spec's (the CrRegion keywords)."""
    status = ConsistentRegionStatus.model_fields
    names = {native: status[field].alias or field for native, field in STATUS_FIELDS.items()}
    names.update((field, info.alias or field) for field, info in ConsistentRegionSpec.model_fields.items())
    return names


_CRD_NAMES = _crd_names()


class NotificationType(StrEnum):
    """The `type` values the PE runtime understands."""

    TRIGGER_DRAIN = "triggerDrain"
    TRIGGER_RESET = "triggerReset"
    RESUME_SUBMISSION = "resumeSubmission"
    DRAINED = "drained"
    RESET_FAILED = "resetFailed"


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
        self.records = RegionRecords(self._base_status)

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

    @property
    def drains_held(self) -> bool:
        return self._native.drains_held

    def status(self) -> ConsistentRegionStatus:
        """The status to persist (conditions and observedGeneration carried over)."""
        wire: dict[str, Any] = self._base_status.to_wire()
        wire.update(self.snapshot())
        wire.update(self.records.to_wire())
        return ConsistentRegionStatus.model_validate(wire)

    def snapshot(self) -> dict[str, Any]:
        """The FSM's own fields, named as in the CRD, without building a model (cheap, for logs)."""
        return {_CRD_NAMES[name]: value for name, value in self._native.status().items()}

    def gauges(self) -> dict[str, float]:
        return dict(zip(GAUGE_NAMES, self._native.gauges(), strict=True))

    def step(self, event: Event, now_ms: int) -> StepResult:
        """Apply one event; raises EventRejected (and changes nothing) if it is refused."""
        try:
            result = _result(self._native.step(event.to_native(), now_ms))
        except CrRejected as err:
            raise EventRejected(err.kind, str(err)) from None
        return self._record(event, result, now_ms)

    def _record(self, event: Event, result: StepResult, now_ms: int) -> StepResult:
        """Keep the requests taken on and the completed checkpoints and resets (`records`); a
        request taken on is written even when the FSM's own state did not change."""
        if result.gauges is not None:
            self.records.observe(result.gauges, self.snapshot)
        if isinstance(event, CheckpointNow):
            self.records.checkpoint_asked(event.nonce, now_ms)
        elif isinstance(event, Start):
            self.records.start_asked(event.nonce, event.mode, now_ms)
        else:
            return result
        return replace(result, persist=True)

    def step_many(self, events: Iterable[Event], now_ms: int) -> list[StepResult | EventRejected]:
        """Apply events in order at one instant; refusals are returned, not raised."""
        events = list(events)
        batch = self._native.step_many([e.to_native() for e in events], now_ms)
        out: list[StepResult | EventRejected] = []
        for event, i in zip(events, range(len(batch)), strict=True):
            step = batch[i]
            rejection = _rejection(step)
            if rejection is not None:
                out.append(rejection)
                continue
            out.append(self._record(event, _result(step), now_ms))
        return out

    def copy(self) -> RegionMachine:
        clone = RegionMachine.__new__(RegionMachine)
        clone.spec = self.spec
        clone._base_status = self._base_status
        clone._native = self._native.copy()
        clone.pes = self.pes
        clone.records = self.records.copy()
        return clone


def _native_status(status: ConsistentRegionStatus) -> dict[str, Any]:
    """The persisted status keyed by the native FSM's names (what ``CrRegion(status=...)`` takes)."""
    fields = status.model_dump(mode="json")
    return {native: fields[field] for native, field in STATUS_FIELDS.items()}


# The events live in `fsm_events`; this module is their public face too.
__all__ = [
    "GAUGE_NAMES",
    "STATUS_FIELDS",
    "Action",
    "ArmTimer",
    "BlockingCheckpointDone",
    "CancelTimers",
    "CheckpointDone",
    "CheckpointNow",
    "ClearBoard",
    "Drain",
    "Event",
    "EventRejected",
    "Health",
    "HoldDrains",
    "InvalidRegion",
    "NotificationType",
    "Notify",
    "RegionMachine",
    "Reset",
    "ResetDone",
    "Restarted",
    "Start",
    "StepResult",
    "TimerFired",
    "TimerKind",
]
