"""A job's plan, made once per spec generation and job id (from the recorded bundle content and
node count) and kept, with the children it renders; the same plan at other parallel-region widths
(re-fused from it: `plan_at_widths`), which a width change and an edit start from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from streams_k8s.api.consistent_region import CoordinatorMode
from streams_k8s.api.contract import name_table_stamp
from streams_k8s.api.job import Job
from streams_k8s.app.plan import Plan, plan_at_widths
from streams_k8s.controller.bundles.fetch import BundleChanged, BundleError, BundleFetcher
from streams_k8s.controller.children.certificates import needs_transport_certificate, transport_certificate
from streams_k8s.controller.children.desired import Desired, Rendered, desired_objects
from streams_k8s.controller.children.limits import check_children
from streams_k8s.controller.children.transport_secret import (
    config_map_transport,
    live_secret,
    rendered_transport,
    secret_transport,
)
from streams_k8s.controller.jobs import widths as widths_module
from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.controller.jobs.health import BUNDLE_FETCHED, PLANNED
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.status_writes import status_written, utc_now, write_status
from streams_k8s.controller.placement.constraints import NodeInfo
from streams_k8s.controller.planning import JobFailure, check_placement, plan_job, read_application
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.objects import Object, ObjectKey, meta

# Bundle failures that clear without a change to the Job: besides transient fetch errors, objects
# the bundle source refers to that may be applied after the Job.
_BUNDLE_REFERENCES_MISSING = frozenset({"SecretNotFound", "CertificateAuthorityNotFound"})


@dataclass(slots=True)
class KeptPlan:
    """A job's plan and children, kept while its spec generation and job id stay the same."""

    generation: int
    job_id: int
    plan: Plan
    children: list[Desired]
    resized: dict[tuple[tuple[str, int], ...], tuple[Plan, list[Desired]]] = field(default_factory=dict)

    @property
    def base_widths(self) -> dict[str, int]:
        return {r.alias: r.width for r in self.plan.parallel_regions}

    @property
    def transport(self) -> tuple[str, str] | None:
        """The job's transport certificate and key (kept across re-plans), if it has them."""
        return rendered_transport(self.children)


def schedulable_nodes(nodes: Iterable[Object]) -> list[NodeInfo]:
    """Nodes a PE pod could land on: not cordoned, not tainted against every pod."""
    infos = [NodeInfo.from_wire(n) for n in nodes]
    return [
        n
        for n in infos
        if not n.unschedulable and not any(t.effect in ("NoSchedule", "NoExecute") for t in n.taints)
    ]


def bundle_failure(err: BundleError) -> JobFailure:
    retryable = err.transient or isinstance(err, BundleChanged) or err.reason in _BUNDLE_REFERENCES_MISSING
    return JobFailure(BUNDLE_FETCHED, err.reason, str(err), retryable)


