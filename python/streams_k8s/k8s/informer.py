"""Reflector + informer: list, then watch from the list's resourceVersion, into a Store.

The state machine (kube-rs ``watcher``, client-go ``Reflector``): list every page and swap the
store atomically, sending adds/updates for what changed and synthetic deletes for what vanished;
then watch from that resourceVersion with bookmarks, tracking the RV of every event. A watch the
server closes (``timeoutSeconds``, at most twice ``watch_timeout``) resumes from the last RV, and
counts as a sign of life; a watch that sends nothing (no event, bookmark or end) for the
inactivity timeout is stalled: it is cut and the cache relisted (what the stall hid is then
reported as changes); 410 Gone means relist. Failures back off with jitter, from the start
again after each healthy watch. ``run`` never returns: every failure is counted, logged and
retried. An informer of several namespaces runs one of each (its parts) into its store: a part's
relist swaps only its own namespace, and it is synced once they all are.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import time
from collections.abc import Callable
from typing import Literal, NoReturn

import aiohttp
import orjson

from streams_k8s.k8s.backoff import Backoff
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.metrics import RuntimeMetrics
from streams_k8s.k8s.objects import Object, ObjectKey, object_key, prune_for_cache, resource_version
from streams_k8s.k8s.store import Store

log = logging.getLogger(__name__)

EventType = Literal["add", "update", "delete"]
# (event type, old object or None, new object or None); handlers only enqueue, so they are sync.
# "add": (None, new); "update": (old, new); "delete": (the object's last known state, None), the
# same whether a watch reported the deletion or a relist found the object gone.
Handler = Callable[[EventType, Object | None, Object | None], None]
Transform = Callable[[Object], Object]
# What an informer lists and watches: one namespace, several (one list and watch each, what a Role
# per namespace allows, into one store), or (None) every namespace.
Scope = str | tuple[str, ...] | None


class WatchStalled(Exception):
    """The watch stream sent nothing (not even a bookmark) for the inactivity timeout."""


class WatchExpired(Exception):
    """The server no longer has history from our resourceVersion (410 Gone): relist."""


class Informer:
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        namespace: Scope = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        watch_timeout: float = 5.0,
        inactivity_timeout: float = 15.0,
        connect_timeout: float = 10.0,
        backoff: Backoff | None = None,
        transform: Transform = prune_for_cache,
        metrics: RuntimeMetrics | None = None,
        name: str | None = None,
        store: Store | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        several = namespace if isinstance(namespace, tuple) and resource.namespaced else ()
        self.namespace = namespace if isinstance(namespace, str) and resource.namespaced else None
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.inactivity_timeout = inactivity_timeout
        self.connect_timeout = connect_timeout
        self.backoff = backoff if backoff is not None else Backoff()
        self.transform = transform
        self.name = name or "/".join(
            p for p in (str(resource), self.namespace or ",".join(several), label_selector or "") if p
        )
        self.store = store if store is not None else Store()
        # several namespaces: an informer of each, into this one's store, telling its handlers
        self.parts = [
            Informer(
                client,
                resource,
                namespace=one,
                label_selector=label_selector,
                field_selector=field_selector,
                page_size=page_size,
                watch_timeout=watch_timeout,
                inactivity_timeout=inactivity_timeout,
                connect_timeout=connect_timeout,
                backoff=copy.copy(self.backoff),  # each its own failures
                transform=transform,
                metrics=metrics,
                store=self.store,
            )
            for one in several
        ]
        for part in self.parts:
            part.add_handler(self._notify)
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.last_activity = time.monotonic()
        self._handlers: list[Handler] = []
        metrics = metrics if metrics is not None else client.metrics
        self._m_events = {
            t: metrics.watch_events.labels(self.name, t) for t in ("ADDED", "MODIFIED", "DELETED")
        }
        self._m_bookmarks = metrics.watch_events.labels(self.name, "BOOKMARK")
        self._m_relists = metrics.watch_relists.labels(self.name)
        self._m_errors = metrics.watch_errors
        self._m_age = metrics.watch_last_event_age.labels(self.name)
        self._m_age.set_function(self.age)

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def age(self) -> float:
        """Seconds since the last list, event or bookmark (of its stalest namespace)."""
        if self.parts:
            return max(part.age() for part in self.parts)
        return time.monotonic() - self.last_activity

    async def run(self) -> NoReturn:
        if self.parts:
            await self._run_parts()
        while True:
            server_delay = 0.0  # what a 429/503 asked for in Retry-After
            try:
                if not self.resource_version:
                    await self.relist()
                if await self.watch():
                    # closed by the server after a healthy run: resume at once, and the failures
                    # before it are over (a server failing a share of requests must not push the
                    # next reconnect towards the 30 s maximum: the cache would lag that long)
                    self.backoff.reset()
                    continue
                reason = "closed"
            except WatchExpired:
                self._error("gone", "resourceVersion %s expired; relisting", self.resource_version)
                self.resource_version = ""
                continue  # relist at once: the server told us exactly what to do
            except WatchStalled:
                self._error("stalled", "no event for %.1fs; relisting", self.inactivity_timeout)
                self.resource_version = ""
                continue  # at once: the server is there, this stream was not
            except ApiError as exc:
                if exc.gone:
                    self._error("gone", "410 from the server; relisting")
                    self.resource_version = ""
                    continue
                reason = "http"
                server_delay = exc.retry_after or 0.0
                self._error(reason, "API error: %s", exc)
            except (aiohttp.ClientError, OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
                reason = "connection"
                self._error(reason, "connection failed: %r", exc)
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                reason = "decode"
                self._error(reason, "undecodable watch data: %r", exc)
            except Exception:
                # Anything unforeseen (a bug in a transform, ...): count it, never let the watcher die.
                reason = "unexpected"
                log.exception("watch %s: unexpected failure", self.name)
                self._m_errors.labels(self.name, reason).inc()
            delay = max(self.backoff.next_delay(), server_delay)
            log.debug("%s: %s; retrying in %.2fs", self.name, reason, delay)
            await asyncio.sleep(delay)

    async def _run_parts(self) -> NoReturn:
        async def synced() -> None:
            await asyncio.gather(*(part.synced.wait() for part in self.parts))
            self.synced.set()

        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(synced())
            for part in self.parts:
                tasks.create_task(part.run())
        raise AssertionError("an informer's watches never end")

    def _error(self, reason: str, message: str, *args: object) -> None:
        self._m_errors.labels(self.name, reason).inc()
        level = logging.INFO if reason in ("gone", "closed") else logging.WARNING
        log.log(level, "watch %s: " + message, self.name, *args)

    async def relist(self) -> None:
        """List every page, swap the store at once, and report what changed since the last view."""
        fresh: dict[ObjectKey, Object] = {}
        version = ""
        async for page in self.client.list_pages(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.page_size,
        ):
            for item in page.get("items") or ():
                obj = self.transform(item)
                fresh[object_key(obj)] = obj
            version = str((page.get("metadata") or {}).get("resourceVersion") or version)
        previous = self.store.swap(fresh, self.namespace)
        self.resource_version = version
        self.last_activity = time.monotonic()
        self._m_relists.inc()
        for key, obj in fresh.items():
            old = previous.pop(key, None)
            if old is None:
                self._notify("add", None, obj)
            elif resource_version(old) != resource_version(obj):
                self._notify("update", old, obj)
        for old in previous.values():  # gone while we were away
            self._notify("delete", old, None)
        self.synced.set()

    async def watch(self) -> bool:
        """Follow one watch stream until it ends; True when it ended cleanly after a healthy run."""
        timeout = int(random.uniform(self.watch_timeout, 2 * self.watch_timeout))
        query = {
            "watch": True,
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": True,
            "timeoutSeconds": max(1, timeout),
            "labelSelector": self.label_selector,
            "fieldSelector": self.field_selector,
        }
        path = self.resource.path(self.namespace)
        started, received = time.monotonic(), False
        loop = asyncio.get_running_loop()
        idle = asyncio.timeout_at(loop.time() + self.inactivity_timeout)
        try:
            async with idle, self.client.stream(self.resource, path, query, self.connect_timeout) as response:
                content, pending = response.content, b""
                while True:
                    idle.reschedule(loop.time() + self.inactivity_timeout)
                    chunk = await content.readany()
                    if not chunk:
                        break
                    pending = self.apply_chunk(pending + chunk)
                    received = received or self.last_activity >= started
        except TimeoutError as exc:
            if idle.expired():
                raise WatchStalled from exc
            raise  # a connect timeout: a connection failure, not a stall
        healthy = received or time.monotonic() - started >= 1.0
        if healthy:
            self.last_activity = time.monotonic()  # ended as the server said it would: alive
        return healthy

    def apply_chunk(self, data: bytes) -> bytes:
        """Apply every complete newline-delimited event in ``data``; return the incomplete rest."""
        lines = data.split(b"\n")
        for line in lines[:-1]:
            if line:
                self.apply_event(orjson.loads(line))
        return lines[-1]

    def apply_event(self, event: Object) -> None:
        """Fold one decoded watch event into the store and tell the handlers."""
        kind = event["type"]
        obj = event["object"]
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise WatchExpired(obj.get("message", ""))
            raise ApiError.from_status(int(obj.get("code") or 500), obj)
        self.last_activity = time.monotonic()
        version = resource_version(obj)
        if version:
            self.resource_version = version
        if kind == "BOOKMARK":
            self._m_bookmarks.inc()
            return
        obj = self.transform(obj)
        key = object_key(obj)
        self._m_events[kind].inc()
        if kind == "DELETED":
            self.store.delete(key)
            self._notify("delete", obj, None)  # the DELETED event carries the final state
        else:
            old = self.store.put(key, obj)
            self._notify("add" if old is None else "update", old, obj)

    def _notify(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        for handler in self._handlers:
            try:
                handler(kind, old, new)
            except Exception:
                log.exception("watch %s: event handler failed", self.name)
