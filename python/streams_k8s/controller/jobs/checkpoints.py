"""The consistent-region side of upgrades and suspends, for the job controller: ask every region of
a job for a checkpoint (optionally holding the drains afterwards), read how far the regions got,
release the hold and tell the regions how to start when their PEs are replaced (which operators
keep their state across a plan change, and the mode an edit applies: `jobs.upgrade_diff`).

Pure decisions plus the ConsistentRegion patches: nothing here waits. The job controller passes
the job's regions from its informer store (``regions=``; without it they are listed), calls these
again on every requeue (a region whose spec already says so is not written), and goes on once
``checkpoint_outcome`` says the checkpoint is complete (each region's status answers).

The modes (``spec.upgradeMode``; `jobs.upgrade_diff.upgrade_mode` resolves the default):

- ``stateless``: ``request_start(.., STATELESS, ..)``: the regions start clean (``isCleanStart``);
- ``last-checkpoint``: replace the PEs, ``request_start``: every region resets to its last
  completed checkpoint, as after a coordinator restart;
- ``checkpoint-first``: ``request_checkpoint(.., hold=True)`` before the first old pod is deleted;
  the upgrade goes on once ``checkpoint_outcome(..).complete``; the new PEs reset to that
  checkpoint (the hold keeps the period from taking a newer one; an operator-driven region's
  trigger operators may still take one, and the reset then goes to it), then ``release_hold``.
  A region the user holds (``holdDrains`` set by hand) keeps its hold: the request adds its own
  only where there is none, marked (``HOLD_ANNOTATION``), and releases only what it marked (a
  hold the user sets while the request's holds the region is taken for the request's).

A checkpoint that does not complete within ``spec.checkpointTimeoutSeconds`` (``overdue``) never
turns the upgrade into a stateless one: the upgrade keeps waiting, nothing replaced, with a
condition naming the regions still pending (``CheckpointOutcome.summary``: SpecApplied
CheckpointOverdue, so Stalled) and a Warning Event. A region that fails (it reached the
maximum of reset attempts, or its coordinator refused it) makes the outcome ``failed``: the
upgrade stops there, nothing replaced, and says why.

Call ``request_start`` before the first old pod is deleted, naming the PEs that will be replaced:
only their regions take the request on, and each uses it the next time it becomes healthy, i.e.
once its replaced PEs run. (A region whose PEs are not replaced must not get it: it would use it at
its next failure.)
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from streams_k8s.api.consistent_region import ConsistentRegion, RegionState, StartMode
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.api.job import Job, UpgradeMode
from streams_k8s.controller.kinds import CONSISTENT_REGIONS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.objects import Object, meta

# The coordinator's condition on a region it cannot run (`consistent.job_regions.ACCEPTED`).
_ACCEPTED = "Accepted"


# ---- the patches ----


# The job's ConsistentRegion objects, e.g. from the job controller's informer store (read from the
# API server when not given).
Regions = Iterable[Object] | None


# On a region whose drains a checkpoint request holds (the request's nonce): a hold the user set
# by hand has none, so releasing the request's hold never releases the user's.
HOLD_ANNOTATION = "streams.ibm.com/drain-hold"


async def _regions(client: KubeClient, job: Job, regions: Regions) -> Iterable[Object]:
    if regions is not None:
        return regions
    selector = f"{JOB_LABEL}={job.metadata.name}"
    items, _ = await client.list_all(CONSISTENT_REGIONS, job.metadata.namespace, label_selector=selector)
    return items


async def _patch_all(
    client: KubeClient,
    job: Job,
    spec: Mapping[str, object],
    regions: Regions,
    pes: Collection[int] | None = None,
) -> None:
    """Merge ``spec`` into each of the job's regions (those holding one of ``pes``, if given)
    whose spec does not say so already: calling again on every requeue writes nothing."""
    namespace = job.metadata.namespace
    for obj in await _regions(client, job, regions):
        current = obj.get("spec") or {}
        if pes is not None and set(pes).isdisjoint(current.get("pesInRegion") or ()):
            continue
        if any(current.get(field) != value for field, value in spec.items()):
            await client.patch(CONSISTENT_REGIONS, meta(obj)["name"], {"spec": dict(spec)}, namespace)


async def request_checkpoint(
    client: KubeClient, job: Job, nonce: str, hold: bool, *, regions: Regions = None
) -> None:
    """Ask every region of the job to drain and checkpoint now (``spec.checkpointRequest``); with
    ``hold``, the period triggers no new drain until ``release_hold``: a region not held yet is
    held and marked as held by this request (in one write); one held already (by the user, or an
    earlier request) is left as it is. Idempotent per nonce."""
    for obj in await _regions(client, job, regions):
        current = obj.get("spec") or {}
        patch: dict[str, Any] = {}
        if current.get("checkpointRequest") != nonce:
            patch["spec"] = {"checkpointRequest": nonce}
        if hold and not current.get("holdDrains"):
            patch["spec"] = {**patch.get("spec", {}), "holdDrains": True}
            patch["metadata"] = {"annotations": {HOLD_ANNOTATION: nonce}}
        if patch:
            await client.patch(CONSISTENT_REGIONS, meta(obj)["name"], patch, job.metadata.namespace)


async def release_hold(
    client: KubeClient, job: Job, *, nonce: str | None = None, regions: Regions = None
) -> None:
    """Let the period trigger drains again where a checkpoint request held them (``nonce``'s, or
    any): removes ``spec.holdDrains`` and the mark. A hold the user set stays."""
    for obj in await _regions(client, job, regions):
        held_by = (meta(obj).get("annotations") or {}).get(HOLD_ANNOTATION)
        if held_by is None or nonce not in (None, held_by):
            continue
        patch = {"metadata": {"annotations": {HOLD_ANNOTATION: None}}, "spec": {"holdDrains": None}}
        await client.patch(CONSISTENT_REGIONS, meta(obj)["name"], patch, job.metadata.namespace)


def start_mode(mode: UpgradeMode) -> StartMode:
    return StartMode.CLEAN if mode is UpgradeMode.STATELESS else StartMode.RESET


async def request_start(
    client: KubeClient,
    job: Job,
    mode: UpgradeMode,
    nonce: str,
    pes: Collection[int] | None = None,
    *,
    regions: Regions = None,
) -> None:
    """Tell the regions how to start once their replaced PEs are healthy (``spec.startRequest``):
    reset to the last completed checkpoint (the held one after ``checkpoint-first``), or start
    clean (``stateless``). ``pes``: the PEs to be replaced; only regions holding one of them get
    the request (None: every region). Idempotent per nonce."""
    request = {"startRequest": {"nonce": nonce, "mode": start_mode(mode).value}}
    await _patch_all(client, job, request, regions, pes)


# ---- what the regions say ----


class CheckpointState(StrEnum):
    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class RegionCheckpoint:
    """One region's answer to a checkpoint request."""

    name: str
    state: CheckpointState
    seq_id: int | None = None  # the completed checkpoint
    requested_ms: float | None = None  # when the coordinator took the request on
    reason: str = ""