class Planner:
    """Makes and keeps each Job's plan (see the module docs); the one bundle fetcher."""

    def __init__(
        self,
        client: KubeClient,
        caches: JobCaches,
        recorder: EventRecorder,
        fetcher_factory: Callable[[], Awaitable[BundleFetcher]],
        coordinator_mode: CoordinatorMode,
    ) -> None:
        self.client, self.caches, self.recorder = client, caches, recorder
        self.coordinator_mode = coordinator_mode
        self._fetcher_factory = fetcher_factory
        self._fetcher: BundleFetcher | None = None
        self._planned: dict[str, KeptPlan] = {}  # by Job uid, dropped when it goes

    async def fetcher(self) -> BundleFetcher:
        if self._fetcher is None:
            self._fetcher = await self._fetcher_factory()
        return self._fetcher

    def keep(self, obj: Object, planned: KeptPlan) -> None:
        """``planned`` is what the Job runs now (not kept for a Job deleted meanwhile: nothing would
        drop it)."""
        if self.caches.holds(obj):
            self._planned[str(meta(obj)["uid"])] = planned

    def forget(self, uid: str) -> None:
        self._planned.pop(uid, None)

    def retained(self) -> int:
        return len(self._planned)

    def plan_of(self, key: ObjectKey) -> Plan | None:
        """The Job's plan as this replica last kept it (at the spec's widths); None if it has none."""
        job = self.caches.jobs.store.get(key)
        kept = self._planned.get(str(meta(job).get("uid"))) if job is not None else None
        return kept.plan if kept is not None else None

    async def plan(
        self, obj: Object, job: Job, status: JobStatusView, generation: int, uid: str
    ) -> tuple[KeptPlan, Object, JobStatusView]:
        """The job's plan (kept), recording BundleFetched, bundleDigest, Planned and plannedNodes
        on first use; later plans use the recorded bundle content."""
        job_id = int(status.id or 0)
        cached = self._planned.get(uid)
        if cached is not None and cached.generation == generation and cached.job_id == job_id:
            return cached, obj, status
        namespace = str(job.metadata.namespace)
        conditions = status.conditions
        fetcher = await self.fetcher()
        # The digest recorded for this spec; an edited spec (still submitting) fetches afresh.
        pinned = status.bundle_digest if status.applied_generation == generation else None
        try:
            if pinned is None:
                fetched = await fetcher.fetch(namespace, job.spec.bundle)
            else:
                fetched = await fetcher.fetch_pinned(namespace, job.spec.bundle, pinned)
        except BundleError as err:
            raise bundle_failure(err) from None
        digest_note = f"{job.spec.bundle.name} sha256:{fetched.digest[:12]}"
        changed = set_condition(conditions, BUNDLE_FETCHED, "True", "Fetched", digest_note, generation)
        nodes = schedulable_nodes(self.caches.nodes.store.select())
        planned_nodes = status.planned_nodes or max(len(nodes), 1)
        name = str(job.metadata.name)
        transport = await self.live_transport(namespace, name) if needs_transport_certificate(job) else None
        planned = await asyncio.to_thread(
            self._build,
            job,
            uid,
            str(fetched.path),
            (job_id, generation),
            planned_nodes,
            nodes,
            self.caches.live_ids(namespace, name, uid),
            transport,
        )
        summary = "; ".join([f"{len(planned.plan.pes)} PEs", *planned.plan.notices])
        changed |= set_condition(conditions, PLANNED, "True", "Planned", summary, generation)
        if (
            changed
            or status.bundle_digest != fetched.digest
            or status.planned_nodes != planned_nodes
            or status.processing_elements != len(planned.plan.pes)
            or status.application_name != planned.plan.application_name
        ):
            status = status.with_(
                application_name=planned.plan.application_name,
                bundle_digest=fetched.digest,
                conditions=conditions,
                planned_nodes=planned_nodes,
                processing_elements=len(planned.plan.pes),
            )
            obj = await write_status(self.client, obj, status)
            status = status_written(obj, status)
            if changed:
                note = f"{len(planned.plan.pes)} PEs planned on {planned_nodes} schedulable nodes"
                await self.recorder.record(obj, "Normal", "Planned", note)
        self.keep(obj, planned)
        return planned, obj, status

    async def live_transport(self, namespace: str, job: str) -> tuple[str, str] | None:
        """The transport certificate the job's PEs use now (its Secret's, read by name: no cache
        of Secrets; else the name table's, as an earlier release wrote it), if any: a re-plan keeps
        it rather than making another."""
        secret = await live_secret(self.client, namespace, job)
        table = self.caches.configmaps.store.get(ObjectKey(namespace, job))
        return secret_transport(secret) or config_map_transport(table)

    def _build(
        self,
        job: Job,
        uid: str,
        bundle_path: str,
        ids: tuple[int, int],
        planned_nodes: int,
        nodes: list[NodeInfo],
        live: dict[int, list[str]],
        live_transport: tuple[str, str] | None,
    ) -> KeptPlan:
        """Parse, plan, check placement and render the children (CPU-bound: runs in a thread).
        ``ids``: the job id and spec generation; ``live``: the operators of the job's PEs by id;
        ``live_transport``: the transport certificate they use, if any (kept)."""
        job_id, generation = ids
        app = read_application(bundle_path, job.spec.bundle.name)
        plan = plan_job(job, app, job_id=job_id, nodes=planned_nodes)
        if live and not _gives_their_ids(plan, live):
            # earlier edits gave the running PEs ids a fresh plan would not: keep theirs
            plan = plan_job(job, app, job_id=job_id, nodes=planned_nodes, ids_from=live)
        check_placement(job, plan, nodes)
        transport = None
        if needs_transport_certificate(job):
            transport = live_transport or transport_certificate(
                job.spec.transport_certificate_validity_in_days
            )
        stamp = name_table_stamp(utc_now())
        children = desired_objects(
            job,
            uid,
            plan,
            generation=0,
            stamp=stamp,
            transport=transport,
            coordinator_mode=self.coordinator_mode,
        )
        check_children(children)  # before anything is written
        return KeptPlan(generation, job_id, plan, children)

    def children_at(
        self, job: Job, uid: str, planned: KeptPlan, widths: dict[str, int], generation: int
    ) -> tuple[Plan, list[Desired]]:
        """The plan and children of ``planned`` re-fused at ``widths``, labelled with the job
        ``generation`` (the current widths' are kept with the plan)."""
        if widths == planned.base_widths:
            return planned.plan, planned.children
        key = (*sorted(widths.items()), ("", generation))
        if key not in planned.resized:
            plan = plan_at_widths(planned.plan, widths)
            stamp = name_table_stamp(utc_now())
            children = desired_objects(
                job,
                uid,
                plan,
                generation=generation,
                stamp=stamp,
                transport=planned.transport,
                coordinator_mode=self.coordinator_mode,
                earlier=Rendered(job.spec, planned.plan, planned.children),
            )
            planned.resized = {key: (plan, children)}  # only the current widths are worth keeping
        return planned.resized[key]

    def running_widths(self, obj: Object, planned: KeptPlan) -> dict[str, int]:
        """The widths the job's parallel regions run at (resized or as planned)."""
        regions = self.caches.labelled(self.caches.parallel_regions, obj)
        return widths_module.applied_widths(planned.base_widths, regions)


def _gives_their_ids(plan: Plan, live: dict[int, list[str]]) -> bool:
    """Whether ``plan`` gives every running PE (operators by PE id) the id it has: then PEs of it
    not made yet (a submission cut short by a restart, a PE deleted meanwhile) get the ids the
    submission meant for them, not new ones after the highest running id."""
    planned = {pe.id: sorted(pe.operators) for pe in plan.pes}
    return all(planned.get(pe_id) == sorted(operators) for pe_id, operators in live.items())
