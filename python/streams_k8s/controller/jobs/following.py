"""Step 2 of a change of a running job (`jobs.rollout`): the job's children brought to the
change's target, in full once per target (and after a restart), later passes checking only the
name table and the children with an event since. First the target's new children (`create`: what
the change renders anew, so a width change of 1,000 PEs creates its 12 before anything else), then,
once the rollout has patched its first PEs, the rest (`follow`): the name table, the removal of what
it drops (PEs, and the host pools and regions of a plan change), Exports, Imports, regions and their
coordinator following (compared with the plan that runs, a rollback's with the undone edit's: what
the user, the runtime or the coordinator set on one the change leaves as it was is kept). A child
the API server refuses raises (`JobFailure`, `child_writes.ChildRefused`).
"""

from __future__ import annotations

from streams_k8s.api.contract import pe_service_name
from streams_k8s.controller.jobs import child_writes
from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.controller.jobs.edit_targets import EditTargets
from streams_k8s.controller.jobs.keeping import ChildKeeper
from streams_k8s.controller.jobs.plans import KeptPlan, Planner
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.status_writes import applied_job
from streams_k8s.controller.jobs.target import Target
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
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import CONFIGMAPS, SERVICES
from streams_k8s.k8s.objects import Object, ObjectKey, meta

# Children of a plan's host pools and regions: a change deletes those of what it drops.
_PLANNED_KINDS = (HOSTPOOLS, PARALLEL_REGIONS, CONSISTENT_REGION_OPERATORS, CONSISTENT_REGIONS)
# Those whose spec a change writes where the target's differs from what runs (a ParallelRegion's is
# the width, which the commit writes).
_FOLLOWED_KINDS = (HOSTPOOLS, CONSISTENT_REGION_OPERATORS, CONSISTENT_REGIONS)


class TargetFollower:
    """Brings a job's children to a change's target (see the module docs)."""

    def __init__(
        self,
        client: KubeClient,
        caches: JobCaches,
        keeper: ChildKeeper,
        planner: Planner,
        targets: EditTargets,
    ) -> None:
        self.client, self.caches, self.keeper, self.planner, self.targets = (
            client,
            caches,
            keeper,
            planner,
            targets,
        )

    async def create(self, obj: Object, target: Target) -> None:
        """Step 2's first writes: the target's children the caches lack (the PEs a change adds,
        their ConfigMaps and Services, the job's children a new plan adds), of those the change
        renders anew (`children.changes`; later passes: those with an event since, one deleted
        meanwhile is created again). Exports and Imports are made by `follow`, with what the
        runtime edited in them."""
        key = ObjectKey(str(meta(obj)["namespace"]), str(meta(obj)["name"]))
        refused: JobFailure | None = None
        with self.keeper.changes.to_check(key, target.planned.children) as pending:
            try:
                await self.keeper.create_missing(pending, lambda c: c.resource not in (EXPORTS, IMPORTS))
            except JobFailure as failure:  # raised below: a context manager cannot re-raise it (frozen)
                refused = failure
        if refused is not None:
            self.keeper.changes.forget(key)  # all checked again next time
            raise refused

    async def follow(self, obj: Object, status: JobStatusView, applied: KeptPlan, target: Target) -> None:
        """The rest of step 2 (idempotent), once `create` has run and the first PEs are patched:
        the name table, the removal of what the target drops (PEs, and the host pools and regions
        of a plan change), Exports, Imports, regions and their coordinator following. Done in full
        once per target (and after a restart); later passes check the name table."""
        namespace, name = str(meta(obj)["namespace"]), str(meta(obj)["name"])
        wanted = target.wanted
        table = self.caches.configmaps.store.get(ObjectKey(namespace, name))
        if not child_writes.name_table_written(table, wanted[(CONFIGMAPS, name)]):
            await child_writes.write_name_table(self.client, wanted, namespace, name)
        if not target.followed:
            await self._drop_and_follow(obj, status, applied, target)
        target.followed = True

    async def _drop_and_follow(
        self, obj: Object, status: JobStatusView, applied: KeptPlan, target: Target
    ) -> None:
        """Step 2's removal of what the target drops, and Exports, Imports and regions following."""
        namespace, name = str(meta(obj)["namespace"]), str(meta(obj)["name"])
        wanted = target.wanted
        live = self.caches.labelled(self.caches.pes, obj)
        record = status.upgrade
        # the PEs that run and those the record removes (a width change going back: whatever of the
        # PEs it added was made, a ConfigMap without its PE too)
        dropped = {str(meta(pe)["name"]) for pe in live}
        dropped.update(pe_service_name(name, i) for i in (record.removed if record is not None else ()))
        for pe_name in sorted(dropped - {pe.name for pe in target.pes}):
            for resource in (PES, SERVICES, CONFIGMAPS):
                await self.client.delete_if_present(resource, pe_name, namespace)
        for resource in _PLANNED_KINDS:
            for child in self.caches.labelled(self.caches.children[resource], obj):
                if (resource, child_name := str(meta(child)["name"])) not in wanted:
                    await self.client.delete_if_present(resource, child_name, namespace)
        undone = await self.targets.undone(obj, status, record, applied) if record is not None else None
        if undone is not None:  # a rollback: what the undone edit wrote is put back
            running = undone.wanted
        else:  # what runs: the applied spec's children at the widths its regions run at
            widths = record.widths if record is not None and record.target_widths is not None else None
            _, running_children = self.planner.children_at(
                applied_job(obj, status),
                str(meta(obj)["uid"]),
                applied,
                widths or self.planner.running_widths(obj, applied),
                status.generation_id or 0,
            )
            running = {(d.resource, d.name): d for d in running_children}
        # a width change leaves the application as it is: what the runtime edited in the Exports and
        # Imports is kept wherever the re-fusion moves their ports
        resized = record is not None and record.target_widths is not None
        await child_writes.follow_ports(self.client, wanted, namespace, name, None if resized else running)
        await child_writes.follow_regions(self.client, wanted, namespace, running, _FOLLOWED_KINDS)
