"""Submission: what a Job becomes in Kubernetes objects, as a pure function of the Job and its plan.

`validate_job` turns the user's manifest into a `Job` or one clear `SubmissionFailure` naming the
field; `plan_job` runs the application pipeline (ADL → topology → fusion → PEs); `check_placement`
refuses host constraints the cluster cannot satisfy; `desired_objects` lists every child with a
deterministic name, labels, annotations and the Job as controlling owner, in creation order:

| kind | name | content |
|---|---|---|
| ConfigMap | `<job>` | name table `operator_port_labels.properties` (+ transport cert/key with TLSv1.2) |
| ConfigMap | `<job>-<peId>` | `aadl.xml`, annotation `streams.ibm.com/contentId` |
| Service | `<job>-<peId>` | headless, selecting the PE's pods by job and PE id (`pe_service_selector`): |
| | | `sys-<i>` 10000+i/TCP, `sys-metrics`, `sys-notifications`, `sys-consistentregion` |
| HostPool | `<job>-<poolIndex>` | one per ADL host pool |
| ParallelRegion | `<job>-<regionIndex>` | alias and width |
| Export | `<job>-<peId>-<portId>` | per PE output port with an exported stream (by name or properties) |
| Import | `<job>-<peId>-<portId>` | per PE input port with imported streams (names, subscription, filter) |
| ConsistentRegionOperator | `<job>-consistent-region-operator` | when the job has consistent regions |
| ConsistentRegion | `<job>-cr<regionIndex>` | region settings and its PEs |
| ProcessingElement | `<job>-<peId>` | plan + the job's PE template |

PEs come last, so every prerequisite of a PE's pod already exists when the PE appears. The
ConsistentRegionOperator records the coordinator mode; its Deployment, API Service and
NetworkPolicy are not made here: `coordinators` renders them from the CRO.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from streams_k8s.api.consistent_region import (
    ConsistentRegion,
    ConsistentRegionOperator,
    ConsistentRegionOperatorSpec,
    CoordinatorMode,
)
from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    APPLICATION_NAME_ANNOTATION,
    APPLICATION_SCOPE_ANNOTATION,
    CONSISTENT_REGION_PORT,
    CR_LABEL,
    JOB_LABEL,
    METRICS_PORT,
    NOTIFICATIONS_PORT,
    PE_LABEL,
    PE_PORT_BASE,
    SVC_LABEL,
    SVC_PE,
    USER_PORT_PREFIX,
    coordinator_name,
    pe_service_name,
)
from streams_k8s.api.host_pool import HostPool
from streams_k8s.api.import_export import (
    Export,
    Import,
)
from streams_k8s.api.job import Job, job_name_problem
from streams_k8s.api.parallel_region import ParallelRegion
from streams_k8s.api.processing_element import (
    ProcessingElement,
    ProcessingElementSpec,
    ProcessingElementTemplate,
    TransportSecurityType,
)
from streams_k8s.app.adl import AdlError, parse_adl
from streams_k8s.app.bundle import BundleError, read_bundle
from streams_k8s.app.fusion import FusionConstraintError
from streams_k8s.app.model import Application
from streams_k8s.app.physical import PlannedPe
from streams_k8s.app.plan import Plan, plan_application
from streams_k8s.app.plan_streams import InvalidSubscription
from streams_k8s.app.submission import SubmissionError
from streams_k8s.app.topology import TopologyError
from streams_k8s.controller.children.config_maps import name_table_config_map, pe_config_map
from streams_k8s.controller.children.metadata import ChildMetadata, pe_labels
from streams_k8s.controller.kinds import (
    CONSISTENT_REGION_OPERATORS,
    CONSISTENT_REGIONS,
    EXPORTS,
    HOSTPOOLS,
    IMPORTS,
    PARALLEL_REGIONS,
    PES,
)
from streams_k8s.controller.placement import NodeInfo, PlacedPe, PlacementError, PlacementPlan, plan_placement
from streams_k8s.controller.resources import divide_resources
from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.kinds import CONFIGMAPS, SERVICES
from streams_k8s.k8s.objects import ObjectKey


@dataclass(frozen=True, slots=True)
class SubmissionFailure(Exception):
    """Why a submission cannot go on: a condition (type, reason) and a message naming what to fix.

    `retryable`: the cause may go away without a change to the Job (see `job_controller`).
    """

    condition: str
    reason: str
    message: str
    retryable: bool = False

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class Desired:
    """One child object to create (409 AlreadyExists means it is there)."""

    resource: Resource
    body: dict[str, Any]
    key: ObjectKey = field(init=False)  # where the informer cache has it (looked up on every reconcile)

    def __post_init__(self) -> None:
        m = self.body["metadata"]
        object.__setattr__(self, "key", ObjectKey(str(m["namespace"]), str(m["name"])))

    @property
    def name(self) -> str:
        return self.key.name


def validate_job(obj: dict[str, Any]) -> Job:
    """The Job model of a manifest, or `SubmissionFailure(Valid, ...)` naming the first bad field."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    if (problem := job_name_problem(name)) is not None:  # the CRD refuses it too, once re-applied
        raise SubmissionFailure("Valid", "InvalidName", f"metadata.name: {problem}")
    try:
        job = Job.from_wire(obj)
    except ValidationError as err:
        first = err.errors()[0]
        location = ".".join(str(p) for p in first["loc"]) or "(object)"
        message = str(first["msg"]).removeprefix("Value error, ")
        more = f" (and {err.error_count() - 1} more problems)" if err.error_count() > 1 else ""
        raise SubmissionFailure("Valid", "InvalidSpec", f"{location}: {message}{more}") from None
    return job


