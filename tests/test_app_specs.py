"""The plan's records (`app.specs`) become the API models the controller writes, field for field,
and the placement `plan` prints without a model is the one the ProcessingElement states."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams_k8s.api.base import WireModel
from streams_k8s.api.consistent_region import ConsistentRegionSpec
from streams_k8s.api.host_pool import HostPoolSpec
from streams_k8s.api.import_export import (
    ExportedStream,
    ExportSpec,
    ImportedStreams,
    ImportSpec,
    NameBasedImport,
    PropertyBasedImport,
    StreamProperty,
)
from streams_k8s.api.parallel_region import ParallelRegionSpec
from streams_k8s.api.processing_element import Placement, PoolLocation
from streams_k8s.api.spec_values import ExportType, MembershipMode, Trigger
from streams_k8s.app import specs

# Each record and the model it becomes.
MODELS: dict[type, type[WireModel]] = {
    specs.PoolLocation: PoolLocation,
    specs.Placement: Placement,
    specs.HostPoolSpec: HostPoolSpec,
    specs.ParallelRegionSpec: ParallelRegionSpec,
    specs.ConsistentRegionSpec: ConsistentRegionSpec,
    specs.StreamProperty: StreamProperty,
    specs.ExportedStream: ExportedStream,
    specs.ExportSpec: ExportSpec,
    specs.NameBasedImport: NameBasedImport,
    specs.PropertyBasedImport: PropertyBasedImport,
    specs.ImportedStreams: ImportedStreams,
    specs.ImportSpec: ImportSpec,
}
# Fields of a model its record leaves to the model: requests made of a ConsistentRegion later.
NOT_PLANNED = {ConsistentRegionSpec: {"checkpoint_request", "hold_drains", "start_request"}}


def test_every_record_of_the_module_has_its_model() -> None:
    records = {
        v for v in vars(specs).values() if dataclasses.is_dataclass(v) and v.__module__ == specs.__name__
    }
    assert records == set(MODELS)


@pytest.mark.parametrize("record", list(MODELS), ids=lambda r: r.__name__)
def test_a_record_has_the_fields_of_its_model(record: type) -> None:
    """`from_record` reads attributes by field name: a field of one the other lacks would be lost."""
    model = MODELS[record]
    names = [f.name for f in dataclasses.fields(record)]
    assert set(names) == set(model.model_fields) - NOT_PLANNED.get(model, set())


def test_a_consistent_region_record_takes_the_models_defaults() -> None:
    region = specs.ConsistentRegionSpec(
        region_index=0,
        logical_index=None,
        num_start_operators=1,
        trigger=Trigger.OPERATOR_DRIVEN,
        period=None,
        pes_in_region=[0],
        operators_to_start_region_map={"A": True},
        operators_to_trigger_map={"A": False},
    )
    model = ConsistentRegionSpec.from_record(region)
    assert model == ConsistentRegionSpec(
        region_index=0,
        logical_index=None,
        num_start_operators=1,
        trigger=Trigger.OPERATOR_DRIVEN,
        pes_in_region=[0],
        operators_to_start_region_map={"A": True},
        operators_to_trigger_map={"A": False},
    )


def test_nested_records_become_nested_models() -> None:
    exported = specs.ExportSpec(
        job_id=3,
        pe_id=1,
        port_id=0,
        type=ExportType.BY_PROPERTIES,
        stream=specs.ExportedStream(
            name=None,
            properties=[specs.StreamProperty("kind", "rstring", ['"a"'])],
            export_oper_name="Out",
            allow_filter=False,
            congestion_policy=None,
        ),
    )
    assert specs.to_wire(exported) == ExportSpec.from_record(exported).to_wire()
    assert ExportSpec.from_record(exported).to_wire() == {
        "jobId": 3,
        "peId": 1,
        "portId": 0,
        "type": "ByProperties",
        "stream": {
            "properties": [{"name": "kind", "type": "rstring", "values": ['"a"']}],
            "exportOperName": "Out",
            "allowFilter": False,
        },
    }
    imported = specs.ImportSpec(
        job_id=3,
        pe_id=2,
        port_id=1,
        port_index=1,
        streams=specs.ImportedStreams(
            name_based_imports={"0": specs.NameBasedImport("other::App", "In", "S", None)},
            property_based_import=None,
            filter="x > 1",
        ),
    )
    assert specs.to_wire(imported) == ImportSpec.from_record(imported).to_wire()
    assert ImportSpec.from_record(imported).to_wire()["streams"] == {
        "nameBasedImports": {
            "0": {"applicationName": "other::App", "importOperName": "In", "streamName": "S"}
        },
        "filter": "x > 1",
    }


def test_a_record_the_model_refuses_is_refused_where_it_becomes_the_model() -> None:
    pool = specs.HostPoolSpec(
        name="", index=0, hosts=[], tags=[], membership_mode=MembershipMode.SHARED, size=0
    )
    with pytest.raises(ValueError, match="name"):
        HostPoolSpec.from_record(pool)


_TEXT = st.text(min_size=1, max_size=8)


@given(
    host=st.none() | _TEXT,
    co=st.lists(_TEXT, max_size=3),
    ex=st.lists(_TEXT, max_size=3),
    isolation=st.none() | _TEXT,
    labels=st.lists(_TEXT, max_size=3),
    location=st.none() | st.tuples(st.integers(0, 9), st.none() | st.integers(0, 9)),
)
def test_the_placement_plan_prints_is_the_one_the_pe_states(
    host: str | None,
    co: list[str],
    ex: list[str],
    isolation: str | None,
    labels: list[str],
    location: tuple[int, int | None] | None,
) -> None:
    placement = specs.Placement(
        host=host,
        co_locations=co,
        ex_locations=ex,
        isolation=isolation,
        isolation_labels=labels,
        host_pool_location=specs.PoolLocation(*location) if location else None,
    )
    wire = specs.to_wire(placement)
    assert wire == Placement.from_record(placement).to_wire()
    assert list(wire) == list(Placement.from_record(placement).to_wire())  # the same key order
