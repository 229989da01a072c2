"""Nodes prepared for a job's host pools: pool labels and exclusive-pool taints, removed with the job.

Keyed by Job. ``plan_placement`` over the job's host pools and PEs says which nodes a
materialised pool uses (label ``<namespace>.hostpool.streams.ibm.com/<job>-<poolIndex>=<i>``)
and which exclusive pools taint them (``streams.ibm.com/exclusive-pool=<owner>:NoSchedule``); this
controller makes the nodes say so, and takes both away when the plan or the job no longer needs them.

Cleanup hook: before the first node is touched the Job gets the finalizer
``streams.ibm.com/node-placement`` and the annotation ``streams.ibm.com/placed-pools`` (the pool
indexes whose labels/taints may be on nodes), in one write. When the Job is deleted the labels
and taints of those pools are removed from every node, then the finalizer. Jobs without a
materialised pool are never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import orjson

from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.api.host_pool import HostPool, HostPoolSpec
from streams_k8s.api.job import Job
from streams_k8s.controller.kinds import HOSTPOOLS, JOBS, PES
from streams_k8s.controller.placement.constraints import (
    EXCLUSIVE_TAINT_KEY,
    NodeInfo,
    PlacedPe,
    PlacementError,
    PlacementPlan,
    exclusive_owner,
    plan_placement,
    pool_label_key,
)
from streams_k8s.controller.placement.pool_uses import PoolUses
from streams_k8s.k8s.controller import Requeue, generation_changed
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.kinds import NODES
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta

log = logging.getLogger(__name__)

FINALIZER = "streams.ibm.com/node-placement"
PLACED_POOLS_ANNOTATION = "streams.ibm.com/placed-pools"


def unprepared_nodes(plan: PlacementPlan, nodes: Iterable[NodeInfo]) -> list[str]:
    """Nodes that still lack a label or taint the plan gives them."""
    by_name = {n.name: n for n in nodes}
    missing = []
    for name in sorted(set(plan.node_labels) | set(plan.node_taints)):
        node = by_name.get(name)
        if (
            node is None
            or any(node.labels.get(k) != v for k, v in plan.node_labels.get(name, {}).items())
            or any(t not in node.taints for t in plan.node_taints.get(name, ()))
        ):
            missing.append(name)
    return missing


def _placed_pools(job: Object) -> set[int]:
    raw = meta(job).get("annotations", {}).get(PLACED_POOLS_ANNOTATION)
    try:
        value = orjson.loads(raw) if raw else []
    except orjson.JSONDecodeError:
        return set()
    return {int(i) for i in value if isinstance(i, int)}


def node_changes(
    nodes: Sequence[Object], namespace: str, job: str, pools: Iterable[int], plan: PlacementPlan | None
) -> dict[str, dict[str, object]]:
    """Merge patches that bring each node's labels/taints of ``pools`` to what ``plan`` wants."""
    pools = set(pools)
    keys = {pool_label_key(namespace, job, i) for i in pools}
    owners = {exclusive_owner(namespace, job, i) for i in pools}
    patches: dict[str, dict[str, object]] = {}
    for node in nodes:
        name = meta(node)["name"]
        have_labels = meta(node).get("labels") or {}
        want_labels = plan.node_labels.get(name, {}) if plan is not None else {}
        label_patch: dict[str, str | None] = {
            k: None for k in keys if k in have_labels and k not in want_labels
        }
        label_patch.update({k: v for k, v in want_labels.items() if have_labels.get(k) != v})
        taints = list((node.get("spec") or {}).get("taints") or ())
        ours = [t for t in taints if t.get("key") == EXCLUSIVE_TAINT_KEY and t.get("value") in owners]
        others = [t for t in taints if t not in ours]
        wanted = [t.to_wire() for t in (plan.node_taints.get(name, []) if plan is not None else [])]
        patch: dict[str, object] = {}
        if label_patch:
            patch["metadata"] = {"labels": label_patch}
        if sorted(map(orjson.dumps, ours)) != sorted(map(orjson.dumps, wanted)):
            patch.setdefault("metadata", {})["resourceVersion"] = meta(node).get("resourceVersion")  # type: ignore[index]
            patch["spec"] = {"taints": others + wanted}
        if patch:
            patches[name] = patch
    return patches


