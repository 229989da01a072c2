"""A Job's health as the tools read it: ``Ready``, ``Reconciling`` and ``Stalled`` (kstatus).

They are derived from the rest of the status each time it is written (`with_health`), so they can
never disagree with the phase: ``kubectl wait --for=condition=Ready`` returns once the spec's own
generation runs with every PE pod ready; Argo CD and Flux read ``Reconciling`` (work under way:
submitting, upgrading, suspending, rolling back, pods coming up) and ``Stalled`` (it will not get
further without a change: a failed submission, an edit that cannot be applied). Each carries the
spec generation it speaks for, as ``status.observedGeneration`` does.
"""

from __future__ import annotations

from streams_k8s.api.job import JobPhase
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.k8s.conditions import set_condition

READY, RECONCILING, STALLED = "Ready", "Reconciling", "Stalled"

# The condition an edit of a running job sets (`jobs.rollout`): applied, being applied, or why not.
SPEC_APPLIED = "SpecApplied"
APPLIED, UPGRADING, EDIT_REFUSED, PAUSED = "Applied", "Upgrading", "EditRefused", "ReconciliationPaused"
WAITING_FOR_CHECKPOINT, CHECKPOINT_OVERDUE, UPGRADE_TIMED_OUT, ROLLED_BACK = (
    "WaitingForCheckpoint",
    "CheckpointOverdue",
    "UpgradeTimedOut",
    "RolledBack",
)
# SpecApplied reasons for an edit that will not run without another edit, or that waits past its bound.
_STALLING = frozenset({EDIT_REFUSED, CHECKPOINT_OVERDUE, UPGRADE_TIMED_OUT, ROLLED_BACK})

PODS_READY = "PodsReady"

# The conditions a submission sets (`jobs.submission`, `jobs.plans`); SUBMITTED is the one a
# submission that timed out or whose objects were refused sets False.
VALID, BUNDLE_FETCHED, PLANNED, SUBMITTED = "Valid", "BundleFetched", "Planned", "Submitted"

_WORKING = frozenset(
    {JobPhase.SUBMITTING, JobPhase.SUBMITTED, JobPhase.UPGRADING, JobPhase.SUSPENDING, JobPhase.ROLLING_BACK}
)
# Phases of a job whose children run (Ready once every pod is).
_RUNS = frozenset({JobPhase.RUNNING, JobPhase.ROLLED_BACK})


def _stalled(status: JobStatusView) -> tuple[str, str] | None:
    """(reason, message) when the job cannot get further without a change to it."""
    if status.phase is JobPhase.FAILED:
        return "Failed", status.message or "the job failed"
    applied = status.condition(SPEC_APPLIED)
    if applied is not None and applied.get("reason") in _STALLING:
        return str(applied["reason"]), str(applied.get("message") or "")
    return None


def _pods_ready(status: JobStatusView) -> bool:
    found = status.condition(PODS_READY)
    return found is not None and found.get("status") == "True"


def with_health(status: JobStatusView, generation: int) -> JobStatusView:
    """``status`` with Ready, Reconciling and Stalled set from its phase and conditions."""
    conditions = status.conditions
    phase = status.phase
    stalled = _stalled(status)
    current = status.applied_generation == generation
    paused = (status.condition(SPEC_APPLIED) or {}).get("reason") == PAUSED
    if stalled is not None:
        set_condition(conditions, STALLED, "True", stalled[0], stalled[1], generation)
    else:
        set_condition(conditions, STALLED, "False", "Progressing", "nothing blocks the job", generation)
    working = phase in _WORKING or (phase in _RUNS and not (current and _pods_ready(status)))
    if stalled is None and not paused and working:
        set_condition(conditions, RECONCILING, "True", str(phase or "Pending"), _doing(status), generation)
    else:
        set_condition(conditions, RECONCILING, "False", "Settled", "no work under way", generation)
    if phase is JobPhase.RUNNING and current and _pods_ready(status):
        set_condition(conditions, READY, "True", "Running", f"generation {generation} runs", generation)
    else:
        set_condition(
            conditions, READY, "False", str(phase or "Pending"), _not_ready(status, generation), generation
        )
    return status.with_(conditions=conditions)


def _doing(status: JobStatusView) -> str:
    upgrade = status.upgrade
    if status.phase is JobPhase.UPGRADING and upgrade is not None:
        return f"applying generation {upgrade.target_generation}"
    return status.message or str(status.phase or "starting")


def _not_ready(status: JobStatusView, generation: int) -> str:
    if status.phase in _RUNS and status.applied_generation != generation:
        return f"generation {status.applied_generation} runs; generation {generation} is not applied"
    pods = status.condition(PODS_READY)
    if status.phase is JobPhase.RUNNING and pods is not None:
        return str(pods.get("message") or "")
    return status.message or f"phase {status.phase or 'Pending'}"