@dataclass(frozen=True, slots=True)
class CheckpointOutcome:
    """The answers of a job's regions to the checkpoint request ``nonce``, by region index."""

    nonce: str
    regions: Mapping[int, RegionCheckpoint] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every region completed a checkpoint for the request (vacuously true without regions)."""
        return all(r.state is CheckpointState.COMPLETED for r in self.regions.values())

    @property
    def failed(self) -> bool:
        return any(r.state is CheckpointState.FAILED for r in self.regions.values())

    def overdue(self, now_ms: float, timeout_seconds: float, since_ms: float | None = None) -> bool:
        """Not complete, and the earliest region took the request on more than the timeout ago
        (none having taken it on: it was made, at ``since_ms``, that long ago)."""
        if self.complete:
            return False
        taken = [r.requested_ms for r in self.regions.values() if r.requested_ms is not None]
        start = min(taken) if taken else since_ms
        return start is not None and now_ms - start > timeout_seconds * 1000

    def summary(self) -> str:
        """One line for a condition or an Event: what is pending or failed, and why."""
        if self.complete:
            done = ", ".join(f"{r.name}@{r.seq_id}" for _, r in sorted(self.regions.items()))
            return f"checkpoint {self.nonce} completed: {done or 'no consistent regions'}"
        open_ = [r for _, r in sorted(self.regions.items()) if r.state is not CheckpointState.COMPLETED]
        parts = [f"{r.name} {r.state.value}" + (f" ({r.reason})" if r.reason else "") for r in open_]
        return f"checkpoint {self.nonce}: " + "; ".join(parts)


def _region_checkpoint(obj: Object, nonce: str) -> tuple[int | None, RegionCheckpoint]:
    name = str(meta(obj).get("name") or "")
    try:
        region = ConsistentRegion.from_wire(obj)
    except ValidationError as err:
        reason = f"the ConsistentRegion is malformed: {err.errors()[0]['msg']}"
        return None, RegionCheckpoint(name, CheckpointState.FAILED, reason=reason)
    index, status = region.spec.region_index, region.status
    if region.spec.checkpoint_request != nonce:
        return index, RegionCheckpoint(name, CheckpointState.PENDING, reason="request not written yet")
    if status is None:
        return index, RegionCheckpoint(name, CheckpointState.PENDING, reason="no coordinator status yet")
    refused = next((c for c in status.conditions if c.type == _ACCEPTED and c.status == "False"), None)
    if refused is not None:
        return index, RegionCheckpoint(name, CheckpointState.FAILED, reason=refused.message or refused.reason)
    request = status.checkpoint_request
    if request is None or request.nonce != nonce:
        return index, RegionCheckpoint(name, CheckpointState.PENDING, reason="not taken on yet")
    if request.seq_id is not None:
        return index, RegionCheckpoint(name, CheckpointState.COMPLETED, request.seq_id, request.requested)
    since = request.requested
    if status.state is RegionState.MAXIMUM_RESET_ATTEMPTS_REACHED:
        reason = "the region reached its maximum of reset attempts (a forced reset is needed)"
        return index, RegionCheckpoint(name, CheckpointState.FAILED, requested_ms=since, reason=reason)
    reason = f"region {status.state.value}"
    return index, RegionCheckpoint(name, CheckpointState.PENDING, requested_ms=since, reason=reason)


def checkpoint_outcome(regions: Iterable[Object], nonce: str) -> CheckpointOutcome:
    """Per region (the job's ConsistentRegion objects, e.g. from an informer store): pending,
    completed with its sequence id, or failed with the reason."""
    answers: dict[int, RegionCheckpoint] = {}
    unknown = -1
    for obj in regions:
        index, answer = _region_checkpoint(obj, nonce)
        if index is None:  # a malformed region has no index to key it by
            index, unknown = unknown, unknown - 1
        answers[index] = answer
    return CheckpointOutcome(nonce, answers)
