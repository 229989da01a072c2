"""Where vpods come from and where their placements go: the `VPodSource` protocol.

The scheduler component only needs four things from its vpods: to hear when one changes,
to read one (key, vreplicas, committed placements), to record the outcome of scheduling it
(placements plus a `Scheduled` condition), and to drop its placements on a pod (eviction).
Anything can be a source: a custom resource per vpod (`CustomResourceVPodSource`, below),
or, later, the consistent-region coordinator pool, where each job is a vpod and each of its
consistent regions a vreplica.

`CustomResourceVPodSource` reads a namespaced custom resource (Knative's `Placeable` duck
type):

    spec:
      vreplicas: 3                    # the field name is configurable
    status:
      observedGeneration: 2
      placements: [{podName: pool-0, vreplicas: 2}, {podName: pool-1, vreplicas: 1}]
      conditions: [{type: Scheduled, status: "True", reason: Scheduled, ...}]

Its status must be a subresource: the placements are written there, never into the spec.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key
from streams_k8s.scheduler.model import Placement, VPod

log = logging.getLogger(__name__)

SCHEDULED = "Scheduled"


@dataclass(frozen=True)
class Outcome:
    """How scheduling a vpod went, for its `Scheduled` condition (reason in CamelCase)."""

    scheduled: bool
    reason: str
    message: str


class InvalidVPod(Exception):
    """The vpod's spec cannot be scheduled. Its committed placements are kept as they are."""

    def __init__(self, key: str, message: str, placements: tuple[Placement, ...]) -> None:
        super().__init__(f"vpod {key}: {message}")
        self.key = key
        self.reason = message
        self.placements = placements


class VPodSource(Protocol):
    def watch(self, manager: Manager, changed: Callable[[str], None]) -> None:
        """Declare the informers on `manager`; call `changed(key)` on every add, update and delete."""

    def keys(self) -> Iterable[str]:
        """Keys of every vpod the source holds (`namespace/name`)."""

    def get(self, key: str) -> VPod | None:
        """The vpod (None when gone); raises `InvalidVPod` when its spec cannot be scheduled."""

    async def record(self, key: str, placements: tuple[Placement, ...] | None, outcome: Outcome) -> None:
        """Write the placements (None: leave them) and the outcome to the vpod's status."""

    async def remove_placements(self, key: str, pod_name: str) -> None:
        """Take every placement on `pod_name` out of the vpod's status (eviction)."""


def placements_to_wire(placements: Iterable[Placement]) -> list[dict[str, Any]]:
    return [{"podName": p.pod_name, "vreplicas": p.vreplicas} for p in placements]


def placements_from_wire(raw: Any) -> tuple[Placement, ...]:
    """`status.placements`, skipping entries that are not `{podName: str, vreplicas: int > 0}`."""
    out = []
    for entry in raw if isinstance(raw, list) else ():
        if not isinstance(entry, dict):
            continue
        name, vreplicas = entry.get("podName"), entry.get("vreplicas")
        if isinstance(name, str) and name and type(vreplicas) is int and vreplicas > 0:
            out.append(Placement(name, vreplicas))
    return tuple(out)


def split_key(key: str) -> ObjectKey:
    namespace, _, name = key.rpartition("/")
    return ObjectKey(namespace, name)


