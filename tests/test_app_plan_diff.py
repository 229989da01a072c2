"""The one diff of a plan change (`app.plan_diff`): what becomes of each PE, and why, from the
planned PEs alone; the job's settings layered on it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from streams_k8s.api.job import Fusion
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.physical import PeInputPort, PlannedPe
from streams_k8s.app.plan import Plan, plan_application
from streams_k8s.app.plan_diff import PlanDiff, Why, diff_plans
from streams_k8s.app.specs import Placement
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl


def _plan() -> Plan:
    app = parse_adl(synthetic_adl(SyntheticSpec(chains=2, length=2)))
    return plan_application(app, Fusion(legacy=True), job_name="j")


def _changed(pe: PlannedPe, change: str) -> PlannedPe:
    match change:
        case "code":
            return replace(pe, content_id="other")
        case "an input port":
            extra = PeInputPort(id=len(pe.inputs), node=pe.nodes[0], port=9)
            return replace(pe, content_id="other", inputs=[*pe.inputs, extra])
        case "operators":
            return replace(pe, content_id="other", operators=[*pe.operators, "New"])
        case "a consistent region":
            return replace(pe, regions=[0])
        case "placement":
            return replace(pe, placement=Placement(host="h1"))
        case "restartable":
            return replace(pe, restartable=not pe.restartable)
    raise AssertionError(change)


@pytest.mark.parametrize(
    ("change", "reasons"),
    [
        ("code", [Why.CONTENT]),
        ("an input port", [Why.CONTENT, Why.PORTS]),
        ("operators", [Why.CONTENT, Why.OPERATORS]),
        ("a consistent region", [Why.REGIONS]),
        ("placement", [Why.PLACEMENT]),
        ("restartable", None),  # a setting of the PE object, not of its pod: updated in place
    ],
)
def test_a_pe_is_replaced_for_what_its_plan_changes_and_updated_for_its_restartable_flag(
    change: str, reasons: list[Why] | None
) -> None:
    before = _plan()
    first, *others = before.pes
    after = replace(before, pes=[_changed(first, change), *others])
    diff = diff_plans(before, after)
    assert diff.kept == [pe.id for pe in others]
    assert diff.replaced == ({first.id: reasons} if reasons else {})
    assert diff.updated == ([] if reasons else [first.id])
    assert (diff.added, diff.removed) == ([], [])


def test_pes_of_new_ids_are_added_and_those_gone_removed() -> None:
    before = _plan()
    first, *others = before.pes
    after = replace(before, pes=[*others, replace(first, id=100)])
    diff = diff_plans(before, after)
    assert (diff.added, diff.removed, diff.replaced) == ([100], [first.id], {})
    assert diff.summary() == f"0 PEs replaced, 1 added, 1 removed, 0 updated in place, {len(others)} kept"
    assert diff_plans(before, before) == PlanDiff(kept=[pe.id for pe in before.pes])


def test_the_job_settings_add_their_reasons_to_the_plans_and_update_pes_in_place() -> None:
    diff = PlanDiff(kept=[0, 1, 2], replaced={3: [Why.CONTENT]}, updated=[4])
    layered = diff.with_settings({1: [Why.POD_TEMPLATE], 3: [Why.RESOURCES], 2: []}, updated=[2, 3])
    assert layered.replaced == {1: [Why.POD_TEMPLATE], 3: [Why.CONTENT, Why.RESOURCES]}
    assert (layered.kept, layered.updated) == ([0], [2, 4])
    assert layered.to_wire()["replaced"] == [
        {"id": 1, "reasons": ["pod template"]},
        {"id": 3, "reasons": ["content", "resources"]},
    ]
