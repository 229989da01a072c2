"""A PE's ProcessingElement `<job>-<peId>`: its plan, under the job's PE template."""

from __future__ import annotations

from typing import Any

from streams_k8s.api.base import API_VERSION
from streams_k8s.api.contract import CR_LABEL, pe_service_name
from streams_k8s.api.job import JobSpec, JobState
from streams_k8s.api.processing_element import Placement, ProcessingElement, ProcessingElementSpec
from streams_k8s.app.physical import PlannedPe
from streams_k8s.controller.children.metadata import ChildMetadata, pe_labels
from streams_k8s.controller.children.resources import divide_resources


def processing_element(spec: ProcessingElementSpec, pe: PlannedPe, metadata: ChildMetadata) -> dict[str, Any]:
    """PE ``pe`` with its ``spec`` (`PeTemplate.spec`), labelled as in a consistent region or not."""
    in_region = {CR_LABEL: "true" if pe.regions else "false"}
    return {
        "apiVersion": API_VERSION,
        "kind": ProcessingElement.kind_name,
        "metadata": metadata(pe_service_name(metadata.job, pe.id), {**pe_labels(pe.id), **in_region}),
        "spec": spec.to_wire(),
    }


class PeTemplate:
    """A job spec's PE template as each PE of a plan of ``pes`` PEs gets it (its unset pull policy
    and secret the job's, an unset restartFailedPod the PE's restartable flag, job-wide resources
    divided among the PEs): worked out once per plan, not once per PE."""

    def __init__(self, spec: JobSpec, pes: int) -> None:
        template = spec.processing_element
        inherited = template.model_dump(exclude={"resources"})
        inherited["image_pull_policy"] = template.image_pull_policy or spec.image_pull_policy
        inherited["image_pull_secret"] = template.image_pull_secret or spec.image_pull_secret
        resources = template.resources if spec.resources is None else divide_resources(spec.resources, pes)
        inherited.update(
            resources=resources,
            sab_name=spec.bundle.name,
            suspended=spec.state is JobState.SUSPENDED,
            job_restart_nonce=spec.restart_nonce,
        )
        self._inherited = inherited

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PeTemplate) and self._inherited == other._inherited

    def spec(self, pe: PlannedPe) -> ProcessingElementSpec:
        """The spec of the planned PE ``pe``."""
        inherited = self._inherited
        if inherited["restart_failed_pod"] is None:
            inherited = {**inherited, "restart_failed_pod": pe.restartable}
        return ProcessingElementSpec(
            **inherited,
            id=pe.id,
            content_id=pe.content_id,
            operators=pe.operators,
            regions=pe.regions,
            placement=Placement.from_record(pe.placement),
            input_ports=len(pe.inputs),
            restartable=pe.restartable,
        )


def spec_inputs(pe: PlannedPe) -> tuple[object, ...]:
    """What `PeTemplate.spec` reads of a planned PE: equal inputs under equal templates are equal
    specs, without building either."""
    return (pe.id, pe.content_id, pe.operators, pe.regions, pe.placement, len(pe.inputs), pe.restartable)