class NodePlacementController:
    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.jobs = manager.informer(JOBS)
        self.pes = manager.informer(PES)
        self.hostpools = manager.informer(HOSTPOOLS)
        self.nodes: Informer = manager.informer(NODES)
        self.events = manager.event_recorder("node-placement")
        self.pool_uses = PoolUses(self.pes)  # the pool locations a job's PEs use
        self.hostpools.store.index_label(JOB_LABEL)  # "the pools of job J" on every reconcile: no scan
        self.controller = manager.controller("node-placement", self.reconcile, workers=2)
        self.controller.watch(self.jobs, predicates=[generation_changed])
        self.controller.owns(self.hostpools, Job.kind_name)
        self.controller.owns(self.pes, Job.kind_name, predicates=[_added_or_deleted])

    def retained(self) -> dict[str, int]:
        """Entries kept per PE (none once every PE is gone)."""
        return {"placed-pes": len(self.pool_uses)}

    def _children(self, informer: Informer, job: Object) -> list[Object]:
        m = meta(job)
        uid = m.get("uid")
        return [
            o
            for o in informer.store.select_by_labels({JOB_LABEL: str(m.get("name"))}, m.get("namespace"))
            if any(r.get("uid") == uid for r in meta(o).get("ownerReferences") or ())
        ]

    async def reconcile(self, key: ObjectKey) -> Requeue | None:
        job = self.jobs.store.get(key)
        if job is None:
            return None
        finalizers = list(meta(job).get("finalizers") or ())
        placed = _placed_pools(job)
        nodes = self.nodes.store.select()
        if meta(job).get("deletionTimestamp"):
            if FINALIZER in finalizers:
                await self._patch_nodes(node_changes(nodes, key.namespace, key.name, placed, None))
                finalizers.remove(FINALIZER)
                await self.client.patch(
                    JOBS,
                    key.name,
                    {
                        "metadata": {
                            "finalizers": finalizers,
                            "resourceVersion": meta(job).get("resourceVersion"),
                        }
                    },
                    key.namespace,
                )
            return None

        pools: list[HostPoolSpec] = [HostPool.from_wire(h).spec for h in self._children(self.hostpools, job)]
        if not pools:
            return None
        present = {p.index for p in pools}
        uid = str(meta(job).get("uid"))
        pes = [pe for pe in self.pool_uses.of(key, uid) if _pool_index(pe) in present]
        try:
            plan = plan_placement(
                namespace=key.namespace,
                job=key.name,
                pools=pools,
                pes=pes,
                nodes=[NodeInfo.from_wire(n) for n in nodes],
                with_pods=False,
            )
        except PlacementError as err:
            await self.events.record(job, "Warning", "PlacementFailed", str(err), "PlaceNodes")
            return None
        wanted = set(plan.pool_nodes)
        if not wanted and not placed:
            return None
        if FINALIZER not in finalizers or not wanted <= placed:
            annotation = orjson.dumps(sorted(placed | wanted)).decode()
            await self.client.patch(
                JOBS,
                key.name,
                {
                    "metadata": {
                        "finalizers": [*[f for f in finalizers if f != FINALIZER], FINALIZER],
                        "annotations": {PLACED_POOLS_ANNOTATION: annotation},
                        "resourceVersion": meta(job).get("resourceVersion"),
                    }
                },
                key.namespace,
            )
        await self._patch_nodes(node_changes(nodes, key.namespace, key.name, placed | wanted, plan))
        return None

    async def _patch_nodes(self, patches: dict[str, dict[str, object]]) -> None:
        for name, patch in patches.items():
            await self.client.patch(NODES, name, patch)
            log.info("node %s: %s", name, patch)


def _pool_index(pe: PlacedPe) -> int | None:
    location = pe.placement.host_pool_location
    return location.pool_index if location is not None else None


def _added_or_deleted(old: Object | None, new: Object | None) -> bool:
    return old is None or new is None


def setup(manager: Manager) -> NodePlacementController:
    return NodePlacementController(manager)


__all__ = ["FINALIZER", "NodePlacementController", "node_changes", "setup", "unprepared_nodes"]
