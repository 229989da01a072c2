"""The controller loop: watch events become keys, workers reconcile keys from the queue.

Level-triggered: ``reconcile(key)`` sees only the key, reads the cache, converges, and returns
``Requeue(after)`` or ``None`` (done). An exception retries the key with per-key exponential
backoff under the global bucket; success forgets its failures. A 409 Conflict is no failure (the
cache was behind the server): the key runs again on the next event that maps to it, whatever the
predicates say (the cache has caught up), or after a short conflict backoff, whichever is first.
The queue guarantees one in-flight reconcile per key. A reconcile whose object is being deleted
under it stops at its next write (`stop_if_deleted` raises `Superseded`) and runs again at once,
to see the deletion.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from streams_k8s.k8s.backoff import RetryLimiter
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.metrics import RuntimeMetrics
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key
from streams_k8s.k8s.store import Store
from streams_k8s.k8s.workqueue import QueueShutDown, WorkQueue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Requeue:
    """Reconcile this key again after ``after`` seconds (periodic checks, waiting on others)."""

    after: float


class Superseded(Exception):
    """The object a reconcile works for is being deleted (or was replaced): stop writing for it."""


def stop_if_deleted(store: Store, key: ObjectKey, uid: str | None) -> None:
    """Raise `Superseded` unless ``store`` holds ``key`` as incarnation ``uid``, not being deleted.

    Called before each write of a long reconcile (a batch of children, a pod): a delete seen by the
    cache meanwhile stops the creation of children the garbage collector would only remove again."""
    current = store.get(key)
    if current is None or meta(current).get("uid") != uid or meta(current).get("deletionTimestamp"):
        raise Superseded(f"{key} is being deleted")


def stop_if_owner_deleted(owners: Store, child: Object) -> None:
    """`stop_if_deleted` for the controlling owner of ``child`` (about to be created), if any."""
    for ref in meta(child).get("ownerReferences") or ():
        if ref.get("controller"):
            key = ObjectKey(str(meta(child).get("namespace") or ""), str(ref.get("name")))
            stop_if_deleted(owners, key, ref.get("uid"))


Reconciler = Callable[[ObjectKey], Awaitable[Requeue | None]]
Mapper = Callable[[Object], Iterable[ObjectKey]]
# (old, new): old is None on add, new is None on delete. True lets the event through.
Predicate = Callable[[Object | None, Object | None], bool]


def own_key(obj: Object) -> Iterable[ObjectKey]:
    """The object itself (the ``For`` of controller-runtime)."""
    return (object_key(obj),)


def owner_mapper(kind: str, api_version: str | None = None) -> Mapper:
    """Map a child to its controlling owner of ``kind`` (same namespace, as GC requires)."""

    def mapper(obj: Object) -> Iterable[ObjectKey]:
        namespace = meta(obj).get("namespace") or ""
        return [
            ObjectKey(namespace, ref["name"])
            for ref in meta(obj).get("ownerReferences") or ()
            if ref.get("controller")
            and ref.get("kind") == kind
            and (api_version is None or ref.get("apiVersion") == api_version)
            and ref.get("name")
        ]

    return mapper


def generation_changed(old: Object | None, new: Object | None) -> bool:
    """Skip updates that left ``metadata.generation`` alone (status-only or metadata-only writes)."""
    if old is None or new is None:
        return True
    generation = meta(new).get("generation")
    if generation is None:  # a kind without generation (ConfigMap, ...): every change counts
        return True
    return bool(generation != meta(old).get("generation") or meta(new).get("deletionTimestamp"))


def labels_changed(old: Object | None, new: Object | None) -> bool:
    if old is None or new is None:
        return True
    return meta(old).get("labels") != meta(new).get("labels")


def any_of(*predicates: Predicate) -> Predicate:
    def predicate(old: Object | None, new: Object | None) -> bool:
        return any(p(old, new) for p in predicates)

    return predicate


class Controller:
    def __init__(
        self,
        name: str,
        reconcile: Reconciler,
        *,
        workers: int = 1,
        timeout: float | None = None,
        limiter: RetryLimiter[ObjectKey] | None = None,
        metrics: RuntimeMetrics | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self.name = name
        self.workers = workers
        # A hung reconcile would hold its key (and a worker) forever: cut it off and retry.
        self.timeout = timeout
        self._reconcile = reconcile
        self.metrics = metrics if metrics is not None else RuntimeMetrics()
        self.queue: WorkQueue[ObjectKey] = WorkQueue(name, limiter, self.metrics)
        self.informers: list[Informer] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._working = asyncio.Event()  # cleared while paused
        self._working.set()
        self._shut_down = False
        # Keys whose last reconcile met a 409: any event mapping to them means a fresher cache.
        self._stale: set[ObjectKey] = set()
        self._m_duration = self.metrics.reconcile_duration.labels(name)
        self._m_errors = self.metrics.reconcile_errors.labels(name)
        self._m_result = {
            r: self.metrics.reconcile_total.labels(name, r)
            for r in ("success", "requeue", "conflict", "error")
        }

    def watch(
        self, informer: Informer, mapper: Mapper = own_key, predicates: Sequence[Predicate] = ()
    ) -> Controller:
        """Enqueue ``mapper(obj)`` for every event of ``informer`` that passes all ``predicates``."""
        queue, stale = self.queue, self._stale

        def enqueue(old: Object | None, new: Object | None) -> None:
            obj = new if new is not None else old
            if obj is None:
                return
            if all(p(old, new) for p in predicates):
                for key in mapper(obj):
                    queue.add(key)
            elif stale:
                for key in mapper(obj):
                    if key in stale:
                        queue.add(key)

        informer.add_handler(lambda kind, old, new: enqueue(old, new))
        self.informers.append(informer)
        # Watching a cache that is already filled: what it holds was never announced to us.
        for obj in informer.store.select():
            enqueue(None, obj)
        return self

    def owns(
        self,
        informer: Informer,
        kind: str,
        api_version: str | None = None,
        predicates: Sequence[Predicate] = (),
    ) -> Controller:
        """Children: an event on a child reconciles its controlling owner."""
        return self.watch(informer, owner_mapper(kind, api_version), predicates)

    async def run(self) -> None:
        """Run the workers until ``shutdown``; returns when they have all stopped. While paused
        (`pause`) no worker runs; `resume` starts them again (``shutdown`` wakes a paused run to
        return)."""
        while True:
            await self._working.wait()
            if self._shut_down:
                return
            self._tasks = [
                asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}")
                for i in range(self.workers)
            ]
            try:
                done, _ = await asyncio.wait(self._tasks, return_when=asyncio.FIRST_EXCEPTION)
            finally:
                for task in self._tasks:
                    task.cancel()
            await asyncio.wait(self._tasks)
            for task in done:
                failure = None if task.cancelled() else task.exception()
                if failure is not None:
                    raise failure

    def pause(self) -> None:
        """Stop reconciling at once (the Lease is lost: another replica may lead soon). The
        reconciles under way are cancelled and their keys queued again; events keep queueing keys,
        so `resume` goes on from everything that changed meanwhile."""
        self._working.clear()
        for task in self._tasks:
            task.cancel()

    def resume(self) -> None:
        self._working.set()

    async def shutdown(self, grace: float = 30.0) -> None:
        """Stop taking keys; let in-flight reconciles finish for up to ``grace`` seconds."""
        self._shut_down = True
        self._working.set()  # a paused `run` returns
        self.queue.shut_down()
        pending = [t for t in self._tasks if not t.done()]
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=grace)
        for task in late:
            task.cancel()
        if late:
            log.warning("controller %s: %d reconciles cancelled after %.0fs", self.name, len(late), grace)
            await asyncio.wait(late)

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self.reconcile_once(key)
            except asyncio.CancelledError:
                if not self._working.is_set():
                    self.queue.add(key)  # paused under it: reconciled again once resumed
                raise
            finally:
                self.queue.done(key)

    async def reconcile_once(self, key: ObjectKey) -> None:
        started = time.monotonic()
        self._stale.discard(key)
        try:
            if self.timeout is None:
                result = await self._reconcile(key)
            else:
                async with asyncio.timeout(self.timeout):
                    result = await self._reconcile(key)
        except asyncio.CancelledError:
            raise
        except Superseded:
            result = Requeue(0.0)  # at once: the next reconcile sees the deletion
        except ApiError as exc:
            if exc.status == 429 and exc.retry_after is not None:
                # Throttled: the server said when to come back. The key waits that long, no failure,
                # and the worker goes on with other keys meanwhile.
                self._m_result["requeue"].inc()
                self.queue.add_after(key, exc.retry_after)
                return
            if not exc.conflict or exc.already_exists:
                self._failed(key, exc)
                return
            # A write from a stale cache: not a failure, and no reason to wait out a failure backoff.
            log.info(
                "controller %s: reconcile of %s: %s; again once the cache has caught up", self.name, key, exc
            )
            self._m_result["conflict"].inc()
            self._stale.add(key)
            self.queue.add_conflicted(key)
            return
        except Exception as exc:
            self._failed(key, exc)
            return
        finally:
            self._m_duration.observe(time.monotonic() - started)
        self.queue.forget(key)
        if result is None:
            self._m_result["success"].inc()
        else:
            self._m_result["requeue"].inc()
            self.queue.add_after(key, result.after)

    def _failed(self, key: ObjectKey, exc: Exception) -> None:
        """Log a failed reconcile and retry its key after its failure backoff."""
        self._m_errors.inc()
        self._m_result["error"].inc()
        retry = self.queue.retries(key) + 1
        extra = {"controller": self.name, "key": str(key), "retry": retry}
        if isinstance(exc, ApiError):  # expected now and then (AlreadyExists, throttling)
            log.warning("controller %s: reconcile of %s: %s", self.name, key, exc, extra=extra)
        elif isinstance(exc, TimeoutError) and self.timeout is not None:
            log.warning(
                "controller %s: reconcile of %s took over %.0fs", self.name, key, self.timeout, extra=extra
            )
        else:
            log.exception("controller %s: reconcile of %s failed", self.name, key, extra=extra)
        self.queue.add_rate_limited(key)
