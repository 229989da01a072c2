"""Kubernetes Events with client-side aggregation.

Writes core/v1 Events (served by every cluster, and what `kubectl get events` reads) carrying both
generations of fields: `firstTimestamp`, `lastTimestamp`, `count` and `source`, which kubectl
prints and sorts on (`--sort-by=.lastTimestamp`), and `eventTime`, `reportingComponent`,
`reportingInstance`, `action` and `series`, which events.k8s.io/v1 readers see once the API server
converts the Event (it stores one form and serves both; events.k8s.io/v1 refuses the deprecated
timestamps on create, so only a core/v1 write can carry them).
The same (object, type, reason, action, note) repeated within ``window`` seconds updates the
existing Event's count, lastTimestamp and series instead of creating another object, and a
per-object token bucket (client-go's spam filter: burst 25, one more per 5 minutes) drops the
excess. Writes are delivered at least once (`event_delivery`: named before the first attempt,
retried with backoff from a bounded queue). `record_once` records one occurrence of a milestone
under a name derived from it, so recording it again (after a restart) leaves a single Event.
Recording never raises: a write the API server refuses is logged and counted.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from streams_k8s.k8s.backoff import TokenBucket
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.event_delivery import EventDelivery
from streams_k8s.k8s.objects import Object, meta

log = logging.getLogger(__name__)

# The same Events as the API server serves them to events.k8s.io/v1 readers.
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
EventKind = Literal["Normal", "Warning"]
_MAX_NOTE = 1024
_MAX_CACHE = 4096


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    last: float


def _micro_time(moment: datetime) -> str:
    """A MicroTime (eventTime, series.lastObservedTime)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _time(moment: datetime) -> str:
    """A Time, whole seconds (firstTimestamp, lastTimestamp)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_reference(obj: Object) -> Object:
    m = meta(obj)
    ref = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": m.get("name"),
        "namespace": m.get("namespace"),
        "uid": m.get("uid"),
        "resourceVersion": m.get("resourceVersion"),
    }
    return {k: v for k, v in ref.items() if v}


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        controller: str,
        instance: str,
        *,
        window: float = 600.0,
        burst: int = 25,
        refill_every: float = 300.0,
    ) -> None:
        self.client = client
        self.controller, self.instance = controller, instance
        self.window = window
        self._burst, self._rate = burst, 1.0 / refill_every
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._m = client.metrics.events_emitted
        self.delivery = EventDelivery(client, self._m)
        self._once: OrderedDict[str, None] = OrderedDict()  # names of milestone Events recorded

    async def record(
        self,
        obj: Object,
        kind: EventKind,
        reason: str,
        note: str,
        action: str = "Reconcile",
        related: Object | None = None,
    ) -> None:
        """Record that ``reason`` happened to ``obj`` (``reason`` in CamelCase, ``note`` for humans)."""
        m = meta(obj)
        note = note[:_MAX_NOTE]
        subject = str(m.get("uid") or f"{m.get('namespace')}/{m.get('name')}")
        related_ref = object_reference(related) if related is not None else {}
        key = (
            subject,
            kind,
            reason,
            action,
            note,
            str(related_ref.get("uid") or related_ref.get("name") or ""),
        )
        now = time.monotonic()
        try:
            if not self._allow(subject):
                self._m.labels("dropped").inc()
                return
            seen = self._seen.get(key)
            if seen is not None and now - seen.last < self.window and await self._bump(seen, now):
                self._seen.move_to_end(key)
                self._m.labels("aggregated").inc()
                return
            self._seen[key] = await self._create(obj, kind, reason, note, action, related_ref)
            self._seen.move_to_end(key)
            while len(self._seen) > _MAX_CACHE:
                self._seen.popitem(last=False)
            self._m.labels("created").inc()
        except (ApiError, ValueError) as exc:
            self._m.labels("failed").inc()
            log.warning("could not record event %s on %s: %s", reason, subject, exc)

    async def record_once(
        self,
        obj: Object,
        kind: EventKind,
        reason: str,
        note: str,
        occurrence: str,
        at: datetime | None = None,
        action: str = "Reconcile",
    ) -> None:
        """Record the milestone ``reason`` of ``obj`` once per ``occurrence`` (e.g. an attempt number):
        named after both, so a second call (another replica, a restart) finds it there (409)."""
        m = meta(obj)
        digest = hashlib.sha256(f"{m.get('uid')}/{reason}/{occurrence}".encode()).hexdigest()[:16]
        name = f"{m.get('name')}.{digest}"
        if name in self._once:
            return
        try:
            await self.delivery.create(self._body(obj, name, kind, reason, note[:_MAX_NOTE], action, {}, at))
            self._m.labels("created").inc()
        except (ApiError, ValueError) as exc:
            self._m.labels("failed").inc()
            log.warning("could not record event %s on %s: %s", reason, m.get("name"), exc)
            return
        self._once[name] = None
        while len(self._once) > _MAX_CACHE:
            self._once.popitem(last=False)

    async def close(self, grace: float) -> None:
        """Give Event writes still pending ``grace`` seconds to be delivered."""
        await self.delivery.close(grace)

    def _allow(self, subject: str) -> bool:
        bucket = self._buckets.get(subject)
        if bucket is None:
            bucket = self._buckets[subject] = TokenBucket(self._rate, self._burst)
            while len(self._buckets) > _MAX_CACHE:
                self._buckets.popitem(last=False)
        self._buckets.move_to_end(subject)
        return bucket.try_take()

    async def _create(
        self, obj: Object, kind: EventKind, reason: str, note: str, action: str, related: Object
    ) -> _Seen:
        m = meta(obj)
        name = f"{m.get('name')}.{secrets.token_hex(8)}"
        await self.delivery.create(self._body(obj, name, kind, reason, note, action, related))
        return _Seen(name, str(m.get("namespace") or "default"), 1, time.monotonic())

    def _body(
        self,
        obj: Object,
        name: str,
        kind: EventKind,
        reason: str,
        note: str,
        action: str,
        related: Object,
        at: datetime | None = None,
    ) -> Object:
        namespace = str(meta(obj).get("namespace") or "default")
        now = at or datetime.now(UTC)
        body: Object = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": object_reference(obj),
            "related": related or None,
            "type": kind,
            "reason": reason,
            "message": note,
            "action": action,
            "source": {"component": self.controller},
            "reportingComponent": self.controller,
            "reportingInstance": self.instance,
            "eventTime": _micro_time(now),
            "firstTimestamp": _time(now),
            "lastTimestamp": _time(now),
            "count": 1,
        }
        return {k: v for k, v in body.items() if v is not None}

    async def _bump(self, seen: _Seen, now: float) -> bool:
        """Count one more occurrence on the existing Event; False if it no longer exists."""
        moment = datetime.now(UTC)
        count = seen.count + 1
        patch: Object = {
            "count": count,
            "lastTimestamp": _time(moment),
            "series": {"count": count, "lastObservedTime": _micro_time(moment)},
        }
        if not await self.delivery.patch(seen.namespace, seen.name, patch):
            return False  # expired (Events live about an hour) or deleted: start a new one
        seen.count = count
        seen.last = now
        return True
