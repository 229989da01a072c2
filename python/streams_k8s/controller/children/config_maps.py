"""The job's ConfigMaps: its name table (`<job>`) and each PE's AADL (`<job>-<peId>`)."""

from __future__ import annotations

from typing import Any

from streams_k8s.api.contract import (
    AADL_KEY,
    CONTENT_ID_ANNOTATION,
    NAME_TABLE_KEY,
    pe_service_name,
)
from streams_k8s.app.physical import PlannedPe
from streams_k8s.app.plan import Plan
from streams_k8s.controller.children.metadata import ChildMetadata, pe_labels


def name_table_config_map(plan: Plan, metadata: ChildMetadata, stamp: str) -> dict[str, Any]:
    """``<job>``: the name table dated ``stamp`` (the transport pair is in a Secret: `transport_secret`)."""
    data = {NAME_TABLE_KEY: plan.name_table_text(stamp)}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(metadata.job), "data": data}


def pe_config_map(pe: PlannedPe, metadata: ChildMetadata) -> dict[str, Any]:
    """``<job>-<peId>``: the PE's AADL, annotated with its content id."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(
            pe_service_name(metadata.job, pe.id), pe_labels(pe.id), {CONTENT_ID_ANNOTATION: pe.content_id}
        ),
        "data": {AADL_KEY: pe.aadl},
    }
