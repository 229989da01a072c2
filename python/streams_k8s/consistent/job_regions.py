"""The consistent regions of each job a coordinator runs: built from their ConsistentRegion CRs
(and rebuilt when a spec changes; a region that cannot run refused with ``Accepted=False``), fed
their health from the job's PEs and pods, and their FSM state persisted to the CR's status.

The spec's requests (``checkpointRequest``, ``holdDrains``, ``startRequest``) are not part of the
region's description: editing them never rebuilds it. Each new nonce becomes one FSM event; the
status records the nonce taken on, so a restarted coordinator does not act on it twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from streams_k8s.api.consistent_region import (
    ConsistentRegion,
    ConsistentRegionSpec,
    ConsistentRegionStatus,
    RegionState,
)
from streams_k8s.api.processing_element import ProcessingElement
from streams_k8s.consistent.coordinator_objects import job_of, pod_observation
from streams_k8s.consistent.fsm import (
    CheckpointNow,
    Health,
    HoldDrains,
    InvalidRegion,
    RegionMachine,
    Start,
)
from streams_k8s.consistent.health import region_health
from streams_k8s.consistent.kinds import CONSISTENT_REGIONS
from streams_k8s.consistent.local import LocalCoordinator
from streams_k8s.consistent.metrics import CoordinatorMetrics
from streams_k8s.consistent.udp import UdpPush
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta

# Condition set on a ConsistentRegion the coordinator cannot run (and removed once it can).
log = logging.getLogger(__name__)

ACCEPTED = "Accepted"
# The spec fields that ask for something rather than describe the region.
REQUEST_FIELDS = frozenset({"checkpoint_request", "hold_drains", "start_request"})


def _description(spec: ConsistentRegionSpec) -> dict[str, Any]:
    """What the region is built from: a change of it rebuilds (and resets) the region."""
    return spec.model_dump(exclude=set(REQUEST_FIELDS))


@dataclass
class JobRun:
    """One job's regions on this pod."""

    loop: LocalCoordinator
    task: asyncio.Task[None]
    restarted: bool  # its coordinator ran before: every region it takes on resets
    # region -> (CR name, its description)
    built_from: dict[int, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    # region -> request -> what was submitted for it and not yet seen in the FSM's records
    asked: dict[int, dict[str, object]] = field(default_factory=dict)
    health: dict[int, Health] = field(default_factory=dict)  # last health fed to each region
    push: UdpPush | None = None


class JobRegions:
    """The regions of the jobs a coordinator runs (`coordinator.Coordinator` sets the state)."""

    manager: Manager
    jobs: dict[ObjectKey, JobRun]
    metrics: CoordinatorMetrics
    pes: Informer
    pods: Informer

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
            name = meta(obj)["name"]
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
            built = (name, _description(region.spec))
            if run.built_from.get(index) == built:
                self._take_requests(run, index, region.spec)
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
            run.built_from[index] = built
            run.health.pop(index, None)
            run.asked.pop(index, None)
            run.loop.add_region(machine, restarted=was_running or run.restarted or ran_before)
            self._take_requests(run, index, region.spec)
        for index in set(run.loop.regions) - seen:
            run.loop.remove_region(index)
            run.built_from.pop(index, None)
            run.health.pop(index, None)
            run.asked.pop(index, None)

    @staticmethod
    def _take_requests(run: JobRun, index: int, spec: ConsistentRegionSpec) -> None:
        """Submit the spec's requests the region has not taken on yet (once per nonce)."""
        records = run.loop.regions[index].records
        asked = run.asked.setdefault(index, {})
        nonce = spec.checkpoint_request
        taken = records.checkpoint_request.nonce if records.checkpoint_request is not None else None
        if nonce is not None and nonce not in (taken, asked.get("checkpoint")):
            asked["checkpoint"] = nonce
            run.loop.submit(index, CheckpointNow(nonce))
        held = bool(spec.hold_drains)
        if held != asked.get("hold", run.loop.regions[index].drains_held):
            asked["hold"] = held
            run.loop.submit(index, HoldDrains(held))
        start = spec.start_request
        taken = records.start_request.nonce if records.start_request is not None else None
        if start is not None and start.nonce not in (taken, asked.get("start")):
            asked["start"] = start.nonce
            run.loop.submit(index, Start(start.nonce, start.mode))
            run.health.pop(index, None)  # the region waits for its health again: feed it

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
