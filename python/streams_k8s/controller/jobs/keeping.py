"""A job's children kept as planned: those the caches lack created (orphans left by a Job of the
same name adopted first), deleted ones recreated (PEs when restartable), PE Services healed to
their planned selector and ports. Only children with an event since the last check are looked at
(`children.changes`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from streams_k8s.api.contract import pe_service_name
from streams_k8s.app.plan import Plan
from streams_k8s.controller.children.changes import ChildChanges
from streams_k8s.controller.children.creation_order import creation_waits
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.children.limits import REFUSED, refused
from streams_k8s.controller.children.services import service_update
from streams_k8s.controller.jobs.adoption import adopt_orphans
from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.controller.kinds import PES
from streams_k8s.controller.planning import JobFailure
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.controller import stop_if_owner_deleted
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.kinds import SERVICES
from streams_k8s.k8s.objects import Object, ObjectKey, meta

log = logging.getLogger(__name__)

# Children created concurrently by one submission (the client's QPS bucket still applies).
CREATE_CONCURRENCY = 16


class ChildKeeper:
    """Creates and keeps a job's children (see the module docs)."""

    def __init__(self, client: KubeClient, caches: JobCaches, recorder: EventRecorder) -> None:
        self.client, self.caches, self.recorder = client, caches, recorder
        self.changes = ChildChanges(caches.jobs, caches.children)  # by Job key, dropped when it goes

    async def create_missing(self, children: list[Desired], wanted: Callable[[Desired], bool]) -> int:
        """Create every child the caches lack (in order, a bounded batch at a time); 409 is success.

        A child the API server refuses for what it is (400, 413, 422) raises `JobFailure`
        (`child_limits.refused`): trying it again would be refused again."""
        await adopt_orphans(self.client, children, self.caches.children)  # left by a Job of the same name
        missing = [c for c in children if not self._cached(c) and wanted(c)]
        slots = asyncio.Semaphore(CREATE_CONCURRENCY)

        async def create(child: Desired) -> None:
            # The Job deleted meanwhile, even while this create waited for the rate limit: stop.
            def guard() -> None:
                stop_if_owner_deleted(self.caches.jobs.store, child.body)

            try:  # a slot per attempt: a create waiting out a Retry-After lets others go
                await self.client.create_if_absent(child.resource, child.body, before_send=guard, slot=slots)
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
            raise next((e for e in errors if isinstance(e, JobFailure)), errors[0])
        return len(missing)

    def _cached(self, child: Desired) -> bool:
        """The cache of its kind holds ``child``; False for a kind without one (the transport
        Secret: Secrets are read by name only), whose create then says (409) if it is there."""
        cache = self.caches.children.get(child.resource)
        return cache is not None and cache.store.get(child.key) is not None

    async def keep(self, obj: Object, plan: Plan, children: list[Desired]) -> JobFailure | None:
        """Recreate deleted children (PEs when restartable), adopt orphans, heal PE Services: of the
        children with an event since the last check; a refusal is returned."""
        m = meta(obj)
        try:
            with self.changes.to_check(ObjectKey(str(m["namespace"]), str(m["name"])), children) as pending:
                if not pending:
                    return None
                restartable = {pe_service_name(str(m["name"]), pe.id): pe.restartable for pe in plan.pes}
                recreated = await self.create_missing(
                    pending, lambda c: c.resource != PES or restartable.get(c.name, False)
                )
                if recreated:
                    await self.recorder.record(
                        obj, "Normal", "ChildrenRecreated", f"recreated {recreated} deleted objects"
                    )
                await self._correct_services(pending)
        except JobFailure as failure:
            return failure
        return None

    async def _correct_services(self, children: list[Desired]) -> None:
        """Give PE Services their planned selector and ports (`service_update`), conditionally on
        the version read, so a user port the REST API adds meanwhile is never lost: on a conflict
        the Service's own update event brings the job back here."""
        for child in children:
            if child.resource != SERVICES:
                continue
            current = self.caches.services.store.get(child.key)
            if current is None or meta(current).get("deletionTimestamp"):
                continue
            if (patch := service_update(current, child.body)) is None:
                continue
            try:
                await self.client.patch(SERVICES, child.name, patch, child.key.namespace)
            except ApiError as err:
                if err.status in REFUSED:  # as refused the next time: say so, do not retry
                    log.warning("%s", refused(child, err))
                elif not (err.conflict or err.not_found):
                    raise