def read_application(path: str, what: str) -> Application:
    """The parsed ADL of the bundle at ``path``; `SubmissionFailure(Planned, ...)` if unreadable."""
    try:
        return parse_adl(read_bundle(path).adl, what=what)
    except (BundleError, AdlError, OSError) as err:
        raise SubmissionFailure("Planned", "InvalidBundle", f"bundle {what}: {err}") from None


def plan_job(job: Job, app: Application, *, job_id: int, nodes: int | None) -> Plan:
    """The pipeline's plan of ``app`` for ``job``; `SubmissionFailure(Planned, ...)` if it cannot be."""
    spec = job.spec
    try:
        plan = plan_application(
            app,
            spec.fusion,
            job_name=str(job.metadata.name),
            job_id=job_id,
            submission_values=spec.submission_time_values,
            widths=spec.parallel_regions,
            resources=spec.processing_element.resources,
            nodes=nodes,
            threading=spec.threading_model,
        )
    except (SubmissionError, TopologyError, FusionConstraintError) as err:
        raise SubmissionFailure("Planned", "PlanningFailed", str(err)) from None
    return plan


def check_placement(job: Job, plan: Plan, nodes: Iterable[NodeInfo]) -> PlacementPlan:
    """Host placement on the cluster now; `SubmissionFailure(Planned, PlacementFailed)` if impossible."""
    try:
        return plan_placement(
            namespace=str(job.metadata.namespace),
            job=str(job.metadata.name),
            pools=plan.host_pools,
            pes=[PlacedPe(pe.id, pe.placement) for pe in plan.pes],
            nodes=nodes,
        )
    except PlacementError as err:
        raise SubmissionFailure("Planned", "PlacementFailed", str(err), err.depends_on_nodes) from None


def _pe_spec(job: Job, pe: PlannedPe, plan: Plan) -> ProcessingElementSpec:
    template: ProcessingElementTemplate = job.spec.processing_element
    inherited = template.model_dump(exclude={"resources"})
    inherited["image_pull_policy"] = template.image_pull_policy or job.spec.image_pull_policy
    inherited["image_pull_secret"] = template.image_pull_secret or job.spec.image_pull_secret
    if template.restart_failed_pod is None:
        inherited["restart_failed_pod"] = pe.restartable
    resources = (
        divide_resources(job.spec.resources, len(plan.pes))
        if job.spec.resources is not None
        else template.resources
    )
    return ProcessingElementSpec(
        **inherited,
        resources=resources,
        id=pe.id,
        content_id=pe.content_id,
        sab_name=job.spec.bundle.name,
        operators=pe.operators,
        regions=pe.regions,
        placement=pe.placement,
        input_ports=len(pe.inputs),
        restartable=pe.restartable,
    )


def _service_ports(pe: PlannedPe) -> list[dict[str, Any]]:
    ports = [{"name": f"sys-{p.id}", "port": PE_PORT_BASE + p.id, "protocol": "TCP"} for p in pe.inputs]
    return [
        *ports,
        {"name": "sys-metrics", "port": METRICS_PORT, "protocol": "TCP"},
        {"name": "sys-notifications", "port": NOTIFICATIONS_PORT, "protocol": "UDP"},
        {"name": "sys-consistentregion", "port": CONSISTENT_REGION_PORT, "protocol": "UDP"},
    ]


def pe_service_selector(job: str, pe: int) -> dict[str, str]:
    """The pods of PE ``pe`` of ``job``, whatever its generation and launch.

    Not the generation: a PE keeps its id across width changes (its pods get the new generation
    when its content changes), so a selector naming the generation would select nothing after a
    change unless every surviving Service were rewritten at once; the PE's identity never goes
    stale. ``svc=pe`` leaves out the failed pods kept as ``svc=zombie``."""
    return {APP_LABEL: APP_VALUE, JOB_LABEL: job, SVC_LABEL: SVC_PE, PE_LABEL: str(pe)}


