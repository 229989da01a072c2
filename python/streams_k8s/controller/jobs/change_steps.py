"""The states of a change of a running job and its next step: `decide(record, observed) -> Step`,
pure, so every transition is in one table (`tests/test_controller_change_steps.py`) and the
rollout (`jobs.rollout`) only performs what it says.

A change (an edit, a suspend or resume, a rollback, a width change) is written ahead in
``status.upgrade``; its state is named from that record (`state_of`), never from which fields
happen to be set elsewhere. A width change is an edit whose record carries ``targetWidths`` (the
spec stays the applied one); one the API server refused goes back the same way, its record
saying why (``refused``):

| state | the record |
|---|---|
| `IDLE` | none: what runs is the applied spec |
| `PREPARING` | a change whose consistent regions are still to be prepared (``checkpoint`` unset) |
| `REPLACING` | a change whose regions are prepared, or that has none to prepare |
| `ROLLBACK_PREPARING`, `ROLLBACK_REPLACING` | the same, for a rollback to the last stable spec |

The steps, in the order `decide` weighs them:

- no record: `PAUSE` (the pause annotation holds an edit back, and a width change after it),
  `START` (plan the edit, write it ahead), else `RESIZE` when a ParallelRegion's width is edited
  and not applied (plan the width change, write it ahead; an edit goes first), else `NONE`
  (nothing edited, the edit not valid, or its generation settled: refused or rolled back);
- past ``submissionTimeOutInSeconds`` with PEs still to replace or coming up: `FAIL` for a
  rollback (it never loops), `ROLL_BACK` when the edit allows it and a last stable spec exists
  (never a width change), else the change goes on, ``late`` saying so;
- `PREPARE_REGIONS` before the first disruptive PE is patched;
- `REPLACE` the next ``batch`` of disruptive PEs (``maxUnavailable`` less those coming up; by
  default a quarter of the job's PEs for an edit, all of them for a width change);
- `WAIT` while PEs are patched or coming up;
- `COMMIT` once every PE runs the target; a width change's once every PE is at it (its pods
  then come up as PodsReady says: a region reports the width its PEs are at, as it always has,
  so a job whose pods cannot start yet still follows its widths).

The Job's phase follows the record too (`phase_during`, `phase_after`): Upgrading, Suspending or
RollingBack while it is under way; Running, Suspended or RolledBack once it is committed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from streams_k8s.api.job import JobPhase, JobState, UpgradeRecord


class ChangeState(StrEnum):
    IDLE = "Idle"
    PREPARING = "Preparing"
    REPLACING = "Replacing"
    ROLLBACK_PREPARING = "RollbackPreparing"
    ROLLBACK_REPLACING = "RollbackReplacing"


_PREPARING = frozenset({ChangeState.PREPARING, ChangeState.ROLLBACK_PREPARING})
_ROLLBACK = frozenset({ChangeState.ROLLBACK_PREPARING, ChangeState.ROLLBACK_REPLACING})


def state_of(record: UpgradeRecord | None) -> ChangeState:
    """The state the write-ahead record says (see the module docs)."""
    if record is None:
        return ChangeState.IDLE
    prepared = record.checkpoint is not None
    if record.rollback:
        return ChangeState.ROLLBACK_REPLACING if prepared else ChangeState.ROLLBACK_PREPARING
    return ChangeState.REPLACING if prepared else ChangeState.PREPARING


def _suspends(record: UpgradeRecord) -> bool:
    return record.spec.get("state") == JobState.SUSPENDED.value


def phase_during(record: UpgradeRecord) -> JobPhase:
    """The Job's phase while ``record``'s change is under way."""
    if record.rollback:
        return JobPhase.ROLLING_BACK
    return JobPhase.SUSPENDING if _suspends(record) else JobPhase.UPGRADING


def phase_after(record: UpgradeRecord) -> JobPhase:
    """The Job's phase once ``record``'s change is what runs."""
    if record.rollback:
        return JobPhase.ROLLED_BACK
    return JobPhase.SUSPENDED if _suspends(record) else JobPhase.RUNNING


class Action(StrEnum):
    NONE = "None"
    PAUSE = "Pause"
    START = "Start"
    RESIZE = "Resize"
    PREPARE_REGIONS = "PrepareRegions"
    REPLACE = "Replace"
    WAIT = "Wait"
    COMMIT = "Commit"
    ROLL_BACK = "RollBack"
    FAIL = "Fail"


@dataclass(frozen=True, slots=True)
class Observed:
    """What the rollout found. Without a record: the Job's spec, annotations and regions; with one: the
    target's survey of the job's PEs (`jobs.target.Target.survey`) and the clock."""

    edited: bool = False  # the spec's generation is not the applied one
    valid: bool = True  # the edited spec is valid (an invalid one is refused elsewhere)
    paused: bool = False  # streams.ibm.com/pause-reconciliation
    settled: bool = False  # this generation was refused or rolled back: not tried again
    resized: bool = False  # a region's width is edited, neither applied nor refused
    quiet: int = 0  # PEs patched this pass whose pods stay
    disruptive: int = 0  # PEs whose pods are still to replace
    in_flight: int = 0  # PEs being created or whose pods are coming up
    batch_size: int = 1  # maxUnavailable, or a quarter of the target's PEs
    overdue: bool = False  # past the target's submissionTimeOutInSeconds
    may_roll_back: bool = False  # the edit's spec allows a rollback and a last stable spec exists


@dataclass(frozen=True, slots=True)
class Step:
    action: Action
    batch: int = 0  # REPLACE: how many of the disruptive PEs to patch now
    late: bool = False  # past the time-out with no rollback: the edit goes on, saying so


def decide(record: UpgradeRecord | None, observed: Observed) -> Step:
    """The next step of the change ``record`` (see the module docs)."""
    state = state_of(record)
    if state is ChangeState.IDLE:
        if observed.valid and observed.edited:
            if observed.paused:
                return Step(Action.PAUSE)
            if not observed.settled:
                return Step(Action.START)
        return Step(Action.RESIZE) if observed.resized else Step(Action.NONE)
    late = observed.overdue and bool(observed.disruptive or observed.in_flight)
    if late and state in _ROLLBACK:
        return Step(Action.FAIL)
    if late and observed.may_roll_back:
        return Step(Action.ROLL_BACK)
    if observed.disruptive and state in _PREPARING:
        return Step(Action.PREPARE_REGIONS, late=late)
    batch = min(observed.disruptive, max(observed.batch_size - observed.in_flight, 0))
    if batch:
        return Step(Action.REPLACE, batch, late)
    coming_up = observed.in_flight and record is not None and record.target_widths is None
    if observed.quiet or observed.disruptive or coming_up:
        return Step(Action.WAIT, late=late)
    return Step(Action.COMMIT)
