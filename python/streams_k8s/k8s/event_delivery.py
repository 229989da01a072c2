"""Event writes delivered at least once: a write the API server did not take is kept and retried.

An Event's name is chosen before its first write and kept across retries, so a create whose
answer was lost (it committed, the reply did not arrive) meets 409 AlreadyExists on its retry:
success, not a second Event. A count update carries absolute values (`count`, `series.count`), so
repeating it is harmless; a newer update of the same Event replaces an older pending one (and
follows its create, when that is still pending).

Each write is one attempt inline (the client's own retries would hold the caller, a reconcile,
for a whole Retry-After). Writes failing for a reason that may pass (no answer, 429, 5xx) wait in
a bounded queue (``limit`` Events; past it the oldest is dropped and counted) and are retried from
a background task with jittered exponential backoff (``first_delay`` doubling to ``max_delay``),
never sooner than the last Retry-After asked. Other failures
(400, 403, 422: the same write would be refused again) are dropped, counted and logged. On
shutdown `close` gives the queue ``grace`` seconds to drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import OrderedDict
from dataclasses import dataclass

from prometheus_client import Counter

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.objects import Object

log = logging.getLogger(__name__)

CORE_EVENTS = Resource("", "v1", "events", "Event")
PENDING_LIMIT = 1024


@dataclass
class _Pending:
    namespace: str
    name: str
    body: Object | None = None  # a create not acknowledged yet
    patch: Object | None = None  # the latest count update not acknowledged yet


class EventDelivery:
    """At-least-once writes of core/v1 Events (see the module docs)."""

    def __init__(
        self,
        client: KubeClient,
        outcomes: Counter,
        *,
        limit: int = PENDING_LIMIT,
        first_delay: float = 0.5,
        max_delay: float = 30.0,
    ) -> None:
        self.client = client.with_retries(0)
        self.limit = limit
        self.first_delay, self.max_delay = first_delay, max_delay
        self._outcomes = outcomes
        self._pending: OrderedDict[tuple[str, str], _Pending] = OrderedDict()
        self._task: asyncio.Task[None] | None = None
        self._retry_after = 0.0  # what the server last asked for, before the next flush

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def create(self, body: Object) -> None:
        """Create the Event ``body`` (named), now or later. Raises `ApiError` only when refused."""
        m = body["metadata"]
        entry = _Pending(str(m["namespace"]), str(m["name"]), body=body)
        await self._send(entry)

    async def patch(self, namespace: str, name: str, patch: Object) -> bool:
        """Update a created Event's counts, now or later; False when the Event no longer exists."""
        queued = self._pending.get((namespace, name))
        if queued is not None:  # not acknowledged yet: the newest values follow its create
            queued.patch = patch
            return True
        return await self._send(_Pending(namespace, name, patch=patch))

    async def _send(self, entry: _Pending) -> bool:
        try:
            return await self._deliver(entry)
        except ApiError as err:
            if not err.retryable:
                raise
            self._queue(entry, err)
            return True

    async def _deliver(self, entry: _Pending) -> bool:
        """One attempt at what ``entry`` still owes; False if a count update found no Event."""
        if entry.body is not None:
            try:
                await self.client.create(CORE_EVENTS, entry.body)
            except ApiError as err:
                if not err.conflict:  # 409: an earlier attempt committed (its answer was lost)
                    raise
            entry.body = None
        if entry.patch is not None:
            try:
                await self.client.patch(CORE_EVENTS, entry.name, entry.patch, entry.namespace)
            except ApiError as err:
                if err.not_found:  # expired (Events live about an hour) or deleted
                    return False
                raise
            entry.patch = None
        return True

    def _queue(self, entry: _Pending, err: ApiError) -> None:
        self._pending[(entry.namespace, entry.name)] = entry
        self._retry_after = max(self._retry_after, err.retry_after or 0.0)
        self._outcomes.labels("queued").inc()
        while len(self._pending) > self.limit:
            (namespace, name), _ = self._pending.popitem(last=False)
            self._outcomes.labels("dropped").inc()
            log.warning("event %s/%s dropped: %d writes waiting already", namespace, name, self.limit)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._retry(), name="event delivery")
        log.debug("event %s/%s queued for retry after %s", entry.namespace, entry.name, err)

    async def _retry(self) -> None:
        delay = self.first_delay
        while self._pending:
            await asyncio.sleep(max(self._retry_after, delay * (0.5 + random.random() / 2)))
            self._retry_after = 0.0
            before = len(self._pending)
            empty = await self.flush_once()
            # Back off only while nothing goes through: a flush that delivered some starts over.
            delay = (
                self.first_delay if empty or len(self._pending) < before else min(delay * 2, self.max_delay)
            )

    async def flush_once(self) -> bool:
        """Try every pending write once, oldest first; True if the queue is empty after."""
        for key, entry in list(self._pending.items()):
            try:
                await self._deliver(entry)
            except ApiError as err:
                if err.retryable:  # the API server is still unwell: back off before the rest
                    self._retry_after = max(self._retry_after, err.retry_after or 0.0)
                    return False
                self._outcomes.labels("failed").inc()
                log.warning("event %s/%s refused: %s", entry.namespace, entry.name, err)
            self._pending.pop(key, None)
        return not self._pending

    async def close(self, grace: float) -> None:
        """Let pending writes drain for up to ``grace`` seconds, then stop retrying."""
        task = self._task
        if task is None:
            return
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), grace)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if self._pending:
            log.warning("%d events not delivered before shutdown", len(self._pending))
