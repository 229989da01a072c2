"""What an edit of a running job does: the plan's diff (`app.plan_diff`, the one `plan --diff`
prints) with what the job's settings add, as the job controller applies it and `streams-k8s plan
NEW --against OLD` shows it before the edit is made.

The job's settings replace a PE's pod for its share of the job's resources, a suspend or resume,
or any other setting its pods are made from (as `children.pod.pod_template_hash` sees them), and
update a PE in place when only settings that steer the controllers change (restart policies);
PE settings are compared as the PE objects carry them (`children.processing_elements.PeTemplate`).
Operators in a consistent region of both plans keep their state (`state_kept`), as the upgrade
mode (`upgrade_mode`) carries it across.

Pure: no cluster client, so the offline `plan --against` loads none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streams_k8s.api.job import Job, JobSpec, UpgradeMode
from streams_k8s.api.processing_element import ProcessingElementSpec
from streams_k8s.app.model import Application
from streams_k8s.app.plan import Plan, plan_at_widths
from streams_k8s.app.plan_diff import PlanDiff, Why, diff_plans
from streams_k8s.app.submission import (
    SubmissionError,
    WidthOverride,
    override_of,
    resolve_values,
    resolve_widths,
)
from streams_k8s.controller.children.pod import pod_template_hash
from streams_k8s.controller.children.processing_elements import PeTemplate
from streams_k8s.controller.planning import plan_job, replan_job


def upgrade_mode(spec: JobSpec, has_regions: bool) -> UpgradeMode:
    """The mode an edit of this job applies: the spec's, else last-checkpoint for a job with
    consistent regions and stateless for one without."""
    if spec.upgrade_mode is not None:
        return spec.upgrade_mode
    return UpgradeMode.LAST_CHECKPOINT if has_regions else UpgradeMode.STATELESS


@dataclass(frozen=True, slots=True)
class StateKept:
    """Which operators of consistent regions keep their state across a plan change."""

    kept: Mapping[int, tuple[str, ...]]  # region index -> operators in that region in both plans
    lost: tuple[str, ...]  # in a region before, not in the same region after: their state is not restored
    new: tuple[str, ...]  # in a region after only: they start without state


def _region_operators(plan: Plan) -> dict[str, int]:
    """Operator name -> index of the consistent region it belongs to."""
    return {
        operator: region.region_index
        for region in plan.consistent_regions
        for operator in region.operators_to_start_region_map
    }


def state_kept(old_plan: Plan, new_plan: Plan) -> StateKept:
    """An operator keeps its state when it has the same name and the same region in both plans."""
    old, new = _region_operators(old_plan), _region_operators(new_plan)
    kept: dict[int, list[str]] = {}
    for operator, index in sorted(new.items()):
        if old.get(operator) == index:
            kept.setdefault(index, []).append(operator)
    return StateKept(
        kept={index: tuple(ops) for index, ops in sorted(kept.items())},
        lost=tuple(sorted(op for op, index in old.items() if new.get(op) != index)),
        new=tuple(sorted(op for op, index in new.items() if old.get(op) != index)),
    )


@dataclass(frozen=True, slots=True)
class UpgradeDiff:
    """What an edit does: to its PEs (`app.plan_diff`, the job's settings' reasons added), and to
    the state of its consistent regions."""

    pes: PlanDiff
    # Operators in a consistent region in both plans (the same name and region): their state is kept.
    state_kept: list[str] = field(default_factory=list)
    upgrade_mode: UpgradeMode = UpgradeMode.STATELESS  # how consistent-region state crosses the edit

    def summary(self) -> str:
        return self.pes.summary()

    def to_wire(self) -> dict[str, Any]:
        """The JSON form `plan --against -o json` prints: `plan --diff`'s, and the state's."""
        return {**self.pes.to_wire(), "stateKept": self.state_kept, "upgradeMode": self.upgrade_mode.value}


# What the plan gives a PE's spec (compared by `app.plan_diff`), and the job's resources (a reason
# of their own): the rest of the spec is the job's PE template.
_PLANNED = ("content_id", "operators", "regions", "placement", "input_ports", "restartable", "resources")


def _settings_why(old: ProcessingElementSpec, new: ProcessingElementSpec) -> list[Why]:
    """Why the job's settings replace the pod of a PE of specs ``old`` and then ``new``."""
    reasons = []
    if old.resources != new.resources:
        reasons.append(Why.RESOURCES)
    if old.suspended != new.suspended:
        reasons.append(Why.STATE)
    as_planned = old.model_copy(update={name: getattr(new, name) for name in _PLANNED})
    if pod_template_hash(as_planned) != pod_template_hash(new):
        reasons.append(Why.POD_TEMPLATE)
    return reasons


def upgrade_diff(old_job: Job, old_plan: Plan, new_job: Job, new_plan: Plan) -> UpgradeDiff:
    """What applying ``new_job`` (planned as ``new_plan``) to a job running ``old_job`` does."""
    pes = diff_plans(old_plan, new_plan)
    old_template = PeTemplate(old_job.spec, len(old_plan.pes))
    new_template = PeTemplate(new_job.spec, len(new_plan.pes))
    if old_template != new_template:  # most edits keep it: no PE's spec is built
        old, new = {pe.id: pe for pe in old_plan.pes}, {pe.id: pe for pe in new_plan.pes}
        reasons: dict[int, list[Why]] = {}
        updated = []
        for pe_id in sorted(old.keys() & new.keys()):
            old_spec, new_spec = old_template.spec(old[pe_id]), new_template.spec(new[pe_id])
            if old_spec == new_spec:  # their pod templates need no hashing
                continue
            if why := _settings_why(old_spec, new_spec):
                reasons[pe_id] = why
            else:
                updated.append(pe_id)
        pes = pes.with_settings(reasons, updated)
    return UpgradeDiff(
        pes=pes,
        state_kept=sorted(op for ops in state_kept(old_plan, new_plan).kept.values() for op in ops),
        upgrade_mode=upgrade_mode(
            new_job.spec, bool(old_plan.consistent_regions or new_plan.consistent_regions)
        ),
    )


