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
the job's own PE pods, recognised by source address among the PE pods this coordinator watches,
or by a token bound to such a pod (TokenReview; a path naming a PE admits that PE's pods only),
or a client whose bearer token passes TokenReview and whose user may ``update`` the job's Job
(``streamsjobs.streams.ibm.com``, by name, in its namespace), per SubjectAccessReview (unless
``token_review`` is off: then the job's pods only). Reads stay open: the runtime sends no
credentials. Anyone else's write is a 401 or 403 with a JSON body.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web

from streams_k8s.api.consistent_region import (
    ConsistentRegionOperator,
)
from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    CR_LABEL,
    JOB_LABEL,
    PE_LABEL,
    PE_POD_SELECTOR,
    SVC_LABEL,
    SVC_PE,
)
from streams_k8s.consistent.assignment import Assignment, PlacedJobs, SingleJob
from streams_k8s.consistent.coordinator_objects import job_of, job_of_host
from streams_k8s.consistent.coordinator_settings import CoordinatorSettings
from streams_k8s.consistent.endpoint_slices import job_endpoint_slice, publish
from streams_k8s.consistent.job_regions import JobRegions, JobRun
from streams_k8s.consistent.kinds import CONSISTENT_REGIONS, JOBS, PROCESSING_ELEMENTS, REGION_OPERATORS
from streams_k8s.consistent.local import LocalCoordinator
from streams_k8s.consistent.metrics import CoordinatorMetrics, RegionGauges
from streams_k8s.consistent.rest import BASE_PATH, RegionHost, consistent_region_api
from streams_k8s.consistent.udp import UdpPush
from streams_k8s.k8s.controller import generation_changed
from streams_k8s.k8s.http_errors import json_errors
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta
from streams_k8s.k8s.pod_addresses import PodsByAddress
from streams_k8s.k8s.reviews import Access, AccessReviewer, TokenReviewer
from streams_k8s.k8s.write_guard import WriteTarget, write_guard

log = logging.getLogger(__name__)


PE_PODS = f"{PE_POD_SELECTOR},{CR_LABEL}=true"


class Coordinator(JobRegions):
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
            TokenReviewer(client),  # also how a pod proves it is one of the job's
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
        """Shared mode: point the job's selector-less API Service at this pod (`endpoint_slices`)."""
        if not self.settings.pod_ip:
            log.warning("job %s: no POD_IP, its API Service is not pointed at this pod", key)
            return
        endpoint_slice = job_endpoint_slice(
            key,
            operator,
            pod_name=self.settings.pod_name,
            pod_namespace=self.settings.effective_namespace(),
            pod_ip=self.settings.pod_ip,
            api_port=self.api_port,
            metrics_port=self.metrics_port,
        )
        await publish(self.manager.client, endpoint_slice)

    def _loop_ended(self, key: ObjectKey, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        # A dead loop would leave the job's PEs waiting forever: fail the pod so it restarts.
        log.error("the event loop of job %s ended: %r", key, task.exception())
        self.manager.stop()

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