def service_update(current: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any] | None:
    """The merge patch that gives an existing PE Service the desired selector and system ports
    (keeping the ``usr-*`` ports the runtime added), or None when it has them.

    Heals Services an earlier operator made (selecting a generation) and those of PEs a width
    change re-fused (their input ports follow the new fusion)."""
    spec, wanted = current.get("spec") or {}, desired["spec"]
    patch: dict[str, Any] = {}
    selector = spec.get("selector") or {}
    if selector != wanted["selector"]:
        patch["selector"] = {**dict.fromkeys(selector), **wanted["selector"]}  # null drops a key

    def system(port: dict[str, Any]) -> bool:
        return not str(port.get("name", "")).startswith(USER_PORT_PREFIX)

    def shape(ports: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(p.get("name"), p.get("port"), p.get("protocol", "TCP")) for p in ports if system(p)]

    ports = spec.get("ports") or []
    if shape(ports) != shape(wanted["ports"]):
        patch["ports"] = [*wanted["ports"], *(p for p in ports if not system(p))]
    if not patch:
        return None
    version = (current.get("metadata") or {}).get("resourceVersion")
    return {"metadata": {"resourceVersion": version}, "spec": patch}


def pe_port_name(job: str, pe: int, port: int) -> str:
    """The name of the Export or Import of a PE port (PE output and input port ids may coincide:
    the kinds tell them apart)."""
    return f"{job}-{pe}-{port}"


def consistent_region_name(job: str, index: int) -> str:
    return f"{job}-cr{index}"


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
    name = str(job.metadata.name)
    out: list[Desired] = []

    def add(resource: Resource, kind: str, body: dict[str, Any]) -> None:
        api_version = "v1" if not resource.group else resource.api_version
        out.append(Desired(resource, {"apiVersion": api_version, "kind": kind, **body}))

    metadata = ChildMetadata(
        job=name,
        namespace=job.metadata.namespace,
        generation=generation,
        annotations={
            APPLICATION_NAME_ANNOTATION: plan.application_name,
            APPLICATION_SCOPE_ANNOTATION: plan.application_scope,
        },
        owner=job.as_owner(job_uid),
    )
    out.append(Desired(CONFIGMAPS, name_table_config_map(plan, metadata, stamp, transport)))
    out.extend(Desired(CONFIGMAPS, pe_config_map(pe, metadata)) for pe in plan.pes)
    for pe in plan.pes:
        meta = metadata(pe_service_name(name, pe.id), pe_labels(pe.id))
        add(
            SERVICES,
            "Service",
            {
                "metadata": meta,
                "spec": {
                    "clusterIP": "None",
                    "selector": pe_service_selector(name, pe.id),
                    "ports": _service_ports(pe),
                },
            },
        )
    for pool in plan.host_pools:
        meta = metadata(f"{name}-{pool.index}")
        add(HOSTPOOLS, HostPool.kind_name, {"metadata": meta, "spec": pool.to_wire()})
    for region in plan.parallel_regions:
        meta = metadata(f"{name}-{region.index}")
        add(PARALLEL_REGIONS, ParallelRegion.kind_name, {"metadata": meta, "spec": region.to_wire()})
    for pe in plan.pes:
        for exported in pe.exports:
            meta = metadata(pe_port_name(name, pe.id, exported.port_id))
            add(EXPORTS, Export.kind_name, {"metadata": meta, "spec": exported.to_wire()})
    for pe in plan.pes:
        for imported in pe.imports:
            meta = metadata(pe_port_name(name, pe.id, imported.port_id))
            add(IMPORTS, Import.kind_name, {"metadata": meta, "spec": imported.to_wire()})

    if plan.consistent_regions:
        cro = ConsistentRegionOperatorSpec(
            job_name=name,
            job_uid=job_uid,
            num_regions=len(plan.consistent_regions),
            mode=coordinator_mode,
            image_pull_policy=job.spec.image_pull_policy,
            image_pull_secret=job.spec.image_pull_secret,
        )
        meta = metadata(coordinator_name(name))
        add(
            CONSISTENT_REGION_OPERATORS,
            ConsistentRegionOperator.kind_name,
            {"metadata": meta, "spec": cro.to_wire()},
        )
    for consistent in plan.consistent_regions:
        region_name = consistent_region_name(name, consistent.region_index)
        meta = metadata(region_name, {CR_LABEL: region_name})
        add(CONSISTENT_REGIONS, ConsistentRegion.kind_name, {"metadata": meta, "spec": consistent.to_wire()})

    for pe in plan.pes:
        meta = metadata(
            pe_service_name(name, pe.id), {**pe_labels(pe.id), CR_LABEL: "true" if pe.regions else "false"}
        )
        spec = _pe_spec(job, pe, plan)
        add(PES, ProcessingElement.kind_name, {"metadata": meta, "spec": spec.to_wire()})
    return out


def needs_transport_certificate(job: Job) -> bool:
    return job.spec.processing_element.transport_security_type is TransportSecurityType.TLS_V1_2