def pe_operators(plan: Plan) -> dict[int, list[str]]:
    """Operator names by PE id: what keeps PE ids across a re-plan."""
    return {pe.id: pe.operators for pe in plan.pes}


def resumed_ids(live: Mapping[int, Sequence[str]], next_pe_id: int) -> dict[int, Sequence[str]]:
    """The ids an edit resumed after a restart keeps: the PEs it started from (ids below
    ``next_pe_id``, whatever the applied spec's plan numbers now) by their operators, and new PEs
    numbered from ``next_pe_id`` in plan order, as when the edit started (those it already made
    get the same ids again). New PEs are numbered from the highest id given, so an id with no
    operators stands for that floor when no PE has it."""
    ids: dict[int, Sequence[str]] = {i: ops for i, ops in live.items() if i < next_pe_id}
    if next_pe_id > 0:
        ids.setdefault(next_pe_id - 1, ())
    return ids


def given_back(
    started: Mapping[int, Sequence[str]], live: Mapping[int, Sequence[str]], removed: Sequence[int]
) -> dict[int, Sequence[str]]:
    """The ids a rollback gives back: the PEs of the plan the undone edit started from (``started``,
    by id) that no live PE has the operators of take the ids that edit ``removed`` (those no live
    PE has), in id order: ``started`` may number them otherwise when it was planned again after a
    restart, but in the same order."""
    running = {frozenset(ops) for ops in live.values()}
    gone = [ops for _, ops in sorted(started.items()) if frozenset(ops) not in running]
    return dict(zip(sorted(i for i in removed if i not in live), gone, strict=False))


def plan_edit(
    job: Job,
    app: Application,
    *,
    job_id: int,
    nodes: int | None,
    running: Plan,
    applied: JobSpec,
    ids: Mapping[int, Sequence[str]] | None = None,
) -> Plan:
    """The plan of ``job`` as an edit of a job running ``running`` (planned from the spec
    ``applied``; PE ids kept where operators are: those of ``running``, or ``ids`` when given). A
    region that runs at another width than the spec gives it (resized through its ParallelRegion)
    keeps that width, unless the edit sets the region's width itself (`widths_set`)."""
    ids = pe_operators(running) if ids is None else ids
    # the edit planned from the running plan: only the PEs it touches are rendered again
    plan = replan_job(job, app, running, job_id=job_id, nodes=nodes, ids_from=ids).plan
    runs_at = {r.alias: r.width for r in running.parallel_regions}
    set_by_edit = widths_set(applied, job.spec, app)
    kept = {
        r.alias: runs_at[r.alias]
        for r in plan.parallel_regions
        if r.alias in runs_at and r.width != runs_at[r.alias] and r.alias not in set_by_edit
    }
    # Re-fused to the widths it runs at, as the resize did (a fresh plan at those widths may
    # group operators otherwise, replacing PEs whose content the edit does not change).
    return plan_at_widths(plan, kept) if kept else plan


def widths_set(old: JobSpec, new: JobSpec, app: Application) -> set[str]:
    """Names of ``app``'s parallel regions whose width the edit from spec ``old`` to ``new`` sets
    itself: the width its submission-time values and ``parallelRegions`` give differs, or the
    ``parallelRegions`` entry that names the region does (one the old spec cannot plan: all)."""

    def given(spec: JobSpec) -> tuple[dict[int, int], list[WidthOverride]]:
        overrides = [WidthOverride(w.alias, w.width) for w in spec.parallel_regions]
        return resolve_widths(app, resolve_values(app, spec.submission_time_values), overrides), overrides

    new_widths, new_overrides = given(new)
    try:
        old_widths, old_overrides = given(old)
    except SubmissionError:
        return {r.name for r in app.parallel_regions}
    return {
        r.name
        for r in app.parallel_regions
        if old_widths[r.index] != new_widths[r.index]
        or override_of(r.name, old_overrides) != override_of(r.name, new_overrides)
    }


def preview(
    old_job: Job,
    old_app: Application,
    new_job: Job,
    new_app: Application,
    *,
    job_id: int,
    nodes: int | None,
    ids_from: Mapping[int, list[str]] | None = None,
    runs_at: Mapping[str, int] | None = None,
) -> tuple[Plan, UpgradeDiff]:
    """The plan of ``new_job`` as an edit of a job running ``old_job``, and what the edit does:
    planned as the job controller plans an edit. A live job's PE ids (``ids_from``: the operators
    of each PE it runs) and the widths its regions run at (``runs_at``, when resized) make it the
    job controller's own inputs; without them, those of ``old_job`` planned afresh."""
    applied = plan_job(old_job, old_app, job_id=job_id, nodes=nodes, ids_from=ids_from or None)
    planned_widths = {r.alias: r.width for r in applied.parallel_regions}
    running = plan_at_widths(applied, {**planned_widths, **runs_at}) if runs_at else applied
    new_plan = plan_edit(new_job, new_app, job_id=job_id, nodes=nodes, running=running, applied=old_job.spec)
    return new_plan, upgrade_diff(old_job, running, new_job, new_plan)
