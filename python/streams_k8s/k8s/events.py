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
excess. Recording never raises: Events are best-effort, conditions are the durable record.
"""

from __future__ import annotations

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
from streams_k8s.k8s.objects import Object, meta

log = logging.getLogger(__name__)

CORE_EVENTS = Resource("", "v1", "events", "Event")
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
        namespace = str(m.get("namespace") or "default")
        name = f"{m.get('name')}.{secrets.token_hex(8)}"
        now = datetime.now(UTC)
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
        await self.client.create(CORE_EVENTS, {k: v for k, v in body.items() if v is not None})
        return _Seen(name, namespace, 1, time.monotonic())

    async def _bump(self, seen: _Seen, now: float) -> bool:
        """Count one more occurrence on the existing Event; False if it no longer exists."""
        moment = datetime.now(UTC)
        count = seen.count + 1
        patch: Object = {
            "count": count,
            "lastTimestamp": _time(moment),
            "series": {"count": count, "lastObservedTime": _micro_time(moment)},
        }
        try:
            await self.client.patch(CORE_EVENTS, seen.name, patch, seen.namespace)
        except ApiError as exc:
            if exc.not_found:  # expired (Events live about an hour) or deleted: start a new one
                return False
            raise
        seen.count = count
        seen.last = now
        return True
