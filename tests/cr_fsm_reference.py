"""A straightforward pure-Python implementation of the consistent-region transition table.

It is the differential-test oracle of the native FSM and the baseline of its benchmark, so it
is written for obviousness, not speed: one method per event, plain attributes, f-string
messages. Events are tuples: ("health", healthy, clean_start), ("checkpoint", pe, seq),
("blockingCheckpoint", pe, seq), ("resetDone", pe, seq, attempt), ("drain", operator, seq),
("reset", force), ("timer", name, timer_seq), ("restarted",).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ACTIVE = ("PROCESSING", "DRAINING", "CHECKPOINT_PENDING", "RESETTING")


class Refused(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


@dataclass
class Actions:
    clear_board: bool = False
    cancel_timers: bool = False
    arm: tuple[str, int, int] | None = None
    notification: tuple[str, str] | None = None


@dataclass
class ReferenceRegion:
    trigger: str
    period: float
    drain_timeout: float
    reset_timeout: float
    max_attempts: int
    pes: list[int]
    start_operators: dict[str, bool]
    trigger_operators: dict[str, bool]
    state: str = "STARTED"
    healthy: bool = False
    clean_start: bool = False
    must_reset: bool = False
    healthy_first_time: bool = False
    attempt: int = 0
    max_current: int = 0
    current: int = 1
    last_completed: int = 0
    pending: int = 0
    to_retire: int = 0
    timer_seq: int = 0
    slots: dict[int, str] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ReferenceRegion:
        """The reference twin of `CrRegion(**config)` (the native constructor's keyword names)."""
        return cls(
            trigger=config["trigger"],
            period=config["period"],
            drain_timeout=config["drain_timeout"],
            reset_timeout=config["reset_timeout"],
            max_attempts=config["max_consecutive_reset_attempts"],
            pes=config["pes_in_region"],
            start_operators=config["operators_to_start_region_map"],
            trigger_operators=config["operators_to_trigger_map"],
        )

    def __post_init__(self) -> None:
        self.pes = sorted(set(self.pes))
        self.max_current = self.max_attempts
        self.slots = dict.fromkeys(self.pes, "None")

    def snapshot(self) -> dict[str, Any]:
        """The fields the native status() reports for the FSM proper."""
        return {
            "state": self.state,
            "region_healthy": self.healthy,
            "clean_start": self.clean_start,
            "must_reset": self.must_reset,
            "healthy_first_time": self.healthy_first_time,
            "current_reset_attempt": self.attempt,
            "current_max_reset_attempts": self.max_current,
            "current_seq_id": self.current,
            "last_completed_seq_id": self.last_completed,
            "pending_seq_id": self.pending,
            "to_retire_seq_id": self.to_retire,
            "current_timer_seq_id": self.timer_seq,
            "completion": {str(pe): s for pe, s in self.slots.items()},
        }

    # ---- entry point ----

    def step(self, event: tuple[Any, ...]) -> Actions:
        """Applies the event, or raises Refused and leaves the region as it was (every
        handler checks before it changes anything)."""
        self._out = Actions()
        getattr(self, "_on_" + event[0])(*event[1:])
        return self._out

    def try_step(self, event: tuple[Any, ...]) -> Actions | str:
        """The actions, or the rejection kind."""
        try:
            return self.step(event)
        except Refused as refused:
            return refused.kind

    # ---- helpers ----

    def _notify(self, kind: str, message: str) -> None:
        self._out.notification = (kind, message)

    def _clear_timers(self) -> None:
        self.timer_seq += 1
        self._out.cancel_timers = True
        self._out.arm = None

    def _arm(self, name: str, seconds: float) -> None:
        self._out.arm = (name, int(seconds * 1000), self.timer_seq)

    def _reset_slots(self) -> None:
        self.slots = dict.fromkeys(self.pes, "None")

    def _reset(self) -> None:
        self._clear_timers()
        self._reset_slots()
        if self.attempt >= self.max_current:
            self.state = "MAXIMUM_RESET_ATTEMPTS_REACHED"
            self._notify("resetFailed", f"seqId={self.last_completed}")
            return
        self.state = "RESETTING"
        self._notify("triggerReset", f"seqId={self.last_completed};resetAttempt={self.attempt}")
        self.attempt += 1
        self._arm("ResetTimeout", self.reset_timeout)

    def _processing(self) -> None:
        self.state = "PROCESSING"
        if self.trigger == "periodic":
            self._arm("DrainPeriod", self.period)

    def _finish_blocking(self, seq: int) -> None:
        self.pending = seq
        self.current += 1
        self.state = "CHECKPOINT_PENDING"
        self._notify("resumeSubmission", f"seqId={self.current};retId={self.to_retire};pendCkpt=1")

    def _finish_checkpoint(self) -> None:
        self.to_retire = self.last_completed
        if self.state == "DRAINING":
            self.last_completed = self.current
            self.current += 1
            self._notify("resumeSubmission", f"seqId={self.current};retId={self.to_retire};pendCkpt=0")
        else:
            self.last_completed = self.pending
            self._notify("drained", f"seqId={self.pending}")
        self.attempt = 0
        self.max_current = self.max_attempts
        self.pending = self.current
        self._clear_timers()
        self._processing()

    def _finish_reset(self) -> None:
        self.current += 1
        self._notify("resumeSubmission", f"seqId={self.current};retId={self.to_retire};pendCkpt=0")
        self._clear_timers()
        self._processing()

    def _expected_checkpoint_seq(self, pe: int, seq: int) -> None:
        if pe not in self.slots:
            raise Refused("unknownPe")
        if self.state == "DRAINING":
            expected = self.current
        elif self.state == "CHECKPOINT_PENDING":
            expected = self.pending
        else:
            raise Refused("notExpected")
        if seq != expected:
            raise Refused("seqIdMismatch")

    # ---- the table ----

    def _on_health(self, healthy: bool, clean_start: bool) -> None:
        if healthy == self.healthy:
            return
        self.healthy = healthy
        self.clean_start = clean_start
        if healthy:
            if self.state == "STARTED":
                if not clean_start:
                    self.must_reset = True
                self.healthy_first_time = True
                if self.must_reset:
                    self.must_reset = False
                    self._reset()
                else:
                    self._processing()
            elif self.state == "UNHEALTHY":
                self._reset()
        else:
            self._out.clear_board = True
            if self.state in ACTIVE:
                self.state = "UNHEALTHY"
                self._clear_timers()

    def _on_checkpoint(self, pe: int, seq: int) -> None:
        self._expected_checkpoint_seq(pe, seq)
        if self.slots[pe] == "CheckpointDone":
            raise Refused("duplicateCompletion")
        self.slots[pe] = "CheckpointDone"
        done = list(self.slots.values())
        if all(s == "CheckpointDone" for s in done):
            self._reset_slots()
            self._finish_checkpoint()
        elif self.state == "DRAINING" and all(
            s in ("CheckpointDone", "BlockingCheckpointDone") for s in done
        ):
            self._finish_blocking(seq)

    def _on_blockingCheckpoint(self, pe: int, seq: int) -> None:
        self._expected_checkpoint_seq(pe, seq)
        if self.slots[pe] in ("CheckpointDone", "BlockingCheckpointDone"):
            raise Refused("duplicateCompletion")
        self.slots[pe] = "BlockingCheckpointDone"
        if all(s in ("CheckpointDone", "BlockingCheckpointDone") for s in self.slots.values()):
            self._finish_blocking(seq)

    def _on_resetDone(self, pe: int, seq: int, attempt: int) -> None:
        if pe not in self.slots:
            raise Refused("unknownPe")
        if self.state != "RESETTING":
            raise Refused("notExpected")
        if seq != self.last_completed:
            raise Refused("seqIdMismatch")
        if attempt != self.attempt - 1:
            raise Refused("resetAttemptMismatch")
        if self.slots[pe] == "ResetDone":
            raise Refused("duplicateCompletion")
        self.slots[pe] = "ResetDone"
        if all(s == "ResetDone" for s in self.slots.values()):
            self._reset_slots()
            self._finish_reset()

    def _on_drain(self, operator: str, seq: int) -> None:
        if self.trigger != "operatorDriven":
            raise Refused("notOperatorDriven")
        if operator not in self.start_operators:
            raise Refused("unknownOperator")
        if not self.trigger_operators.get(operator, False):
            raise Refused("notATriggerOperator")
        if self.state == "STARTED":
            self.must_reset = True
            return
        if self.state != "PROCESSING":
            raise Refused("notExpected")
        if seq != self.current:
            raise Refused("seqIdMismatch")
        self.state = "DRAINING"
        self._arm("DrainTimeout", self.drain_timeout)

    def _on_reset(self, force: bool) -> None:
        if self.state == "MAXIMUM_RESET_ATTEMPTS_REACHED" and not force:
            raise Refused("forceRequired")
        if force:
            self.max_current = self.attempt + self.max_attempts
        if self.state == "STARTED":
            self.must_reset = True
        elif self.state == "MAXIMUM_RESET_ATTEMPTS_REACHED":
            if self.healthy:
                self._reset()
            else:
                self.state = "UNHEALTHY"
        elif self.state in ACTIVE:
            self._reset()

    def _on_timer(self, name: str, timer_seq: int) -> None:
        if timer_seq < self.timer_seq:
            raise Refused("staleTimer")
        if timer_seq > self.timer_seq:
            raise Refused("futureTimer")
        if name == "DrainPeriod" and self.state == "PROCESSING":
            self.state = "DRAINING"
            self._notify("triggerDrain", f"seqId={self.current}")
            self._arm("DrainTimeout", self.drain_timeout)
        elif (name == "DrainTimeout" and self.state in ("DRAINING", "CHECKPOINT_PENDING")) or (
            name == "ResetTimeout" and self.state == "RESETTING"
        ):
            self._reset()
        else:
            raise Refused("notExpected")

    def _on_restarted(self) -> None:
        self._clear_timers()
        self.state = "STARTED"
        self.healthy = False
        self.must_reset = True
