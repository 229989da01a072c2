"""What a Job becomes in Kubernetes objects: every child, a pure function of the Job and its plan.

`desired_objects` lists every child with a deterministic name (`names`), labels, annotations and
the Job as controlling owner (`metadata`), in creation order:

| kind | name | content |
|---|---|---|
| ConfigMap | `<job>` | name table `operator_port_labels.properties` (+ transport cert/key with TLSv1.2) |
| ConfigMap | `<job>-<peId>` | `aadl.xml`, annotation `streams.ibm.com/contentId` |
| Service | `<job>-<peId>` | headless, selecting the PE's pods by job and PE id (`services`): |
| | | `sys-<i>` 10000+i/TCP, `sys-metrics`, `sys-notifications`, `sys-consistentregion` |
| HostPool | `<job>-<poolIndex>` | one per ADL host pool |
| ParallelRegion | `<job>-<regionIndex>` | alias and width |
| Export | `<job>-<peId>-<portId>` | per PE output port with an exported stream (by name or properties) |
| Import | `<job>-<peId>-<portId>` | per PE input port with imported streams (names, subscription, filter) |
| ConsistentRegionOperator | `<job>-consistent-region-operator` | when the job has consistent regions |
| ConsistentRegion | `<job>-cr<regionIndex>` | region settings and its PEs |
| ProcessingElement | `<job>-<peId>` | plan + the job's PE template (`processing_elements`) |

PEs come last, so every prerequisite of a PE's pod already exists when the PE appears. The
ConsistentRegionOperator records the coordinator mode; its Deployment, API Service and
NetworkPolicy are not made here: `controller.coordinators` renders them from the CRO.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from streams_k8s.api.base import API_VERSION, WireModel
from streams_k8s.api.consistent_region import (
    ConsistentRegion,
    ConsistentRegionOperator,
    ConsistentRegionOperatorSpec,
    ConsistentRegionSpec,
    CoordinatorMode,
)
from streams_k8s.api.contract import (
    APPLICATION_NAME_ANNOTATION,
    APPLICATION_SCOPE_ANNOTATION,
    CR_LABEL,
    coordinator_name,
)
from streams_k8s.api.host_pool import HostPool, HostPoolSpec
from streams_k8s.api.import_export import Export, ExportSpec, Import, ImportSpec
from streams_k8s.api.job import Job
from streams_k8s.api.parallel_region import ParallelRegion, ParallelRegionSpec
from streams_k8s.app.plan import Plan
from streams_k8s.app.plan_streams import InvalidSubscription
from streams_k8s.controller.children.config_maps import name_table_config_map, pe_config_map
from streams_k8s.controller.children.metadata import ChildMetadata
from streams_k8s.controller.children.names import (
    consistent_region_name,
    host_pool_name,
    parallel_region_name,
    pe_port_name,
)
from streams_k8s.controller.children.processing_elements import PeTemplate, processing_element
from streams_k8s.controller.children.services import pe_service
from streams_k8s.controller.kinds import (
    CONSISTENT_REGION_OPERATORS,
    CONSISTENT_REGIONS,
    EXPORTS,
    HOSTPOOLS,
    IMPORTS,
    PARALLEL_REGIONS,
    PES,
)
from streams_k8s.controller.planning import SubmissionFailure
from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.kinds import CONFIGMAPS, SERVICES
from streams_k8s.k8s.objects import ObjectKey


@dataclass(frozen=True, slots=True)
class Desired:
    """One child object to create (409 AlreadyExists means it is there)."""

    resource: Resource
    body: dict[str, Any]
    # the spec ``body`` renders, when rendered here (saves parsing it back: `jobs.target`)
    spec: WireModel | None = field(default=None, compare=False, repr=False)
    key: ObjectKey = field(init=False)  # where the informer cache has it (looked up on every reconcile)

    def __post_init__(self) -> None:
        m = self.body["metadata"]
        object.__setattr__(self, "key", ObjectKey(str(m["namespace"]), str(m["name"])))

    @property
    def name(self) -> str:
        return self.key.name


def desired_objects(
    job: Job,
    job_uid: str,
    plan: Plan,
    *,
    generation: int,
    stamp: str,
    transport: tuple[str, str] | None = None,
    coordinator_mode: CoordinatorMode = CoordinatorMode.DEDICATED,
) -> list[Desired]:
    """Every child of the job, in creation order (see the module docs); `SubmissionFailure(Planned,
    InvalidSubscription)` for a subscription expression that does not parse."""
    try:
        plan.check_subscriptions()
    except InvalidSubscription as err:
        raise SubmissionFailure("Planned", "InvalidSubscription", str(err)) from None
    metadata = ChildMetadata(
        job=str(job.metadata.name),
        namespace=job.metadata.namespace,
        generation=generation,
        annotations={
            APPLICATION_NAME_ANNOTATION: plan.application_name,
            APPLICATION_SCOPE_ANNOTATION: plan.application_scope,
        },
        owner=job.as_owner(job_uid),
    )
    return [
        Desired(CONFIGMAPS, name_table_config_map(plan, metadata, stamp, transport)),
        *(Desired(CONFIGMAPS, pe_config_map(pe, metadata)) for pe in plan.pes),
        *(Desired(SERVICES, pe_service(pe, metadata)) for pe in plan.pes),
        *_regions_and_streams(plan, metadata),
        *_coordination(job, job_uid, plan, metadata, coordinator_mode),
        *_processing_elements(job, plan, metadata),
    ]


def _processing_elements(job: Job, plan: Plan, metadata: ChildMetadata) -> Iterator[Desired]:
    template = PeTemplate(job, len(plan.pes))
    for pe in plan.pes:
        spec = template.spec(pe)
        yield Desired(PES, processing_element(spec, pe, metadata), spec)


def _ours(resource: Resource, kind: str, metadata: dict[str, Any], spec: WireModel) -> Desired:
    """A child of one of our kinds."""
    body = {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec.to_wire()}
    return Desired(resource, body, spec)


def _regions_and_streams(plan: Plan, metadata: ChildMetadata) -> Iterator[Desired]:
    """Host pools, parallel regions, then the Exports and the Imports of the PEs' ports."""
    job = metadata.job
    for pool in plan.host_pools:
        name = host_pool_name(job, pool.index)
        yield _ours(HOSTPOOLS, HostPool.kind_name, metadata(name), HostPoolSpec.from_record(pool))
    for region in plan.parallel_regions:
        name = parallel_region_name(job, region.index)
        spec = ParallelRegionSpec.from_record(region)
        yield _ours(PARALLEL_REGIONS, ParallelRegion.kind_name, metadata(name), spec)
    for pe in plan.pes:
        for exported in pe.exports:
            name = pe_port_name(job, pe.id, exported.port_id)
            yield _ours(EXPORTS, Export.kind_name, metadata(name), ExportSpec.from_record(exported))
    for pe in plan.pes:
        for imported in pe.imports:
            name = pe_port_name(job, pe.id, imported.port_id)
            yield _ours(IMPORTS, Import.kind_name, metadata(name), ImportSpec.from_record(imported))


def _coordination(
    job: Job, job_uid: str, plan: Plan, metadata: ChildMetadata, mode: CoordinatorMode
) -> Iterator[Desired]:
    """The ConsistentRegionOperator (when the job has consistent regions), then its regions."""
    if not plan.consistent_regions:
        return
    operator = ConsistentRegionOperatorSpec(
        job_name=metadata.job,
        job_uid=job_uid,
        num_regions=len(plan.consistent_regions),
        mode=mode,
        image_pull_policy=job.spec.image_pull_policy,
        image_pull_secret=job.spec.image_pull_secret,
    )
    name = coordinator_name(metadata.job)
    yield _ours(CONSISTENT_REGION_OPERATORS, ConsistentRegionOperator.kind_name, metadata(name), operator)
    for region in plan.consistent_regions:
        name = consistent_region_name(metadata.job, region.region_index)
        spec = ConsistentRegionSpec.from_record(region)
        yield _ours(CONSISTENT_REGIONS, ConsistentRegion.kind_name, metadata(name, {CR_LABEL: name}), spec)
