"""The native AADL renderer writes, byte for byte, what the lxml writer (``aadl_oracle``) writes.

Every PE of every real bundle and of generated applications (parallel regions at several widths,
host pools replicated per channel, consistent regions, imports and exports, names and values with
characters XML escapes) is rendered both ways; the plan's content ids are the sha256 of the
oracle's bytes, so they are unchanged too.
"""

from __future__ import annotations

import hashlib
import math

import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from aadl_oracle import pe_aadl
from repo_paths import real_adl, shared_testdata
from streams_k8s.api.job import Fusion, ParallelRegionWidth, ThreadingModel
from streams_k8s.app.aadl import AadlError
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.model import Application
from streams_k8s.app.physical import PortIndex
from streams_k8s.app.plan import PLANNING_ERRORS, Plan, plan_application, refuse_with_widths
from streams_k8s.app.submission import spl_literal
from streams_k8s.app.synthetic import Exported, Imported, SyntheticSpec, synthetic_adl
from streams_k8s.cli import main

REAL = [
    "apps.consistent.ConsistentRegion.sab",
    "apps.hostplacement.HostPlacement_nodename.sab",
    "apps.hostpools.HostPools.sab",
    "apps.parallel.Parallel.adl",
    "apps.parallel.Parallel.sab",
    "apps.pubsub.Exporter.sab",
    "apps.pubsub.Importer.sab",
    "spl.runtime.udpNestedPEBoundary.adl",
]
FUSIONS = [Fusion(manual=1), Fusion(manual=3), Fusion(legacy=True), Fusion()]
MARKUP = "a&b <c> \"d\" 'e'\tf\ng\rh é ✓ 😀 ]]>"

GENERATED = {
    "regions, replicated pools, consistent regions": SyntheticSpec(
        chains=6,
        length=5,
        regions=3,
        width=3,
        pools=2,
        replicate_pools=True,
        consistent_chains=2,
        colocate_pairs=True,
    ),
    "isolation and exlocation": SyntheticSpec(
        chains=4, length=5, regions=1, width=4, isolate_heads=2, exlocate_chain_ends=True
    ),
    "imports, exports and names to escape": SyntheticSpec(
        name='n&s::A<"b">',
        chains=3,
        length=4,
        regions=1,
        width_values=True,
        exports=(
            Exported(stream="s&<>\"'"),
            Exported(properties=(("p&<", "rstring", ('"a&b<c>"', "x\ty")),), allow_filter=True),
        ),
        imports=(
            Imported(application="a&b::<A>", stream='s"<'),
            Imported(subscription='x == "y&z<"', scope="sc&"),
        ),
    ),
}


def _assert_oracle_bytes(plan: Plan) -> None:
    ports = PortIndex.of(plan.pes)
    for pe in plan.pes:
        want = pe_aadl(plan.topology, pe, ports, job_name=plan.job_name, job_id=plan.job_id)
        assert pe.aadl == want, f"PE {pe.id}"
        assert pe.content_id == hashlib.sha256(want.encode()).hexdigest()


def _widths(app: Application, width: int) -> list[ParallelRegionWidth]:
    return [ParallelRegionWidth(alias="*", width=width)] if app.parallel_regions else []


@pytest.mark.parametrize("name", REAL)
@pytest.mark.parametrize("fusion", FUSIONS, ids=lambda f: f.model_dump_json(exclude_none=True))
def test_every_pe_of_the_real_bundles(name: str, fusion: Fusion) -> None:
    app = parse_adl(real_adl(name))
    for width in (None, 3):
        widths = _widths(app, width) if width else []
        _assert_oracle_bytes(plan_application(app, fusion, job_name="job", job_id=7, widths=widths))


@pytest.mark.parametrize("spec", GENERATED.values(), ids=GENERATED.keys())
@pytest.mark.parametrize("fusion", FUSIONS, ids=lambda f: f.model_dump_json(exclude_none=True))
def test_every_pe_of_generated_apps(spec: SyntheticSpec, fusion: Fusion) -> None:
    app = parse_adl(synthetic_adl(spec))
    for widths in ([], _widths(app, 3), _widths(app, 1)):
        plan = plan_application(app, fusion, job_name='j&"<>', job_id=12, widths=widths)
        _assert_oracle_bytes(plan)


