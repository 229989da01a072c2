"""What a plan states of a job's objects, as plain records (no pydantic: `plan` loads no model).

Each record has the field names of the API model it becomes (`streams_k8s.api`), and becomes it
where the controller writes the object (`WireModel.from_record`, which validates it). Their enums,
limits and defaults are the models' own (`api.spec_values`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from typing import Any

from streams_k8s.api.spec_values import (
    DRAIN_TIMEOUT,
    MAX_CONSECUTIVE_RESET_ATTEMPTS,
    RESET_TIMEOUT,
    ExportType,
    MembershipMode,
    Trigger,
)


@dataclass(frozen=True, slots=True)
class PoolLocation:
    pool_index: int
    inpool_index: int | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    """Host constraints of a PE (a ProcessingElement's `spec.placement`)."""

    host: str | None = None
    co_locations: list[str] = field(default_factory=list)
    ex_locations: list[str] = field(default_factory=list)
    isolation: str | None = None  # the operator of this PE that asked for hostIsolation
    isolation_labels: list[str] = field(default_factory=list)  # host-isolated operators of other PEs
    host_pool_location: PoolLocation | None = None


@dataclass(frozen=True, slots=True)
class HostPoolSpec:
    name: str
    index: int
    hosts: list[str]
    tags: list[str]
    membership_mode: MembershipMode
    size: int | None


@dataclass(frozen=True, slots=True)
class ParallelRegionSpec:
    index: int
    alias: str
    width: int


@dataclass(frozen=True, slots=True)
class ConsistentRegionSpec:
    """A region's static settings (the requests a ConsistentRegion also takes are not planned)."""

    region_index: int
    logical_index: int | None
    num_start_operators: int
    trigger: Trigger
    period: float | None
    pes_in_region: list[int]
    operators_to_start_region_map: dict[str, bool]
    operators_to_trigger_map: dict[str, bool]
    drain_timeout: float = DRAIN_TIMEOUT
    reset_timeout: float = RESET_TIMEOUT
    max_consecutive_reset_attempts: int = MAX_CONSECUTIVE_RESET_ATTEMPTS


@dataclass(frozen=True, slots=True)
class StreamProperty:
    name: str
    type: str
    values: list[str]


@dataclass(frozen=True, slots=True)
class ExportedStream:
    name: str | None
    properties: list[StreamProperty] | None
    export_oper_name: str
    allow_filter: bool
    congestion_policy: str | None


@dataclass(frozen=True, slots=True)
class ExportSpec:
    job_id: int
    pe_id: int
    port_id: int
    type: ExportType
    stream: ExportedStream


@dataclass(frozen=True, slots=True)
class NameBasedImport:
    application_name: str
    import_oper_name: str
    stream_name: str
    application_scope: str | None


@dataclass(frozen=True, slots=True)
class PropertyBasedImport:
    subscription: str
    import_oper_name: str
    index: int
    application_scope: str | None


@dataclass(frozen=True, slots=True)
class ImportedStreams:
    name_based_imports: dict[str, NameBasedImport]
    property_based_import: PropertyBasedImport | None
    filter: str | None


@dataclass(frozen=True, slots=True)
class ImportSpec:
    job_id: int
    pe_id: int
    port_id: int
    port_index: int
    streams: ImportedStreams


def to_wire(record: Any) -> Any:
    """A record as the model it becomes states it (`WireModel.to_wire`: camelCase, unset fields
    left out), for `plan`'s output without a model (`tests/test_app_specs.py` holds them equal)."""
    if is_dataclass(record):
        return {
            _camel(f.name): to_wire(value)
            for f in fields(record)
            if (value := getattr(record, f.name)) is not None
        }
    if isinstance(record, list):
        return [to_wire(v) for v in record]
    if isinstance(record, dict):
        return {k: to_wire(v) for k, v in record.items()}
    return record.value if isinstance(record, Enum) else record


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)
