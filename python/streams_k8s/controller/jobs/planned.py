"""A job's plan and its children in the cluster: the plan is made once per spec generation and job
id (from the recorded bundle content and node count), the children it renders are created where
the caches lack them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from streams_k8s.api.contract import JOB_LABEL, name_table_stamp
from streams_k8s.api.job import Job
from streams_k8s.controller.adoption import adopt_orphans
from streams_k8s.controller.bundles.fetch import BundleChanged, BundleError
from streams_k8s.controller.children.certificates import needs_transport_certificate, transport_certificate
from streams_k8s.controller.children.creation_order import creation_waits
from streams_k8s.controller.children.desired import Desired, desired_objects
from streams_k8s.controller.children.limits import REFUSED, check_children, refused
from streams_k8s.controller.jobs.base import (
    BUNDLE_FETCHED,
    PLANNED,
    JobControllerBase,
    KeptPlan,
    status_written,
    utc_now,
)
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.placement.constraints import NodeInfo
from streams_k8s.controller.planning import SubmissionFailure, check_placement, plan_job, read_application
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.controller import stop_if_owner_deleted
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.objects import Object, meta

# Bundle failures that clear without a change to the Job: besides transient fetch errors, objects
# the bundle source refers to that may be applied after the Job.
_BUNDLE_REFERENCES_MISSING = frozenset({"SecretNotFound", "CertificateAuthorityNotFound"})


# Children created concurrently by one submission (the client's QPS bucket still applies).
CREATE_CONCURRENCY = 16


def schedulable_nodes(nodes: Iterable[Object]) -> list[NodeInfo]:
    """Nodes a PE pod could land on: not cordoned, not tainted against every pod."""
    infos = [NodeInfo.from_wire(n) for n in nodes]
    return [
        n
        for n in infos
        if not n.unschedulable and not any(t.effect in ("NoSchedule", "NoExecute") for t in n.taints)
    ]


def bundle_failure(err: BundleError) -> SubmissionFailure:
    retryable = err.transient or isinstance(err, BundleChanged) or err.reason in _BUNDLE_REFERENCES_MISSING
    return SubmissionFailure(BUNDLE_FETCHED, err.reason, str(err), retryable)


def pe_ids(pes: Iterable[Object], uid: str) -> dict[int, list[str]]:
    """The operators of each PE of the Job ``uid`` by PE id, from its PE objects (what keeps PE
    ids across a re-plan; `plan --against stj/NAME` reads them the same way)."""
    return {
        int(pe["spec"]["id"]): list(pe["spec"]["operators"])
        for pe in pes
        if any(ref.get("uid") == uid for ref in meta(pe).get("ownerReferences") or ())
    }


class PlannedJobs(JobControllerBase):
    """Plans (cached per Job) and the creation of their children."""

    async def _plan(
        self, obj: Object, job: Job, status: JobStatusView, generation: int, uid: str
    ) -> tuple[KeptPlan, Object, JobStatusView]:
        """The job's plan (cached), recording BundleFetched, bundleDigest, Planned and plannedNodes
        on first use; later plans use the recorded bundle content."""
        job_id = int(status.id or 0)
        cached = self._planned.get(uid)
        if cached is not None and cached.generation == generation and cached.job_id == job_id:
            return cached, obj, status
        namespace = str(job.metadata.namespace)
        conditions = status.conditions
        fetcher = await self._bundle_fetcher()
        # The digest recorded for this spec; an edited spec (still submitting) fetches afresh.
        pinned = status.bundle_digest if status.applied_generation == generation else None
        try:
            if pinned is None:
                fetched = await fetcher.fetch(namespace, job.spec.bundle)
            else:
                fetched = await fetcher.fetch_pinned(namespace, job.spec.bundle, pinned)
        except BundleError as err:
            raise bundle_failure(err) from None
        changed = set_condition(
            conditions,
            BUNDLE_FETCHED,
            "True",
            "Fetched",
            f"{job.spec.bundle.name} sha256:{fetched.digest[:12]}",
            generation,
        )
        nodes = schedulable_nodes(self.nodes.store.select())
        planned_nodes = status.planned_nodes or max(len(nodes), 1)
        name = str(job.metadata.name)
        transport = await self._live_transport(namespace, name) if needs_transport_certificate(job) else None
        planned = await asyncio.to_thread(
            self._build,
            job,
            uid,
            str(fetched.path),
            (job_id, generation),
            planned_nodes,
            nodes,
            self._live_ids(job, uid),
            transport,
        )
        changed |= set_condition(
            conditions,
            PLANNED,
            "True",
            "Planned",
            "; ".join([f"{len(planned.plan.pes)} PEs", *planned.plan.notices]),
            generation,
        )
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
            obj = await self._write_status(obj, status)
            status = status_written(obj, status)
            if changed:
                note = f"{len(planned.plan.pes)} PEs planned on {planned_nodes} schedulable nodes"
                await self.recorder.record(obj, "Normal", "Planned", note)
        if self._cached(obj):  # not for a Job deleted while it was planned: nothing would drop it
            self._planned[uid] = planned
        return planned, obj, status

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
        plan = plan_job(job, app, job_id=job_id, nodes=planned_nodes, ids_from=live or None)
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

    def _live_ids(self, job: Job, uid: str) -> dict[int, list[str]]:
        """The operators of each PE the job runs, by PE id: a plan made again (after a restart)
        keeps the ids that earlier edits gave them, which a fresh plan need not."""
        pes = self.pes.store.select_by_labels(
            {JOB_LABEL: str(job.metadata.name)}, str(job.metadata.namespace)
        )
        return pe_ids(pes, uid)

    def _cached_child(self, child: Desired) -> bool:
        """The cache of its kind holds ``child``; False for a kind without one (the transport
        Secret: Secrets are read by name only), whose create then says (409) if it is there."""
        cache = self.children.get(child.resource)
        return cache is not None and cache.store.get(child.key) is not None

    async def _create_missing(self, children: list[Desired], wanted: Callable[[Desired], bool]) -> int:
        """Create every child the caches lack (in order, a bounded batch at a time); 409 is success.

        A child the API server refuses for what it is (400, 413, 422) raises `SubmissionFailure`
        (`child_limits.refused`): trying it again would be refused again."""
        await adopt_orphans(self.client, children, self.children)  # left by a Job of the same name
        missing = [c for c in children if not self._cached_child(c) and wanted(c)]
        slots = asyncio.Semaphore(CREATE_CONCURRENCY)

        async def create(child: Desired) -> None:
            async with slots:
                # The Job deleted meanwhile, even while this create waited for the rate limit: stop.
                def guard() -> None:
                    stop_if_owner_deleted(self.jobs.store, child.body)

                try:
                    await self.client.create_if_absent(child.resource, child.body, before_send=guard)
                except ApiError as err:
                    if err.status in REFUSED:
                        raise refused(child, err) from None
                    raise

        # Each once what it needs exists (`creation_order`): a PE after the job's shared children
        # and its own ConfigMap and Service; a failed one fails those that wait for it.
        tasks: list[asyncio.Task[None]] = []

        async def after(child: Desired, waits: list[int]) -> None:
            await asyncio.gather(*(tasks[i] for i in waits))
            await create(child)

        for child, waits in zip(missing, creation_waits(missing), strict=True):
            tasks.append(asyncio.create_task(after(child, waits)))
        results = await asyncio.gather(*tasks, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:  # a refusal first: retrying cannot help it, whatever else failed
            raise next((e for e in errors if isinstance(e, SubmissionFailure)), errors[0])
        return len(missing)
