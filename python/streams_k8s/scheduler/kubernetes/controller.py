"""The vreplica scheduler as a controller component on the project's runtime.

`VReplicaScheduler(manager, config, source)` declares, on a `Manager`:
- informers on the StatefulSet, its namespace's pods and the nodes, which keep a
  `ClusterCache` (the scheduler's live state) current;
- the vpod source's informers; every vpod change is applied to the live state and queued;
- controller `<name>-vpods`: schedules one vpod per reconcile and records the placements and
  a `Scheduled` condition in its status; a shortfall requeues it after 5 s and triggers
- controller `<name>-autoscaler` (one key, the StatefulSet): on demand it only scales up; once
  per `refresh_period` it may scale down, or else compact (evicting vreplicas from the top
  pods through the evictor), and it removes the unschedulable mark from emptied pods the
  vpods need again. It acts only while this replica leads (`is_leader`, by default the
  Manager's leader election).

A topology change queues the vpods holding vreplicas on pods that will not run them (pods on
a cordoned, unreachable or vanished node, marked pods, pods past the replicas), so those
vreplicas move, and the vpods still short of vreplicas, so new pods are used at once. A pod
that is merely being recreated keeps its placements (the seed's "pod failure" case).

Writes to one vpod (its placements, an eviction) are serialised per vpod, so an eviction
never races the scheduling of the same vpod. The periodic run keeps its own cadence: on-demand
runs in between do not postpone it (upstream restarted its timer on every trigger, so a busy
scheduler never scaled down).

RBAC: list/watch statefulsets, pods and nodes; patch statefulsets/scale and pods; get the
vpods and patch their status (as the source needs); create and patch events.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.informer import EventType
from streams_k8s.k8s.keyed_locks import KeyedLocks
from streams_k8s.k8s.kinds import NODES, PODS, STATEFULSETS
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta
from streams_k8s.scheduler.autoscaler import Autoscaler
from streams_k8s.scheduler.framework import PluginRegistry
from streams_k8s.scheduler.kubernetes.cluster import ClusterCache
from streams_k8s.scheduler.kubernetes.objects import node_from_object, pod_from_object
from streams_k8s.scheduler.kubernetes.source import InvalidVPod, Outcome, VPodSource, split_key
from streams_k8s.scheduler.model import UNSCHEDULABLE_ANNOTATION, Placement, VPod
from streams_k8s.scheduler.policy import MAXFILLUP, Policy
from streams_k8s.scheduler.scheduler import REQUEUE_AFTER_SECONDS, Scheduler

log = logging.getLogger(__name__)

# evictor(pod name, vpod key, placement): take the vpod's vreplicas off that pod.
Evictor = Callable[[str, str, Placement], Awaitable[None]]


@dataclass(frozen=True)
class SchedulerConfig:
    namespace: str
    statefulset: str
    capacity: int  # vreplicas one pod holds
    policy: Policy | str = MAXFILLUP
    descheduler_policy: Policy | None = None
    refresh_period: float = 100.0  # periodic autoscaler run (scale-down, compaction grace)
    workers: int = 4
    pod_label_selector: str | None = None  # narrows the pod watch; pods are matched by name

    @property
    def name(self) -> str:
        return f"vreplica-scheduler-{self.statefulset}"


def marking_evictor(client: KubeClient, namespace: str, source: VPodSource) -> Evictor:
    """Evict as eventing-kafka did: mark the pod unschedulable so nothing is put back on it, then
    drop the vpod's placements there. The autoscaler removes the mark once the pod is empty and
    needed again, and a recreated pod starts without it."""

    async def evict(pod: str, key: str, placement: Placement) -> None:
        await patch_pod_annotation(client, namespace, pod, "true")
        await source.remove_placements(key, pod)

    return evict


async def patch_pod_annotation(client: KubeClient, namespace: str, pod: str, value: str | None) -> None:
    """Set (or, with None, remove) the unschedulable annotation; a pod already gone is fine."""
    try:
        await client.patch(
            PODS, pod, {"metadata": {"annotations": {UNSCHEDULABLE_ANNOTATION: value}}}, namespace
        )
    except ApiError as exc:
        if not exc.not_found:
            raise


class VReplicaScheduler:
    def __init__(
        self,
        manager: Manager,
        config: SchedulerConfig,
        source: VPodSource,
        *,
        evictor: Evictor | None = None,
        is_leader: Callable[[], bool] | None = None,
        registry: PluginRegistry | None = None,
    ) -> None:
        self.config = config
        self.client = manager.client
        self.source = source
        self.scheduler = Scheduler(config.policy, config.descheduler_policy, registry)
        self.autoscaler = Autoscaler(
            config.policy, refresh_period=config.refresh_period, now=time.monotonic()
        )
        self.cache = ClusterCache(self.scheduler, config.namespace, config.statefulset, config.capacity)
        self.evictor = evictor or marking_evictor(self.client, config.namespace, source)
        self._events = manager.event_recorder(config.name)
        self._is_leader = is_leader or (lambda: manager.leader is None or manager.leader.is_leader)
        self._invalid: dict[str, str] = {}
        self._locks = KeyedLocks()
        self._refresh_pending = False
        self._next_periodic = time.monotonic() + config.refresh_period
        self._statefulset_key = ObjectKey(config.namespace, config.statefulset)

        self.vpods = manager.controller(f"{config.name}-vpods", self._reconcile_vpod, workers=config.workers)
        self.autoscaling = manager.controller(f"{config.name}-autoscaler", self._reconcile_autoscaler)

        manager.informer(
            STATEFULSETS, namespace=config.namespace, field_selector=f"metadata.name={config.statefulset}"
        ).add_handler(self._on_statefulset)
        manager.informer(
            PODS, namespace=config.namespace, label_selector=config.pod_label_selector
        ).add_handler(self._on_pod)
        manager.informer(NODES).add_handler(self._on_node)
        source.watch(manager, self._on_vpod)
        self.autoscaling.queue.add(self._statefulset_key)

    # -- events --------------------------------------------------------------------------------

    def _on_statefulset(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        if self.cache.set_statefulset(new):
            self._topology_changed()

    def _on_pod(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        obj = new if new is not None else old
        if obj is not None and self.cache.set_pod(
            str(meta(obj).get("name") or ""), pod_from_object(new) if new is not None else None
        ):
            self._topology_changed()

    def _on_node(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        obj = new if new is not None else old
        if obj is not None and self.cache.set_node(
            str(meta(obj).get("name") or ""), node_from_object(new) if new is not None else None
        ):
            self._topology_changed()

    def _topology_changed(self) -> None:
        # One refresh per burst of events (a relist, a chunk of watch events).
        if not self._refresh_pending:
            self._refresh_pending = True
            asyncio.get_running_loop().call_soon(self._refresh)

    def _refresh(self) -> None:
        self._refresh_pending = False
        # Without the StatefulSet every vpod learns so (placements are left as they are).
        keys = list(self.cache.vpods) if self.cache.replicas is None else self.cache.needing_schedule()
        for key in keys:
            self.vpods.queue.add(split_key(key))

    def _on_vpod(self, key: str) -> None:
        try:
            vpod = self.source.get(key)
            self._invalid.pop(key, None)
        except InvalidVPod as exc:
            # Keep what it holds, exactly where it is, until its spec is fixed.
            vpod = VPod(key, sum(p.vreplicas for p in exc.placements), exc.placements)
            self._invalid[key] = exc.reason
        self.cache.set_vpod(key, vpod)
        self.vpods.queue.add(split_key(key))

    def trigger_autoscaler(self) -> None:
        self.autoscaling.queue.add(self._statefulset_key)

    # -- reconcilers ---------------------------------------------------------------------------

    async def _reconcile_vpod(self, object_key: ObjectKey) -> Requeue | None:
        key = str(object_key)
        async with self._locks.hold(key):
            vpod = self.cache.vpods.get(key)
            if vpod is None:
                return None
            invalid = self._invalid.get(key)
            if invalid is not None:
                await self.source.record(key, None, Outcome(False, "InvalidVReplicas", invalid))
                return None
            if self.cache.replicas is None:
                message = f"StatefulSet {self.config.namespace}/{self.config.statefulset} not found"
                await self.source.record(key, None, Outcome(False, "StatefulSetNotFound", message))
                return Requeue(after=REQUEUE_AFTER_SECONDS)
            result = self.scheduler.schedule(self.cache.state(), key)
            if result.error is not None:
                self.trigger_autoscaler()
                outcome = Outcome(False, "NotEnoughReplicas", str(result.error))
            else:
                pods = len(result.placements or ())
                message = f"{vpod.vreplicas} vreplicas on {pods} pod{'' if pods == 1 else 's'}"
                outcome = Outcome(True, "Scheduled", message)
            await self.source.record(key, result.placements, outcome)
            return Requeue(after=result.error.requeue_after) if result.error is not None else None

    async def _reconcile_autoscaler(self, _: ObjectKey) -> Requeue | None:
        now = time.monotonic()
        if not self._is_leader():
            self.autoscaler.demote()
            return Requeue(after=self.config.refresh_period)
        self.autoscaler.promote()
        if self.cache.replicas is None:
            return Requeue(after=REQUEUE_AFTER_SECONDS)
        periodic = now >= self._next_periodic
        if periodic:
            self._next_periodic = now + self.config.refresh_period
        state = self.cache.state()
        result = self.autoscaler.autoscale(state, attempt_scale_down=periodic, now=now)
        assert result is not None  # we lead
        if result.replicas != state.replicas:
            await self._scale(state.replicas, result.replicas)
        for eviction in result.evictions:
            async with self._locks.hold(eviction.vpod):
                placement = Placement(eviction.pod_name, eviction.vreplicas)
                log.info("evicting %s from %s (compaction)", eviction.vpod, eviction.pod_name)
                await self.evictor(eviction.pod_name, eviction.vpod, placement)
                self.cache.forget_reservation(eviction.vpod, eviction.pod_name)
        for pod in result.clear_annotations:
            log.info("pod %s is empty and needed: removing its unschedulable mark", pod)
            await patch_pod_annotation(self.client, self.config.namespace, pod, None)
        return Requeue(after=max(0.01, self._next_periodic - time.monotonic()))

    async def _scale(self, current: int, replicas: int) -> None:
        ns, name = self.config.namespace, self.config.statefulset
        log.info("scaling StatefulSet %s/%s from %d to %d replicas", ns, name, current, replicas)
        await self.client.scale(STATEFULSETS, name, replicas, ns)
        # Read it back now (write-through): a run before the watch catches up must not undo it.
        statefulset = await self.client.get(STATEFULSETS, name, ns)
        if self.cache.set_statefulset(statefulset):
            self._topology_changed()
        verb = "up" if replicas > current else "down"
        note = f"scaled {verb} from {current} to {replicas} replicas for the vreplicas of its vpods"
        await self._events.record(statefulset, "Normal", "Scaled", note, action="Scale")
