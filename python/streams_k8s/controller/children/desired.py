"""What a Job becomes in Kubernetes objects: every child, a pure function of the Job and its plan.

`desired_objects` lists every child with a deterministic name (`names`), labels, annotations and
the Job as controlling owner (`metadata`), in creation order:

| kind | name | content |
|---|---|---|
| ConfigMap | `<job>` | name table `operator_port_labels.properties` |
| Secret | `<job>-transport` | with TLSv1.2: `transport.cert`, `transport.key` (`transport_secret`) |
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

Given the children of an earlier plan of the same job (``earlier``: what runs, when an edit or a
width change is planned), a PE that plan rendered the same way (the same id, AADL and spec inputs,
under the same PE template) keeps its ConfigMap, Service and ProcessingElement as they were
rendered, labels included: an edit of a 1,000-PE job that changes 100 renders and checks 100, not
1,000. Nothing writes those children again (they are what runs), so only a deleted one is made
again from them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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
    pe_service_name,
)
from streams_k8s.api.host_pool import HostPool, HostPoolSpec
from streams_k8s.api.import_export import Export, ExportSpec, Import, ImportSpec
from streams_k8s.api.job import Job, JobSpec
from streams_k8s.api.parallel_region import ParallelRegion, ParallelRegionSpec
from streams_k8s.app.physical import PlannedPe
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
from streams_k8s.controller.children.pod import pod_template_hash
from streams_k8s.controller.children.processing_elements import PeTemplate, processing_element, spec_inputs
from streams_k8s.controller.children.services import pe_service
from streams_k8s.controller.children.transport_secret import transport_secret
from streams_k8s.controller.kinds import (
    CONSISTENT_REGION_OPERATORS,
    CONSISTENT_REGIONS,
    EXPORTS,
    HOSTPOOLS,
    IMPORTS,
    PARALLEL_REGIONS,
    PES,
)
from streams_k8s.controller.planning import JobFailure
from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.kinds import CONFIGMAPS, SECRETS, SERVICES
from streams_k8s.k8s.objects import ObjectKey


@dataclass(frozen=True, slots=True)
class Desired:
    """One child object to create (409 AlreadyExists means it is there)."""

    resource: Resource
    body: dict[str, Any]
    # the spec ``body`` renders, when rendered here (saves parsing it back: `jobs.target`)
    spec: WireModel | None = field(default=None, compare=False, repr=False)
    # a PE's: the pod template hash of its spec (`children.pod.pod_template_hash`), worked out with
    # the plan and taken along with the PE when a later plan takes its children (`jobs.target`)
    pod_template: str | None = field(default=None, compare=False, repr=False)
    key: ObjectKey = field(init=False)  # where the informer cache has it (looked up on every reconcile)

    def __post_init__(self) -> None:
        m = self.body["metadata"]
        object.__setattr__(self, "key", ObjectKey(str(m["namespace"]), str(m["name"])))

    @property
    def name(self) -> str:
        return self.key.name


@dataclass(frozen=True, slots=True)
class Rendered:
    """Children of the job rendered from ``plan`` under ``spec`` (`desired_objects`'s ``earlier``)."""

    spec: JobSpec
    plan: Plan
    children: Sequence[Desired]

    def reusable(
        self, job_name: str, plan: Plan, template: PeTemplate
    ) -> dict[int, tuple[Desired, Desired, Desired]]:
        """The ConfigMap, Service and ProcessingElement of each PE of ``plan`` (by id) that the
        job renders under ``template`` as these were rendered."""
        same_job = (self.plan.application_name, self.plan.application_scope) == (
            plan.application_name,
            plan.application_scope,
        )
        if not same_job or PeTemplate(self.spec, len(self.plan.pes)) != template:
            return {}
        before = {pe.id: pe for pe in self.plan.pes}
        alike = {
            pe.id: pe_service_name(job_name, pe.id)
            for pe in plan.pes
            if (old := before.get(pe.id)) is not None and _rendered_alike(old, pe)
        }
        names = set(alike.values())
        rendered = {(c.resource, c.name): c for c in self.children if c.name in names}
        return {
            pe_id: (rendered[(CONFIGMAPS, name)], rendered[(SERVICES, name)], rendered[(PES, name)])
            for pe_id, name in alike.items()
            if all((kind, name) in rendered for kind in (CONFIGMAPS, SERVICES, PES))
        }


def _rendered_alike(old: PlannedPe, new: PlannedPe) -> bool:
    """What a PE's ConfigMap, Service and ProcessingElement are rendered from is the same."""
    return spec_inputs(old) == spec_inputs(new) and old.aadl == new.aadl


def desired_objects(
    job: Job,
    job_uid: str,
    plan: Plan,
    *,
    generation: int,
    stamp: str,
    transport: tuple[str, str] | None = None,
    coordinator_mode: CoordinatorMode = CoordinatorMode.DEDICATED,
    earlier: Rendered | None = None,
) -> list[Desired]:
    """Every child of the job, in creation order (see the module docs); `JobFailure(Planned,
    InvalidSubscription)` for a subscription expression that does not parse. ``earlier``: children
    of an earlier plan of this job, those of its PEs rendered alike taken as they are."""
    try:
        plan.check_subscriptions()
    except InvalidSubscription as err:
        raise JobFailure("Planned", "InvalidSubscription", str(err)) from None
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
    template = PeTemplate(job.spec, len(plan.pes))
    kept = earlier.reusable(str(job.metadata.name), plan, template) if earlier is not None else {}
    pes = [kept.get(pe.id) or _pe_children(pe, metadata, template) for pe in plan.pes]
    secret = [Desired(SECRETS, transport_secret(metadata, transport))] if transport is not None else []
    return [
        Desired(CONFIGMAPS, name_table_config_map(plan, metadata, stamp)),
        *secret,
        *(config_map for config_map, _, _ in pes),
        *(service for _, service, _ in pes),
        *_regions_and_streams(plan, metadata),
        *_coordination(job, job_uid, plan, metadata, coordinator_mode),
        *(processing_element for _, _, processing_element in pes),
    ]


def _pe_children(
    pe: PlannedPe, metadata: ChildMetadata, template: PeTemplate
) -> tuple[Desired, Desired, Desired]:
    """The PE's ConfigMap, Service and ProcessingElement."""
    spec = template.spec(pe)
    return (
        Desired(CONFIGMAPS, pe_config_map(pe, metadata)),
        Desired(SERVICES, pe_service(pe, metadata)),
        Desired(PES, processing_element(spec, pe, metadata), spec, pod_template_hash(spec)),
    )


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
