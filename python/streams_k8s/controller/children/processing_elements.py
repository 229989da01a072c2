"""A PE's ProcessingElement `<job>-<peId>`: its plan, under the job's PE template."""

from __future__ import annotations

from typing import Any

from streams_k8s.api.base import API_VERSION
from streams_k8s.api.contract import CR_LABEL, pe_service_name
from streams_k8s.api.job import Job, JobState
from streams_k8s.api.processing_element import Placement, ProcessingElement, ProcessingElementSpec
from streams_k8s.app.physical import PlannedPe
from streams_k8s.controller.children.metadata import ChildMetadata, pe_labels
from streams_k8s.controller.children.resources import divide_resources


def processing_element(job: Job, pe: PlannedPe, pes: int, metadata: ChildMetadata) -> dict[str, Any]:
    """PE ``pe`` of a job of ``pes`` PEs, labelled as in a consistent region or not."""
    in_region = {CR_LABEL: "true" if pe.regions else "false"}
    return {
        "apiVersion": API_VERSION,
        "kind": ProcessingElement.kind_name,
        "metadata": metadata(pe_service_name(metadata.job, pe.id), {**pe_labels(pe.id), **in_region}),
        "spec": pe_spec(job, pe, pes).to_wire(),
    }


def pe_spec(job: Job, pe: PlannedPe, pes: int) -> ProcessingElementSpec:
    """The job's PE template (its unset pull policy and secret the job's, an unset
    restartFailedPod the PE's restartable flag, job-wide resources divided among the ``pes`` PEs)
    and the planned PE."""
    template = job.spec.processing_element
    inherited = template.model_dump(exclude={"resources"})
    inherited["image_pull_policy"] = template.image_pull_policy or job.spec.image_pull_policy
    inherited["image_pull_secret"] = template.image_pull_secret or job.spec.image_pull_secret
    if template.restart_failed_pod is None:
        inherited["restart_failed_pod"] = pe.restartable
    resources = (
        divide_resources(job.spec.resources, pes) if job.spec.resources is not None else template.resources
    )
    return ProcessingElementSpec(
        **inherited,
        resources=resources,
        id=pe.id,
        content_id=pe.content_id,
        sab_name=job.spec.bundle.name,
        operators=pe.operators,
        regions=pe.regions,
        placement=Placement.from_record(pe.placement),
        input_ports=len(pe.inputs),
        restartable=pe.restartable,
        suspended=job.spec.state is JobState.SUSPENDED,
        job_restart_nonce=job.spec.restart_nonce,
    )
