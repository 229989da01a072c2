"""Synthetic applications: valid v4200 ADLs (XSD) and SABs the bundle reader accepts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from repo_paths import shared_testdata
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.bundle import read_bundle
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl, write_sab


@pytest.fixture(scope="module")
def schema() -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(shared_testdata("schema", "SAM", "v4200", "adlModel.xsd"))))


@settings(max_examples=25, deadline=None)
@given(
    spec=st.builds(
        SyntheticSpec,
        chains=st.integers(1, 4),
        length=st.integers(1, 5),
        fan_in=st.booleans(),
        regions=st.integers(0, 2),
        pools=st.integers(0, 2),
        colocate_pairs=st.booleans(),
        exlocate_chain_ends=st.booleans(),
        isolate_heads=st.integers(0, 1),
        host_exlocate_heads=st.booleans(),
        host_colocate_tails=st.booleans(),
        consistent_chains=st.integers(0, 2),
        consistent_period=st.sampled_from([0.0, 2.5]),
        replicate_pools=st.booleans(),
        width_values=st.booleans(),
        required_values=st.booleans(),
    )
)
def test_generated_adl_is_schema_valid_and_parses(spec: SyntheticSpec, schema: etree.XMLSchema) -> None:
    adl = synthetic_adl(spec)
    assert schema.validate(etree.fromstring(adl)), schema.error_log.last_error
    app = parse_adl(adl)
    assert len(app.operators) == spec.operators
    assert len(app.parallel_regions) == min(spec.regions, spec.chains)
    assert len(app.consistent_regions) == min(spec.consistent_chains, spec.chains)
    for region in app.consistent_regions:
        periodic = (
            ("periodic", spec.consistent_period) if spec.consistent_period else ("operatorDriven", None)
        )
        assert (region.trigger, region.period) == periodic


def test_written_sab_round_trips(tmp_path: Path) -> None:
    spec = SyntheticSpec(chains=2, length=3, pools=1)
    bundle = read_bundle(write_sab(tmp_path / "app.sab", spec))
    assert bundle.adl == synthetic_adl(spec)
    assert bundle.build_id == "synthetic"


def test_host_constraints_place_chain_heads_apart_and_tails_together() -> None:
    app = parse_adl(
        synthetic_adl(SyntheticSpec(chains=2, length=2, host_exlocate_heads=True, host_colocate_tails=True))
    )
    placements = {op.name: op.placement for op in app.operators.values()}
    assert [placements[n].exlocations for n in ("C0_0", "C1_0")] == [("heads",), ("heads",)]
    assert [placements[n].colocations for n in ("C0_1", "C1_1")] == [("tails",), ("tails",)]
    assert placements["Sink"].exlocations == placements["Sink"].colocations == ()
