"""Object storage: one collection per resource, a global resourceVersion, bounded watch history
and fan-out of each change to the open watches (each event is encoded once per API version)."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.selectors import FieldMatcher, LabelSelector

log = logging.getLogger(__name__)

ObjKey = tuple[str, str]  # (namespace or "", name)
_TRACKED_OBJECTS = 100_000
MAX_WATCH_BACKLOG = 100_000


def clone(obj: Any) -> Any:
    """A deep copy of a JSON value (fast: one orjson round trip)."""
    return orjson.loads(orjson.dumps(obj))


Converter = Callable[[dict[str, Any]], dict[str, Any]]


def view(obj: dict[str, Any], api_version: str, convert: Converter | None = None) -> dict[str, Any]:
    """A stored object as a client of `api_version` sees it (converted for resource views)."""
    if convert is not None:
        obj = convert(obj)
    return obj if obj.get("apiVersion") == api_version else {**obj, "apiVersion": api_version}


class WatchEvent:
    """One change of one object. `obj` is the stored (never mutated) object after the change."""

    __slots__ = ("_encoded", "obj", "old", "rv", "type")

    def __init__(self, rv: int, type_: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self.rv = rv
        self.type = type_
        self.obj = obj
        self.old = old
        self._encoded: dict[str, bytes] = {}

    def object_bytes(self, api_version: str, convert: Converter | None = None) -> bytes:
        data = self._encoded.get(api_version)
        if data is None:
            data = orjson.dumps(view(self.obj, api_version, convert))
            self._encoded[api_version] = data
        return data

    def cached(self, key: str, encode: Callable[[], bytes]) -> bytes:
        """Another encoding of the object (e.g. a Table row), made once and shared by the watches
        that ask for it under the same key."""
        data = self._encoded.get(key)
        if data is None:
            data = self._encoded[key] = encode()
        return data

    def line(self, type_: str, api_version: str, convert: Converter | None = None) -> bytes:
        return (
            b'{"type":"' + type_.encode() + b'","object":' + self.object_bytes(api_version, convert) + b"}\n"
        )


class RowEncoder(Protocol):
    """A watch that wants another encoding than the object (Table rows: see table.TableRows)."""

    def line(self, type_: str, event: WatchEvent) -> bytes: ...


class WatchClosed(Exception):
    """Raised inside a watch stream to end it; `action` says how (see faults)."""


@dataclass(eq=False)
class Watcher:
    """An open watch: a filter and the queue of encoded lines waiting to be written."""

    rt: ResourceType
    api_version: str
    namespace: str | None
    labels: LabelSelector | None
    fields: FieldMatcher | None
    convert: Converter | None = None
    rows: RowEncoder | None = None
    queue: asyncio.Queue[bytes | str] = field(default_factory=asyncio.Queue)
    # Set by fault injection: "stall" holds output, "drop" aborts, "expire" sends 410 then ends.
    control: str | None = None
    flowing: asyncio.Event = field(default_factory=asyncio.Event)
    user: str = ""  # who opened it (faults spare the simulated cluster's watches unless asked)
    sent_rv: int = 0  # the resourceVersion of the last event queued: what its client is to reach

    def __post_init__(self) -> None:
        self.flowing.set()

    def matches(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if self.labels is not None and not self.labels.matches(meta.get("labels")):
            return False
        return self.fields is None or self.fields(obj)

    def offer(self, event: WatchEvent) -> None:
        """Queue the event as this watch sees it: selector transitions become ADDED/DELETED.
        A watcher too slow to keep up is ended with 410 Expired, as the API server does."""
        if self.control == "expire":
            return
        if self.queue.qsize() >= MAX_WATCH_BACKLOG:
            self.signal("expire")
            return
        now = self.matches(event.obj) if event.type != "DELETED" else False
        before = self.matches(event.old)
        if event.type == "DELETED":
            kind = "DELETED" if self.matches(event.obj) else None
        elif now and before:
            kind = event.type
        elif now:
            kind = "ADDED"
        elif before:
            kind = "DELETED"
        else:
            kind = None
        if kind is not None:
            rows = self.rows
            line = (
                event.line(kind, self.api_version, self.convert) if rows is None else rows.line(kind, event)
            )
            self.queue.put_nowait(line)
            self.sent_rv = event.rv

    def line(self, type_: str, event: WatchEvent) -> bytes:
        if self.rows is not None:
            return self.rows.line(type_, event)
        return event.line(type_, self.api_version, self.convert)

    def signal(self, action: str) -> None:
        """Ask the stream writer to stall, drop or expire (fault injection)."""
        self.control = action
        if action == "stall":
            self.flowing.clear()
        else:
            self.flowing.set()
        self.queue.put_nowait(action)


class Collection:
    """The objects of one resource plus its bounded event history and open watches."""

    def __init__(self, rt: ResourceType, history_size: int) -> None:
        self.rt = rt
        self.objects: dict[ObjKey, dict[str, Any]] = {}
        self.history: deque[WatchEvent] = deque(maxlen=history_size)
        self.compacted_rv = 0
        self.watchers: set[Watcher] = set()

    def record(self, event: WatchEvent) -> None:
        if self.history.maxlen is not None and len(self.history) == self.history.maxlen:
            self.compacted_rv = self.history[0].rv
        self.history.append(event)
        for watcher in self.watchers:
            watcher.offer(event)

    def events_since(self, rv: int) -> Iterator[WatchEvent]:
        for event in self.history:
            if event.rv > rv:
                yield event

    def compact(self, rv: int) -> None:
        self.history.clear()
        self.compacted_rv = rv


Listener = Callable[[ResourceType, WatchEvent], None]


class Store:
    """All collections, the global resourceVersion counter, and uid/owner indexes for GC."""

    def __init__(self, history_size: int = 10_000, object_history: int = 50) -> None:
        self.rv = 1
        self.history_size = history_size
        self.object_history_size = object_history
        self.collections: dict[tuple[str, str], Collection] = {}
        self.by_uid: dict[str, tuple[tuple[str, str], ObjKey]] = {}
        self.dependents: dict[str, set[str]] = {}  # owner uid -> dependent uids
        self.listeners: list[Listener] = []
        # Per-object change lists for assertions, for at most _TRACKED_OBJECTS objects (oldest dropped).
        self.object_history: dict[tuple[tuple[str, str], ObjKey], list[WatchEvent]] = {}

    def collection(self, rt: ResourceType) -> Collection:
        coll = self.collections.get(rt.store_key)
        if coll is None:
            coll = Collection(rt, self.history_size)
            self.collections[rt.store_key] = coll
        if rt.store_key == rt.key:
            coll.rt = rt  # the owning resource (a CRD update may have changed it)
        return coll

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def get(self, rt: ResourceType, key: ObjKey) -> dict[str, Any] | None:
        coll = self.collections.get(rt.store_key)
        return coll.objects.get(key) if coll else None

    def lookup_uid(self, uid: str) -> dict[str, Any] | None:
        where = self.by_uid.get(uid)
        if where is None:
            return None
        coll = self.collections.get(where[0])
        return coll.objects.get(where[1]) if coll else None

    def put(self, rt: ResourceType, key: ObjKey, obj: dict[str, Any], type_: str) -> WatchEvent:
        """Store `obj` (whose resourceVersion the caller set from next_rv) and publish the change."""
        coll = self.collection(rt)
        old = coll.objects.get(key)
        coll.objects[key] = obj
        self._index(rt, obj, old)
        return self._publish(
            rt, coll, key, WatchEvent(int(obj["metadata"]["resourceVersion"]), type_, obj, old)
        )

    def remove(self, rt: ResourceType, key: ObjKey, final: dict[str, Any]) -> WatchEvent:
        coll = self.collection(rt)
        old = coll.objects.pop(key)
        self._index(rt, None, old)
        return self._publish(
            rt, coll, key, WatchEvent(int(final["metadata"]["resourceVersion"]), "DELETED", final, old)
        )

    def _publish(self, rt: ResourceType, coll: Collection, key: ObjKey, event: WatchEvent) -> WatchEvent:
        coll.record(event)
        if self.object_history_size:
            hist = self.object_history.get((rt.store_key, key))
            if hist is None:
                hist = self.object_history[(rt.store_key, key)] = []
                if len(self.object_history) > _TRACKED_OBJECTS:
                    del self.object_history[next(iter(self.object_history))]
            hist.append(event)
            if len(hist) > 2 * self.object_history_size:  # trim in batches: amortised O(1)
                del hist[: -self.object_history_size]
        for listener in self.listeners:
            try:
                listener(rt, event)
            except Exception:  # a simulated controller's bug must not undo or fail the write
                log.exception("sandbox listener %r failed on %s %s", listener, event.type, key)
        return event

    def _index(self, rt: ResourceType, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        if old is not None:
            uid = old["metadata"]["uid"]
            if new is None:
                self.by_uid.pop(uid, None)
            for ref in old["metadata"].get("ownerReferences") or []:
                deps = self.dependents.get(ref.get("uid", ""))
                if deps is not None:
                    deps.discard(uid)
                    if not deps:
                        del self.dependents[ref["uid"]]
        if new is not None:
            meta = new["metadata"]
            ns = meta.get("namespace", "")
            self.by_uid[meta["uid"]] = (rt.store_key, (ns, meta["name"]))
            for ref in meta.get("ownerReferences") or []:
                if ref.get("uid"):
                    self.dependents.setdefault(ref["uid"], set()).add(meta["uid"])