def test_dedicated_threading_and_resized_plans() -> None:
    app = parse_adl(synthetic_adl(GENERATED["regions, replicated pools, consistent regions"]))
    plan = plan_application(app, Fusion(manual=4), job_name="j", threading=ThreadingModel(dedicated=True))
    _assert_oracle_bytes(plan)
    for width in (5, 1, 2):
        # re-planned PEs are rendered, the others reused: both must be what a full render gives
        plan, _ = refuse_with_widths(plan, _widths(app, width))
        _assert_oracle_bytes(plan)


def test_submission_time_values_with_markup() -> None:
    app = parse_adl(real_adl("apps.pubsub.Exporter.sab"))
    given = {"portId": MARKUP, "delayInTuple": "a,\\b"}
    plan = plan_application(app, Fusion(manual=2), job_name="x", submission_values=given)
    assert any("a&amp;b &lt;c&gt; \\&quot;d\\&quot;" in pe.aadl for pe in plan.pes)
    _assert_oracle_bytes(plan)


def _lxml_refuses(app: Application, value: str) -> bool:
    """Whether the oracle refuses to write ``value`` as the given value of ``portId``."""
    plan = plan_application(app, Fusion(manual=1), job_name="x", submission_values={"portId": "0"})
    (port_id,) = [v.index for v in app.submission_time_values if v.name == "portId"]
    plan.topology.given_values[port_id] = value
    ports = PortIndex.of(plan.pes)
    try:
        for pe in plan.pes:
            pe_aadl(plan.topology, pe, ports, job_name="x", job_id=0)
    except ValueError as error:
        return "XML compatible" in str(error)
    return False


@settings(max_examples=60, deadline=None)
@given(value=st.text(max_size=12))
@example(value="\x00")
@example(value="\x1f\ufffe")
@example(value="\uffff")
@example(value="\x7f\x85\ufdd0\U0010ffff")
def test_any_submission_time_value_is_written_or_refused_as_lxml_does(value: str) -> None:
    app = parse_adl(real_adl("apps.pubsub.Exporter.sab"))
    given = {"portId": value}
    if _lxml_refuses(app, value):  # C0 controls but tab, newline, CR; U+FFFE; U+FFFF
        with pytest.raises(AadlError) as raised:
            plan_application(app, Fusion(manual=1), job_name="x", submission_values=given)
        assert raised.value.value == spl_literal(value, "named")
    else:
        _assert_oracle_bytes(plan_application(app, Fusion(manual=1), job_name="x", submission_values=given))


def test_a_value_xml_cannot_hold_is_a_planning_error() -> None:
    app = parse_adl(real_adl("apps.pubsub.Exporter.sab"))
    with pytest.raises(PLANNING_ERRORS) as raised:
        plan_application(app, Fusion(manual=1), job_name="x", submission_values={"portId": "a\x01b"})
    assert isinstance(raised.value, AadlError)
    assert raised.value.value == '"a\x01b"'
    assert "XML 1.0" in str(raised.value)


def test_the_cli_refuses_such_a_value_in_one_line() -> None:
    sab = shared_testdata("apps", "apps.pubsub.Exporter.sab")
    result = CliRunner().invoke(main, ["plan", str(sab), "--submission-time", "portId=a\x01b"])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1, result.output
    assert "U+0001 is no XML 1.0 character" in result.output


def _with_checkpointing(period: str) -> Application:
    """A generated app whose first Functor checkpoints with ``period`` as the ADL writes it."""
    adl = synthetic_adl(SyntheticSpec(chains=1, length=2, consistent_chains=1))
    marker = b'<runtimeConstants/><sharedObject class="C0_0">'
    assert marker in adl
    checkpointing = f'<checkpointing policy="periodic" period="{period}"/>'.encode()
    return parse_adl(adl.replace(marker, checkpointing + marker, 1))


@settings(max_examples=60, deadline=None)
@given(period=st.floats(allow_nan=False))
@example(period=1.0)
@example(period=1e16)
@example(period=1e-5)
@example(period=0.0001)
@example(period=123456789012345.6)
@example(period=562949953421312.2)  # halfway between two shortest strings
@example(period=-0.0)
@example(period=math.inf)
@example(period=5e-324)
def test_checkpointing_periods_print_as_python_floats(period: float) -> None:
    app = _with_checkpointing(repr(period))
    plan = plan_application(app, Fusion(manual=1), job_name="x")
    assert any(f'period="{period!r}"' in pe.aadl for pe in plan.pes)
    _assert_oracle_bytes(plan)
