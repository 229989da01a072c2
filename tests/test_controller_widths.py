"""The pure parts of width changes: the write-ahead record and the plan of a set of widths."""

from __future__ import annotations

from typing import Any

from streams_k8s.api.job import Fusion, ParallelRegionWidth
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.plan import plan_application, plan_at_widths, refuse_with_widths
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl
from streams_k8s.controller.jobs.widths import failed, pending_generation, widths_of


def region(
    generation: int, *conditions: dict[str, Any], width: int = 3, applied: int | None = 2
) -> dict[str, Any]:
    return {
        "metadata": {"name": "j-0", "namespace": "default", "generation": generation},
        "spec": {"index": 0, "alias": "R", "width": width},
        "status": {"width": applied, "conditions": list(conditions)},
    }


def resized(reason: str, message: str, observed: int) -> dict[str, Any]:
    return {
        "type": "Resized",
        "status": "False",
        "reason": reason,
        "message": message,
        "observedGeneration": observed,
    }


def test_the_write_ahead_generation_counts_only_for_the_current_spec() -> None:
    assert pending_generation(region(2, resized("Resizing", "to width 3 as job generation 4", 2))) == 4
    assert pending_generation(region(3, resized("Resizing", "to width 3 as job generation 4", 2))) is None
    assert pending_generation(region(2, resized("ResizeFailed", "as job generation 4", 2))) is None
    assert pending_generation(region(2)) is None


def test_a_failed_width_waits_for_the_next_edit() -> None:
    assert failed(region(5, resized("ResizeFailed", "no room", 5)))
    assert not failed(region(6, resized("ResizeFailed", "no room", 5)))


def test_widths_wanted_and_applied() -> None:
    assert widths_of([region(1)]) == ({"R": 3}, {"R": 2})
    assert widths_of([region(1, applied=None)]) == ({"R": 3}, {"R": None})


def test_the_plan_of_a_set_of_widths_is_the_same_every_time() -> None:
    app = parse_adl(synthetic_adl(SyntheticSpec(chains=2, length=3, regions=1, width=2)), what="generated")
    base = plan_application(app, Fusion(), job_name="j")
    alias = app.parallel_regions[0].name
    assert plan_at_widths(base, {alias: 2}) is base
    direct = plan_at_widths(base, {alias: 4})
    assert [(p.id, p.content_id) for p in direct.pes] == [
        (p.id, p.content_id) for p in plan_at_widths(base, {alias: 4}).pes
    ]
    assert direct.topology.widths != base.topology.widths
    # Re-fused from the submitted plan, not from 3: a chain of re-fusions can end elsewhere.
    three, _ = refuse_with_widths(base, [ParallelRegionWidth(alias=alias, width=3)])
    back_at_three = plan_at_widths(base, {alias: 3})
    assert [(p.id, p.content_id) for p in back_at_three.pes] == [(p.id, p.content_id) for p in three.pes]