class CustomResourceVPodSource:
    """Vpods stored as custom resources with `spec.<field>` vreplicas and `status.placements`."""

    def __init__(
        self,
        resource: Resource,
        *,
        vreplicas_field: str = "vreplicas",
        namespace: str | None = None,
        label_selector: str | None = None,
        component: str = "vreplica-scheduler",
    ) -> None:
        if not resource.namespaced:
            raise ValueError(f"vpods must be namespaced; {resource} is cluster-scoped")
        self.resource = resource
        self.vreplicas_field = vreplicas_field
        self.namespace = namespace
        self.label_selector = label_selector
        self.component = component
        self._informer: Informer | None = None
        self._client: KubeClient | None = None
        self._events: EventRecorder | None = None
        # The status we last wrote per vpod: the cache may not show it yet.
        self._written: dict[str, dict[str, Any]] = {}

    def watch(self, manager: Manager, changed: Callable[[str], None]) -> None:
        self._client = manager.client
        self._events = manager.event_recorder(self.component)
        self._informer = manager.informer(
            self.resource, namespace=self.namespace, label_selector=self.label_selector
        )

        def handler(kind: str, old: Object | None, new: Object | None) -> None:
            obj = new if new is not None else old
            if obj is not None:
                key = str(object_key(obj))
                if kind == "delete":
                    self._written.pop(key, None)
                changed(key)

        self._informer.add_handler(handler)
        for obj in self._informer.store.select():
            changed(str(object_key(obj)))

    @property
    def informer(self) -> Informer:
        if self._informer is None:
            raise RuntimeError("the vpod source is not watching yet: call watch(manager, ...) first")
        return self._informer

    def keys(self) -> Iterable[str]:
        return [str(key) for key in self.informer.store]

    def _object(self, key: str) -> Object | None:
        return self.informer.store.get(split_key(key))

    def get(self, key: str) -> VPod | None:
        obj = self._object(key)
        if obj is None or meta(obj).get("deletionTimestamp"):
            return None
        placements = placements_from_wire(_mapping(obj.get("status")).get("placements"))
        vreplicas = _mapping(obj.get("spec")).get(self.vreplicas_field)
        if type(vreplicas) is not int or vreplicas < 0:
            message = f"spec.{self.vreplicas_field} must be a non-negative integer, got {vreplicas!r}"
            raise InvalidVPod(key, message, placements)
        return VPod(key, vreplicas, placements)

    async def record(self, key: str, placements: tuple[Placement, ...] | None, outcome: Outcome) -> None:
        obj = self._object(key)
        if obj is None:
            return
        current = _mapping(obj.get("status"))
        status: dict[str, Any] = {
            "placements": current.get("placements") or [],
            "conditions": [dict(c) for c in current.get("conditions") or () if isinstance(c, dict)],
        }
        if placements is not None:
            status["placements"] = placements_to_wire(placements)
        generation = meta(obj).get("generation")
        set_condition(
            status["conditions"],
            SCHEDULED,
            "True" if outcome.scheduled else "False",
            outcome.reason,
            outcome.message,
            observed_generation=generation if isinstance(generation, int) else None,
        )
        if isinstance(generation, int):
            status["observedGeneration"] = generation
        seen = {k: current.get(k) for k in status}
        written = self._written.get(key)
        if status == seen and (written is None or all(written.get(k) == v for k, v in status.items())):
            return
        await self._patch_status(key, status)
        if not outcome.scheduled and self._events is not None:
            await self._events.record(obj, "Warning", outcome.reason, outcome.message, action="Schedule")

    async def remove_placements(self, key: str, pod_name: str) -> None:
        assert self._client is not None
        name = split_key(key)
        try:
            obj = await self._client.get(self.resource, name.name, name.namespace)
        except ApiError as exc:
            if exc.not_found:
                return
            raise
        placements = placements_from_wire(_mapping(obj.get("status")).get("placements"))
        kept = tuple(p for p in placements if p.pod_name != pod_name)
        if kept != placements:
            await self._patch_status(key, {"placements": placements_to_wire(kept)})

    async def _patch_status(self, key: str, status: dict[str, Any]) -> None:
        assert self._client is not None
        name = split_key(key)
        try:
            updated = await self._client.patch_status(self.resource, name.name, status, name.namespace)
        except ApiError as exc:
            if exc.not_found:  # deleted meanwhile: nothing left to record
                self._written.pop(key, None)
                return
            raise
        written = _mapping(updated.get("status"))
        self._written[key] = {k: written.get(k) for k in ("placements", "conditions", "observedGeneration")}


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
