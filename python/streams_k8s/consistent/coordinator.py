"""The consistent-region coordinator on Kubernetes: the FSMs of the jobs assigned to this pod.

Run under the controller runtime's Manager (``streams-k8s coordinator``, or
``streams-k8s run --no-leader-election --controller streams_k8s.consistent.coordinator:setup``
with the settings in ``STREAMS_K8S_CR_*`` variables; under leader election give each job its
own ``--lease-name``, or the coordinators of different jobs would wait on one Lease).

It watches ConsistentRegion CRs, ConsistentRegionOperator CRs, ProcessingElements and PE pods;
every event only enqueues the job (label ``streams.ibm.com/job``), and reconciling a job
converges this pod onto it:

- a job assigned here gets its own ordered event loop (``LocalCoordinator``), one region per
  ConsistentRegion CR, built from the CR's spec and its persisted status; a job that is not
  (any longer) assigned here is dropped;
- the first time a pod runs a job whose ConsistentRegionOperator says it has started before
  (or a region whose persisted state is past STARTED), the coordinator restarted: every region
  gets ``Restarted`` (timers are gone, the region is reset once healthy, and the timers are
  armed again from there);
- each region's health is derived from its PEs and their current pods, and fed to the FSM
  when it changes.

Status writes replace the CR's ``status`` subresource (JSON patch) and are confirmed before
the PEs hear of the new state; the REST API (port 10000) and the UDP hints are the ones of the
local loop; the gauges and the runtime's own metrics share the Manager's metrics endpoint (9696
by default here). In shared mode the jobs come from an ``Assignment`` (by default
``PlacedJobs``: the jobs whose ConsistentRegionOperator placements, written by the pool's
vreplica scheduler, make this pod their runner), the REST API finds the job from the
Host header (``streams-<job>-consistentregion-api.<ns>``) or a ``/jobs/{ns}/{job}`` prefix, and
the pod running a job publishes itself as the EndpointSlice of the job's selector-less API Service.

Who may write on the REST API (report progress, drain, reset; ``streams_k8s.k8s.write_guard``):
the job's own PE pods, recognised by source address among the PE pods this coordinator watches
(a path naming a PE admits that PE's pods only), or a client whose bearer token passes
TokenReview and whose user may ``update`` the job's Job (``streamsjobs.streams.ibm.com``, by
name, in its namespace), per SubjectAccessReview. Reads stay open: the runtime sends no
credentials. Anyone else's write is a 401 or 403 with a JSON body.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web
from prometheus_client import Counter, Gauge, Histogram
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from streams_k8s.api.consistent_region import (
    ConsistentRegion,
    ConsistentRegionOperator,
    ConsistentRegionStatus,
    RegionState,
)
from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    CONSISTENT_REGION_PORT,
    COORDINATOR_API_PORT,
    COORDINATOR_API_PORT_NAME,
    COORDINATOR_SERVICE_AFFIXES,
    CR_LABEL,
    JOB_LABEL,
    LAUNCH_COUNT_LABEL,
    METRICS_PORT_NAME,
    PE_HOST_TEMPLATE,
    PE_LABEL,
    PE_POD_SELECTOR,
    SVC_LABEL,
    SVC_PE,
    coordinator_service_name,
)
from streams_k8s.api.job import Job
from streams_k8s.api.processing_element import ProcessingElement
from streams_k8s.consistent.assignment import Assignment, PlacedJobs, SingleJob
from streams_k8s.consistent.fsm import Health, InvalidRegion, RegionMachine
from streams_k8s.consistent.health import PodObservation, region_health
from streams_k8s.consistent.local import LocalCoordinator
from streams_k8s.consistent.metrics import RegionGauges
from streams_k8s.consistent.rest import BASE_PATH, RegionHost, consistent_region_api
from streams_k8s.consistent.udp import UdpPush
from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.controller import generation_changed
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.http_errors import json_errors
from streams_k8s.k8s.kinds import ENDPOINT_SLICES, PODS
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta
from streams_k8s.k8s.pod_addresses import PodsByAddress
from streams_k8s.k8s.reviews import Access, AccessReviewer, TokenReviewer
from streams_k8s.k8s.write_guard import WriteTarget, write_guard

log = logging.getLogger(__name__)

CONSISTENT_REGIONS = Resource.of(ConsistentRegion)
REGION_OPERATORS = Resource.of(ConsistentRegionOperator)
PROCESSING_ELEMENTS = Resource.of(ProcessingElement)
JOBS = Resource.of(Job)
# A selector-less Service's EndpointSlice names its Service and the controller that manages it
# (never the built-in EndpointSlice controller, which would take it over).
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "consistent-region-coordinator.streams.ibm.com"

# Condition set on a ConsistentRegion the coordinator cannot run (and removed once it can).
ACCEPTED = "Accepted"
PE_PODS = f"{PE_POD_SELECTOR},{CR_LABEL}=true"
# Client-side rate limit of the coordinator's API calls: its status writes are on the path from
# a PE's report to the next notification, so it gets more room than a controller's default.
CLIENT_QPS, CLIENT_BURST = 100.0, 200
# The Service a job's PEs reach their coordinator through: streams-<job>-consistentregion-api.
API_SERVICE_PREFIX, API_SERVICE_SUFFIX = COORDINATOR_SERVICE_AFFIXES


class CoordinatorSettings(BaseSettings):
    """What this coordinator pod runs; ``STREAMS_K8S_CR_*`` variables, then flags."""

    model_config = SettingsConfigDict(env_prefix="STREAMS_K8S_CR_", extra="forbid")

    mode: Literal["dedicated", "shared"] = "dedicated"
    job: str | None = Field(None, description="the job (dedicated mode)")
    namespace: str | None = Field(None, description="the job's namespace (default: the pod's)")
    pod_name: str = Field(default_factory=lambda: os.environ.get("POD_NAME") or os.uname().nodename)
    pod_ip: str | None = Field(
        default_factory=lambda: os.environ.get("POD_IP"),
        description="this pod's IP (shared mode: published as the endpoint of the jobs it runs)",
    )
    bind_address: str = "0.0.0.0"
    api_port: int = Field(COORDINATOR_API_PORT, ge=0, le=65535)
    udp_hints: bool = True
    udp_port: int = Field(CONSISTENT_REGION_PORT, ge=1, le=65535)
    udp_host: str = Field(PE_HOST_TEMPLATE, description="where a PE gets its hints (its headless Service)")
    token_review: bool = Field(
        True,
        description="accept writes with a bearer token (TokenReview + SubjectAccessReview); off: "
        "only the job's PE pods may write",
    )

    @field_validator("udp_host")
    @classmethod
    def _known_placeholders(cls, template: str) -> str:
        try:
            template.format(job="j", pe=0, namespace="ns")
        except (KeyError, IndexError, ValueError) as err:
            raise ValueError(f"udp_host may use {{job}}, {{pe}} and {{namespace}} only ({err!r})") from None
        return template

    def effective_namespace(self) -> str | None:
        return self.namespace or os.environ.get("POD_NAMESPACE") or os.environ.get("MY_POD_NAMESPACE")


def job_of(obj: Object) -> ObjectKey | None:
    name = (meta(obj).get("labels") or {}).get(JOB_LABEL)
    return ObjectKey(meta(obj).get("namespace") or "", name) if name else None


def job_of_host(host: str) -> ObjectKey | None:
    """``streams-<job>-consistentregion-api.<ns>[.svc...][:port]`` -> (ns, job)."""
    labels = host.rsplit(":", 1)[0].split(".")
    service = labels[0]
    if len(labels) < 2 or not (
        service.startswith(API_SERVICE_PREFIX) and service.endswith(API_SERVICE_SUFFIX)
    ):
        return None
    job = service[len(API_SERVICE_PREFIX) : -len(API_SERVICE_SUFFIX)]
    return ObjectKey(labels[1], job) if job else None


def pod_observation(pod: Object) -> PodObservation | None:
    """What health needs of a PE pod; None for a pod without the PE labels."""
    labels = meta(pod).get("labels") or {}
    try:
        pe, launch = int(labels[PE_LABEL]), int(labels.get(LAUNCH_COUNT_LABEL, "1"))
    except (KeyError, ValueError):
        return None
    owner = next((r.get("uid") for r in meta(pod).get("ownerReferences") or () if r.get("controller")), None)
    return PodObservation(pe, launch, owner, (pod.get("status") or {}).get("phase"))


class CoordinatorMetrics:
    """The coordinator's own health, next to the runtime's metrics in the same registry."""

    def __init__(self, manager: Manager) -> None:
        registry = manager.metrics.registry
        self.jobs = Gauge("streams_cr_coordinator_jobs", "Jobs this coordinator runs.", registry=registry)
        self.regions = Gauge(
            "streams_cr_coordinator_regions", "Regions this coordinator runs.", registry=registry
        )
        self.backlog = Gauge(
            "streams_cr_coordinator_event_backlog", "Events queued, not yet processed.", registry=registry
        )
        self.status_writes = Counter(
            "streams_cr_coordinator_status_writes",
            "ConsistentRegion status writes by result (ok, error).",
            ["result"],
            registry=registry,
        )
        self.status_write_seconds = Histogram(
            "streams_cr_coordinator_status_write_seconds",
            "Time to get a status write confirmed by the API server.",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=registry,
        )
        self.rejected = Gauge(
            "streams_cr_coordinator_rejected_events",
            "Events the FSMs refused (stale, duplicate, unknown), since start.",
            registry=registry,
        )


@dataclass
class JobRun:
    """One job's regions on this pod."""

    loop: LocalCoordinator
    task: asyncio.Task[None]
    restarted: bool  # its coordinator ran before: every region it takes on resets
    built_from: dict[int, tuple[str, int]] = field(default_factory=dict)  # region -> (CR name, generation)
    health: dict[int, Health] = field(default_factory=dict)  # last health fed to each region
    push: UdpPush | None = None


