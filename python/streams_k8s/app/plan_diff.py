"""What a plan change does, PE by PE: the one diff of a running job's change, whether a width
change (`plan --diff`) or an edit (`plan --against`, the job controller's rollout).

A PE of the new plan is *added* (a new id), *replaced* (its pod is made again; the reasons are
listed), *updated* (only settings that steer the controllers changed; its pod is kept) or *kept*.
A PE of the old plan that the new one lacks is *removed*. The reasons a plan gives are derived
from the planned PEs: their AADL (``content``), their operators, PE ports, consistent regions and
placement; a PE whose only change is its restartable flag is updated. The job's own settings add
their reasons (``pod template``, ``resources``, ``state``) in `controller.jobs.upgrade_diff`, through
`PlanDiff.with_settings`, with the job-level facts (state kept, upgrade mode) beside it.

Pure, and free of pydantic: `plan --diff` loads nothing more than the plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streams_k8s.app.physical import PlannedPe
    from streams_k8s.app.plan import Plan


class Why(StrEnum):
    """Why a PE's pod is replaced (in this order when there are several)."""

    CONTENT = "content"  # its AADL: its operators' code, settings or connections
    OPERATORS = "operators"
    PORTS = "ports"  # how many PE input or output ports it has
    REGIONS = "regions"  # the consistent regions it holds operators of
    PLACEMENT = "placement"
    RESOURCES = "resources"  # the job's: its share of job-wide resources or the PE template's
    POD_TEMPLATE = "pod template"  # the job's: any other setting its pods are made from
    STATE = "state"  # the job's: suspended (the pod goes) or resumed (a new one comes)


def _pe_key(pe: PlannedPe) -> tuple[object, ...]:
    """What the PE's children are made of, of the plan's (`children.processing_elements.spec_inputs`
    without the id)."""
    return (pe.content_id, pe.operators, pe.regions, pe.placement, len(pe.inputs), pe.restartable)


def pe_reasons(old: PlannedPe, new: PlannedPe) -> list[Why]:
    """Why the plan replaces the pod of a PE planned as ``old`` and then ``new`` (none: kept, or
    updated when its restartable flag changed)."""
    reasons = []
    if old.content_id != new.content_id:
        reasons.append(Why.CONTENT)
    if old.operators != new.operators:
        reasons.append(Why.OPERATORS)
    if (len(old.inputs), len(old.outputs)) != (len(new.inputs), len(new.outputs)):
        reasons.append(Why.PORTS)
    if old.regions != new.regions:
        reasons.append(Why.REGIONS)
    if old.placement != new.placement:
        reasons.append(Why.PLACEMENT)
    return reasons


@dataclass(frozen=True, slots=True)
class PlanDiff:
    kept: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    replaced: dict[int, list[Why]] = field(default_factory=dict)  # by id, in id order
    added: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)

    def with_settings(self, reasons: Mapping[int, Sequence[Why]], updated: Iterable[int]) -> PlanDiff:
        """This diff with what the job's settings do to the PEs both plans have: ``reasons`` to
        replace them (added to the plan's), ``updated``: their PE objects change, not their pods."""
        merged = {i: [*self.replaced.get(i, ()), *reasons.get(i, ())] for i in {*self.replaced, *reasons}}
        replaced = {i: why for i, why in sorted(merged.items()) if why}
        moved = {*updated} - replaced.keys()
        return PlanDiff(
            kept=[i for i in self.kept if i not in replaced and i not in moved],
            updated=sorted(i for i in {*self.updated, *moved} if i not in replaced),
            replaced=replaced,
            added=self.added,
            removed=self.removed,
        )

    def summary(self) -> str:
        """One line: what the change does."""
        return (
            f"{len(self.replaced)} PEs replaced, {len(self.added)} added, {len(self.removed)} removed, "
            f"{len(self.updated)} updated in place, {len(self.kept)} kept"
        )

    def to_wire(self) -> dict[str, Any]:
        """The JSON form `plan --diff` and `plan --against` print."""
        return {
            "kept": self.kept,
            "updated": self.updated,
            "replaced": [{"id": i, "reasons": [str(w) for w in why]} for i, why in self.replaced.items()],
            "added": self.added,
            "removed": self.removed,
            "summary": self.summary(),
        }


def diff_plans(before: Plan, after: Plan) -> PlanDiff:
    """What changing a job from ``before`` to ``after`` does to its PEs (see the module docs)."""
    old, new = {pe.id: pe for pe in before.pes}, {pe.id: pe for pe in after.pes}
    diff = PlanDiff(added=sorted(new.keys() - old.keys()), removed=sorted(old.keys() - new.keys()))
    for pe_id in sorted(new.keys() & old.keys()):
        was, now = old[pe_id], new[pe_id]
        if _pe_key(was) == _pe_key(now):
            diff.kept.append(pe_id)
        elif why := pe_reasons(was, now):
            diff.replaced[pe_id] = why
        else:
            diff.updated.append(pe_id)
    return diff
