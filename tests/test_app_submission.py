"""Submission-time values and width overrides on generated applications."""

from __future__ import annotations

import pytest

from streams_k8s.api.job import Fusion, ParallelRegionWidth
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.model import Application
from streams_k8s.app.plan import plan_application
from streams_k8s.app.submission import (
    SubmissionError,
    match_values,
    resolve_values,
    resolve_widths,
    spl_literal,
)
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl


def _app(required: bool = False) -> Application:
    spec = SyntheticSpec(chains=3, length=3, regions=2, width_values=True, required_values=required)
    return parse_adl(synthetic_adl(spec))


def test_widths_from_values_defaults_and_qualified_names() -> None:
    app = _app()
    assert resolve_widths(app, resolve_values(app, {})) == {0: 2, 1: 2}
    values = resolve_values(app, {"width0": "3", "synthetic::App.width1": "4"})
    assert resolve_widths(app, values) == {0: 3, 1: 4}
    plan = plan_application(app, Fusion(legacy=True), job_name="j", submission_values={"App.width1": "5"})
    assert len(plan.topology.nodes) == 1 + 3 * 3 + 1 + (2 - 1) + (5 - 1)


def test_required_values_must_be_given() -> None:
    app = _app(required=True)
    with pytest.raises(
        SubmissionError, match=r"required submission-time value synthetic\.App\.width0 is missing"
    ):
        resolve_values(app, {"width1": "2"})
    assert resolve_widths(app, resolve_values(app, {"width0": "1", "width1": "2"})) == {0: 1, 1: 2}


def test_unknown_duplicate_and_ambiguous_names() -> None:
    app = _app()
    with pytest.raises(SubmissionError, match="unknown submission-time value 'width9'"):
        match_values(app, {"width9": "1"})
    with pytest.raises(SubmissionError, match="is given twice"):
        match_values(app, {"width0": "1", "synthetic::App.width0": "2"})
    # the same name in two composites needs qualifying
    adl = synthetic_adl(SyntheticSpec(chains=2, length=3, regions=2, width_values=True))
    adl = adl.replace(
        b'compositeName="synthetic::App" index="1" kind="named" name="width1"',
        b'compositeName="other::Comp" index="1" kind="named" name="width0"',
    )
    app2 = parse_adl(adl)
    with pytest.raises(
        SubmissionError,
        match=r"'width0' is ambiguous: qualify it as one of other\.Comp\.width0, synthetic\.App\.width0",
    ):
        match_values(app2, {"width0": "1"})
    assert match_values(app2, {"other::Comp.width0": "3"}) == {1: "3"}


def test_width_overrides_win_over_values() -> None:
    app = _app()
    plan = plan_application(
        app,
        Fusion(legacy=True),
        job_name="j",
        submission_values={"width0": "3"},
        widths=[ParallelRegionWidth(alias="C*_1", width=1)],
    )
    assert plan.topology.widths == {0: 1, 1: 1}


def test_spl_literals() -> None:
    assert spl_literal('say "hi"', "named") == '"say \\"hi\\""'
    assert spl_literal("a, b", "namedList") == '["a","b"]'
