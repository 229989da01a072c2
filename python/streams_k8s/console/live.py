"""The console's view of the cluster: informer caches and a feed of which jobs changed.

The console reads only the informers' stores (``k8s.informer``): a page view, a JSON read or a
push costs the API server nothing. Served by the operator (``run --console-port``) it shares the
operator's informers (``Manager.informer`` returns the same watch for the same scope); served by
``streams-k8s console`` it runs its own, under its own Manager.

Every informer event names the job it touches (the Job itself, or an object labelled with the
job), or only a namespace (an Event about anything else). Subscribers (`Subscription`, one per
open page) collect these names until they read them, so a burst of changes costs a page one
refresh: level-triggered, like a controller's work queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from streams_k8s.api import ConsistentRegion, Job, ParallelRegion, ProcessingElement
from streams_k8s.api.contract import JOB_LABEL, STREAMS_SELECTOR
from streams_k8s.console.live_flow import FlowSource
from streams_k8s.console.live_state import event_time
from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.event_delivery import CORE_EVENTS
from streams_k8s.k8s.informer import EventType, Handler, Informer
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta

JOBS = Resource.of(Job)
PES = Resource.of(ProcessingElement)
PARALLEL_REGIONS = Resource.of(ParallelRegion)
CONSISTENT_REGIONS = Resource.of(ConsistentRegion)
# A namespace-wide change (an Event about no job): every page of the namespace refreshes.
NO_JOB = ""


@dataclass(slots=True, eq=False)  # one per page: compared (and hashed) by identity
class Subscription:
    """What changed since this subscriber last looked: (namespace, job) pairs, job "" for any."""

    changed: set[ObjectKey] = field(default_factory=set)
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def note(self, key: ObjectKey) -> None:
        self.changed.add(key)
        self.wake.set()

    async def next_changes(self) -> set[ObjectKey]:
        """Wait for a change, then take every change noted so far."""
        await self.wake.wait()
        self.wake.clear()
        taken, self.changed = self.changed, set()
        return taken


def _namespaced(obj: Object, name: object) -> ObjectKey:
    return ObjectKey(str(meta(obj).get("namespace") or ""), str(name or ""))


class LiveCluster:
    """Jobs, their PEs, pods, regions and the namespaces' Events, as the informers hold them."""

    def __init__(self, manager: Manager, flow: FlowSource | None = None) -> None:
        self.flow = flow  # the jobs' flows, when something reads the PEs' metrics (`live_flow`)
        self.jobs = manager.informer(JOBS)
        self.pes = manager.informer(PES)
        self.pods = manager.informer(PODS, label_selector=STREAMS_SELECTOR)
        self.parallel_regions = manager.informer(PARALLEL_REGIONS)
        self.consistent_regions = manager.informer(CONSISTENT_REGIONS)
        self.events = manager.informer(CORE_EVENTS)
        self._subscriptions: set[Subscription] = set()
        for informer in self.informers:
            informer.store.index_label(JOB_LABEL)
            informer.add_handler(self._handler(informer.resource.kind))
        if flow is not None:
            flow.add_listener(self.note_jobs)

    @property
    def informers(self) -> list[Informer]:
        return [self.jobs, self.pes, self.pods, self.parallel_regions, self.consistent_regions, self.events]

    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self.informers)

    def _handler(self, kind: str) -> Handler:
        def changed(_: EventType, old: Object | None, new: Object | None) -> None:
            obj = new if new is not None else old
            if obj is None:
                return
            key = self.job_of(obj, kind)
            for subscription in self._subscriptions:
                subscription.note(key)

        return changed

    def job_of(self, obj: Object, kind: str) -> ObjectKey:
        """The job an object belongs to: the Job itself, its job label, or an Event's object's."""
        if kind == JOBS.kind:
            return _namespaced(obj, meta(obj).get("name"))
        if kind == CORE_EVENTS.kind:
            involved = obj.get("involvedObject") or {}
            subject = _namespaced(obj, involved.get("name"))
            if involved.get("kind") == JOBS.kind:
                return subject
            informer = {PES.kind: self.pes, PODS.kind: self.pods}.get(str(involved.get("kind")))
            found = (informer.store.get(subject) if informer is not None else None) or {}
            return ObjectKey(
                subject.namespace, str((meta(found).get("labels") or {}).get(JOB_LABEL) or NO_JOB)
            )
        return _namespaced(obj, (meta(obj).get("labels") or {}).get(JOB_LABEL) or NO_JOB)

    def note_jobs(self, keys: Iterable[ObjectKey]) -> None:
        """Wake the pages of ``keys`` (jobs whose flow was read anew)."""
        for key in keys:
            for subscription in self._subscriptions:
                subscription.note(key)

    def subscribe(self) -> Subscription:
        subscription = Subscription()
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    # --- reads (the caches only) -----------------------------------------------------------

    def namespaces(self) -> list[str]:
        """The namespaces that hold a Job."""
        return sorted({key.namespace for key in self.jobs.store})

    def job_list(self, namespaces: Iterable[str]) -> list[Object]:
        allowed = set(namespaces)
        found = self.jobs.store.select(where=lambda j: meta(j).get("namespace") in allowed)
        return sorted(found, key=lambda j: (meta(j)["namespace"], meta(j)["name"]))

    def job(self, namespace: str, name: str) -> Object | None:
        return self.jobs.store.get(ObjectKey(namespace, name))

    def of_job(self, informer: Informer, namespace: str, name: str) -> list[Object]:
        """The objects of ``informer`` labelled with the job, by name."""
        found = informer.store.select_by_labels({JOB_LABEL: name}, namespace)
        return sorted(found, key=lambda o: str(meta(o).get("name")))

    def events_about(self, namespace: str, subjects: set[tuple[str, str]]) -> list[Object]:
        """The Events whose object is one of ``subjects`` ((kind, name) pairs), newest first."""

        def about(event: Object) -> bool:
            involved = event.get("involvedObject") or {}
            return (str(involved.get("kind")), str(involved.get("name"))) in subjects

        return sorted(self.events.store.select(namespace, about), key=event_time, reverse=True)

    def namespace_events(self, namespace: str, limit: int = 200) -> list[Object]:
        """The namespace's Events, newest first."""
        found = self.events.store.select(namespace)
        return sorted(found, key=event_time, reverse=True)[:limit]
