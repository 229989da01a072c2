"""Damaged ADLs never crash the pipeline: every failure is one of the pipeline's own errors."""

from __future__ import annotations

import contextlib
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams_k8s.api.job import Fusion
from streams_k8s.app.adl import AdlError, parse_adl
from streams_k8s.app.bundle import BundleError, read_bundle
from streams_k8s.app.fusion import FusionConstraintError
from streams_k8s.app.plan import plan_application
from streams_k8s.app.submission import SubmissionError
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl, write_sab
from streams_k8s.app.topology import TopologyError

BASE = synthetic_adl(
    SyntheticSpec(chains=2, length=3, regions=1, width=2, pools=1, colocate_pairs=True)
).decode()
NUMBERS = [m.span(1) for m in re.finditer(r'="(\d+)"', BASE)]
EXPECTED = (AdlError, TopologyError, SubmissionError, FusionConstraintError)


@settings(max_examples=150, deadline=None)
@given(
    edits=st.lists(
        st.tuples(st.integers(0, len(NUMBERS) - 1), st.sampled_from(["0", "1", "7", "99", "-1", "x", ""])),
        min_size=1,
        max_size=4,
    )
)
def test_corrupted_indices_fail_cleanly(edits: list[tuple[int, str]]) -> None:
    text = BASE
    for which, value in sorted(edits, reverse=True):
        start, end = NUMBERS[which]
        text = text[:start] + value + text[end:]
    try:
        app = parse_adl(text.encode())
        plan_application(app, Fusion(manual=2), job_name="j")
    except EXPECTED:
        pass


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(0, len(BASE)))
def test_truncated_adl_fails_cleanly(cut: int) -> None:
    with contextlib.suppress(EXPECTED):
        plan_application(parse_adl(BASE[:cut].encode()), Fusion(legacy=True), job_name="j")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_bundles_fail_cleanly(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    folder = tmp_path_factory.mktemp("sab")
    path = write_sab(folder / "app.sab", SyntheticSpec(chains=1, length=2))
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    path.write_bytes(bytes(raw[: data.draw(st.integers(1, len(raw)))]))
    try:
        plan_application(parse_adl(read_bundle(path).adl), Fusion(legacy=True), job_name="j")
    except (BundleError, *EXPECTED):
        pass
    assert sorted(p.name for p in folder.iterdir()) == ["app.sab"]