class Coordinator:
    """Declares the watches and the job controller on a Manager and serves the REST API."""

    def __init__(
        self, manager: Manager, settings: CoordinatorSettings, assignment: Assignment | None = None
    ) -> None:
        self.manager = manager
        self.settings = settings
        namespace = settings.effective_namespace()
        scope: str | None
        selector: str | None
        if settings.mode == "dedicated":
            if not settings.job or not namespace:
                raise ValueError("dedicated mode needs the job and its namespace")
            self.assignment: Assignment = assignment or SingleJob(namespace, settings.job)
            selector = f"{JOB_LABEL}={settings.job}"
            scope = namespace
        else:
            scope = settings.namespace or None  # None: every namespace
            selector = None
            self.assignment = assignment or PlacedJobs(settings.pod_name)
        self.namespace = scope
        self.jobs: dict[ObjectKey, JobRun] = {}
        self.gauges = RegionGauges(manager.metrics.registry, per_job=settings.mode == "shared")
        self.metrics = CoordinatorMetrics(manager)
        self.metrics.jobs.set_function(lambda: len(self.jobs))
        self.metrics.regions.set_function(lambda: sum(len(r.loop.regions) for r in self.jobs.values()))
        self.metrics.backlog.set_function(lambda: sum(r.loop.backlog for r in self.jobs.values()))
        self.metrics.rejected.set_function(lambda: sum(r.loop.rejected for r in self.jobs.values()))
        self.regions = manager.informer(CONSISTENT_REGIONS, namespace=scope, label_selector=selector)
        self.operators = manager.informer(REGION_OPERATORS, namespace=scope)
        if isinstance(self.assignment, PlacedJobs):
            placed = self.assignment
            self.operators.add_handler(lambda kind, old, new: placed.observe(old, new))
        self.pes = manager.informer(PROCESSING_ELEMENTS, namespace=scope, label_selector=selector)
        pod_selector = f"{PE_PODS},{selector}" if selector else PE_PODS
        self.pods = manager.informer(PODS, namespace=scope, label_selector=pod_selector)
        self.pods_by_address = PodsByAddress(self.pods)
        self.controller = manager.controller("consistent-regions", self.reconcile)
        self.controller.watch(self.regions, self._jobs_of, predicates=[generation_changed])
        self.controller.watch(self.operators, self._operator_job)
        self.controller.watch(self.pes, self._jobs_of)
        self.controller.watch(self.pods, self._jobs_of)
        self.assignment.subscribe(self._reassign)
        self._runner: web.AppRunner | None = None
        self.api_port = settings.api_port

    @property
    def metrics_port(self) -> int:
        """Where the gauges are served (the Manager's metrics endpoint)."""
        health = self.manager.health
        return health.metrics_port if health is not None else self.manager.settings.metrics_port

    # ---- event mapping ----

    def _jobs_of(self, obj: Object) -> list[ObjectKey]:
        job = job_of(obj)
        return [job] if job is not None else []

    def _operator_job(self, obj: Object) -> list[ObjectKey]:
        name = (obj.get("spec") or {}).get("jobName")
        return [ObjectKey(meta(obj).get("namespace") or "", name)] if name else []

    def _reassign(self) -> None:
        """The pool changed: look again at every job this pod runs or could run."""
        keys = {key for obj in self.regions.store.select() if (key := job_of(obj)) is not None}
        for key in keys | set(self.jobs):
            self.controller.queue.add(key)

    # ---- the REST API ----

    def host_for(self, job: ObjectKey) -> RegionHost:
        run = self.jobs.get(job)
        if run is None:
            raise web.HTTPNotFound(text=f"job {job.namespace}/{job.name} has no consistent regions here")
        return run.loop

    def _job_of_request(self, request: web.Request) -> ObjectKey | None:
        if self.settings.mode == "dedicated":
            return ObjectKey(self.namespace or "", self.settings.job or "")
        if "job" in request.match_info:
            return ObjectKey(request.match_info["namespace"], request.match_info["job"])
        return job_of_host(request.host)

    def _resolve(self, request: web.Request) -> RegionHost:
        job = self._job_of_request(request)
        if job is None:
            raise web.HTTPNotFound(text=f"host {request.host!r} is not a job's consistent-region API")
        return self.host_for(job)

    def _write_target(self, request: web.Request) -> WriteTarget | None:
        """Who may write what ``request`` addresses: the job's PE pods (the path's PE's, when it
        names one), or a user who may update the Job."""
        job = self._job_of_request(request)
        if job is None:
            return None
        pods = {APP_LABEL: APP_VALUE, SVC_LABEL: SVC_PE, JOB_LABEL: job.name}
        if (pe := request.match_info.get("pe")) is not None:
            pods[PE_LABEL] = pe
        access = Access("update", JOBS.group, JOBS.plural, job.namespace, job.name)
        return WriteTarget(f"job {job}", access, job.namespace, pods)

    async def start_api(self) -> None:
        """Serve ``/api/consistentregion`` (shared mode: the job from the Host header) and, for
        clients outside the cluster, ``/jobs/{namespace}/{job}/api/consistentregion``."""
        client = self.manager.client
        reviews = self.settings.token_review
        guard = write_guard(
            self._write_target,
            self.pods_by_address,
            TokenReviewer(client) if reviews else None,
            AccessReviewer(client) if reviews else None,
        )
        middlewares = [guard]
        app = web.Application(middlewares=[json_errors])
        app.add_subapp(BASE_PATH, consistent_region_api(resolve=self._resolve, middlewares=middlewares))
        if self.settings.mode == "shared":
            by_path = consistent_region_api(
                resolve=self._resolve, middlewares=middlewares, prefix="/{namespace}/{job}" + BASE_PATH
            )
            app.add_subapp("/jobs", by_path)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.settings.bind_address, self.settings.api_port).start()
        self.api_port = int(self._runner.addresses[0][1])
        log.info("consistent-region API on :%d", self.api_port)

    async def close(self) -> None:
        for key in list(self.jobs):
            await self._drop(key)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ---- reconcile ----

    async def reconcile(self, key: ObjectKey) -> None:
        crs = [
            obj
            for obj in self.regions.store.select(key.namespace or None)
            if job_of(obj) == key and not meta(obj).get("deletionTimestamp")
        ]
        if not crs or not self.assignment.owns(key):
            await self._drop(key)
            return
        run = self.jobs.get(key)
        if run is None:
            run = self.jobs[key] = await self._start(key)
        await self._sync_regions(key, run, crs)
        self._feed_health(key, run)

    def _operator(self, key: ObjectKey) -> Object | None:
        return next(
            (
                obj
                for obj in self.operators.store.select(key.namespace or None)
                if (obj.get("spec") or {}).get("jobName") == key.name
            ),
            None,
        )

    async def _start(self, key: ObjectKey) -> JobRun:
        """Take the job on; it restarted if its ConsistentRegionOperator says it ran before."""
        operator = self._operator(key)
        restarted = False
        if operator is not None:
            status = ConsistentRegionOperator.from_wire(operator).status
            restarted = status is not None and status.has_started
            if self.settings.mode == "shared":
                await self._publish_endpoint(key, operator)
            await self.manager.client.patch_status(
                REGION_OPERATORS,
                meta(operator)["name"],
                {"hasStarted": True, "coordinator": self.settings.pod_name},
                key.namespace,
            )
        push: UdpPush | None = None
        if self.settings.udp_hints:
            template = self.settings.udp_host

            def host_of(pe: int) -> str:
                return template.format(job=key.name, pe=pe, namespace=key.namespace)

            push = UdpPush(key.name, key.namespace, port=self.settings.udp_port, host_of=host_of)
        loop = LocalCoordinator(
            (),
            persist=self._persister(key),
            push=push or _poll_only,
            gauges=self.gauges.for_job(key.namespace, key.name),
        )
        task = asyncio.create_task(loop.run(), name=f"consistent regions {key}")
        task.add_done_callback(lambda t: self._loop_ended(key, t))
        log.info("running job %s (%s)", key, "restarted: every region resets" if restarted else "fresh start")
        return JobRun(loop, task, restarted, push=push)

    async def _publish_endpoint(self, key: ObjectKey, operator: Object) -> None:
        """Shared mode: point the job's selector-less API Service at this pod, so its PEs reach
        the pool pod that runs the job: its EndpointSlice (named as the Service, owned by the
        job's ConsistentRegionOperator, so it goes with it) lists this pod's address."""
        if not self.settings.pod_ip:
            log.warning("job %s: no POD_IP, its API Service is not pointed at this pod", key)
            return
        name = coordinator_service_name(key.name)
        owner = {
            "apiVersion": operator.get("apiVersion", "streams.ibm.com/v1"),
            "kind": "ConsistentRegionOperator",
            "name": meta(operator)["name"],
            "uid": meta(operator).get("uid"),
        }
        target = {
            "kind": "Pod",
            "name": self.settings.pod_name,
            "namespace": self.settings.effective_namespace(),
        }
        endpoint_slice: Object = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": name,
                "namespace": key.namespace,
                "labels": {
                    APP_LABEL: APP_VALUE,
                    JOB_LABEL: key.name,
                    SERVICE_NAME_LABEL: name,
                    MANAGED_BY_LABEL: MANAGED_BY,
                },
                "ownerReferences": [owner],
            },
            "addressType": "IPv6" if ":" in self.settings.pod_ip else "IPv4",
            "endpoints": [
                {"addresses": [self.settings.pod_ip], "conditions": {"ready": True}, "targetRef": target}
            ],
            "ports": [
                {"name": COORDINATOR_API_PORT_NAME, "port": self.api_port, "protocol": "TCP"},
                {"name": METRICS_PORT_NAME, "port": self.metrics_port, "protocol": "TCP"},
            ],
        }
        client = self.manager.client
        try:
            current = await client.get(ENDPOINT_SLICES, name, key.namespace)
        except ApiError as err:
            if err.status != 404:
                raise
            await client.create(ENDPOINT_SLICES, endpoint_slice, key.namespace)
            return
        endpoint_slice["metadata"]["resourceVersion"] = meta(current).get("resourceVersion")
        await client.replace(ENDPOINT_SLICES, endpoint_slice, key.namespace)

    def _loop_ended(self, key: ObjectKey, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        # A dead loop would leave the job's PEs waiting forever: fail the pod so it restarts.
        log.error("the event loop of job %s ended: %r", key, task.exception())
        self.manager.stop()

    def _persister(self, key: ObjectKey) -> Callable[[int, ConsistentRegionStatus], Any]:
        async def persist(region_index: int, status: ConsistentRegionStatus) -> None:
            run = self.jobs.get(key)
            built = run.built_from.get(region_index) if run is not None else None
            if built is None:  # the region was dropped while its write waited
                return
            started = asyncio.get_running_loop().time()
            try:
                await self.manager.client.patch(
                    CONSISTENT_REGIONS,
                    built[0],
                    [{"op": "add", "path": "/status", "value": status.to_wire()}],
                    key.namespace,
                    patch_type="json",
                    subresource="status",
                )
            except ApiError as err:
                self.metrics.status_writes.labels("error").inc()
                if err.status == 404:  # the CR is gone: the next reconcile drops the region
                    log.info("job %s region %d: ConsistentRegion %s is gone", key, region_index, built[0])
                    return
                raise
            except Exception:
                self.metrics.status_writes.labels("error").inc()
                raise
            self.metrics.status_writes.labels("ok").inc()
            self.metrics.status_write_seconds.observe(asyncio.get_running_loop().time() - started)

        return persist

    async def _sync_regions(self, key: ObjectKey, run: JobRun, crs: list[Object]) -> None:
        seen: set[int] = set()
        for obj in crs:
            name, generation = meta(obj)["name"], int(meta(obj).get("generation") or 0)
            try:
                region = ConsistentRegion.from_wire(obj)
                machine = RegionMachine(region.spec, region.status)
            except (ValidationError, InvalidRegion) as err:
                await self._refuse(obj, err)
                continue
            if region.status is not None and any(c.type == ACCEPTED for c in region.status.conditions):
                # It was refused before and is valid now: withdraw the refusal, here and in
                # every status the FSM writes from now on.
                kept = [c for c in region.status.conditions if c.type != ACCEPTED]
                await self.manager.client.patch_status(
                    CONSISTENT_REGIONS, name, {"conditions": [c.to_wire() for c in kept]}, key.namespace
                )
                machine = RegionMachine(region.spec, region.status.model_copy(update={"conditions": kept}))
            index = region.spec.region_index
            seen.add(index)
            if run.built_from.get(index) == (name, generation):
                continue
            # New, or its spec changed (new generation): run it from its persisted state; a
            # region that was running when its spec changed resets, as after a restart.
            was_running = index in run.loop.regions
            if was_running:
                machine = RegionMachine(region.spec, run.loop.regions[index].status())
                run.loop.remove_region(index)
            # A persisted state past STARTED also means a coordinator ran it before (even if the
            # ConsistentRegionOperator does not say so): its timers are gone, so it resets.
            ran_before = region.status is not None and region.status.state is not RegionState.STARTED
            run.built_from[index] = (name, generation)
            run.health.pop(index, None)
            run.loop.add_region(machine, restarted=was_running or run.restarted or ran_before)
        for index in set(run.loop.regions) - seen:
            run.loop.remove_region(index)
            run.built_from.pop(index, None)
            run.health.pop(index, None)

    async def _refuse(self, obj: Object, err: Exception) -> None:
        """A region that cannot run: say why on the CR (condition ``Accepted=False`` and an
        Event), once per change of the reason."""
        if isinstance(err, ValidationError):
            first = err.errors()[0]
            message = f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
        else:
            message = str(err) or type(err).__name__
        conditions = [dict(c) for c in (obj.get("status") or {}).get("conditions") or ()]
        generation = meta(obj).get("generation")
        if not set_condition(conditions, ACCEPTED, "False", "InvalidRegion", message, generation):
            return
        name, namespace = meta(obj)["name"], meta(obj).get("namespace")
        log.warning("ConsistentRegion %s/%s not run: %s", namespace, name, message)
        await self.manager.client.patch_status(
            CONSISTENT_REGIONS, name, {"conditions": conditions}, namespace
        )
        await self.manager.event_recorder("consistent-regions").record(
            obj, "Warning", "InvalidRegion", message
        )

    def _feed_health(self, key: ObjectKey, run: JobRun) -> None:
        pes: dict[int, ProcessingElement] = {}
        for obj in self.pes.store.select(key.namespace or None):
            if job_of(obj) != key:
                continue
            try:
                pe = ProcessingElement.from_wire(obj)
            except ValidationError:
                continue  # the instance operator reports a malformed PE on the PE itself
            pes[pe.spec.id] = pe
        pods = [
            observed
            for obj in self.pods.store.select(key.namespace or None)
            if job_of(obj) == key and (observed := pod_observation(obj)) is not None
        ]
        for index, machine in run.loop.regions.items():
            health = region_health(machine.pes, pes, pods)
            if health is not None and run.health.get(index) != health:
                run.health[index] = health
                run.loop.submit(index, health)

    async def _drop(self, key: ObjectKey) -> None:
        run = self.jobs.pop(key, None)
        if run is None:
            return
        log.info("job %s no longer runs here", key)
        for index in list(run.loop.regions):
            run.loop.remove_region(index)
        run.task.cancel()
        await asyncio.gather(run.task, return_exceptions=True)
        if run.push is not None:
            run.push.close()


async def _poll_only(region_index: int, pes: Any, note: Any) -> None:
    """No UDP hints: PEs learn of notifications by polling the board."""


async def setup(manager: Manager, settings: CoordinatorSettings | None = None) -> Coordinator:
    """The ``--controller`` entry: declare the coordinator on the manager and serve its API."""
    coordinator = Coordinator(manager, settings or CoordinatorSettings())
    await coordinator.start_api()
    return coordinator


__all__ = ["Coordinator", "CoordinatorSettings", "JobRun", "setup"]
