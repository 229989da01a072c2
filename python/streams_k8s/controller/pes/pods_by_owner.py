"""PE pods indexed by their controlling owner (the PE incarnation), from the pod informer.

Shared by the PE controller (a PE's pods) and the REST API, which waits here for the cache to
show a pod running when that pod's own PE reports connectivity before the watch has caught up.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable

from streams_k8s.api.contract import SVC_LABEL, SVC_PE
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key


class PodsByOwner:
    def __init__(self, informer: Informer) -> None:
        self._by_owner: dict[str, dict[ObjectKey, Object]] = defaultdict(dict)
        self._waiters: dict[str, list[asyncio.Future[None]]] = defaultdict(list)
        informer.add_handler(self._on_event)
        for pod in informer.store.select():
            self._on_event("ADDED", None, pod)

    @staticmethod
    def _owner(pod: Object) -> str | None:
        return next(
            (r.get("uid") for r in meta(pod).get("ownerReferences") or () if r.get("controller")), None
        )

    def _on_event(self, kind: str, old: Object | None, new: Object | None) -> None:
        if old is not None and (owner := self._owner(old)) is not None:
            self._by_owner[owner].pop(object_key(old), None)
            if not self._by_owner[owner]:
                del self._by_owner[owner]
            self._wake(owner)
        if kind != "delete" and new is not None and (owner := self._owner(new)) is not None:
            self._by_owner[owner][object_key(new)] = new
            self._wake(owner)

    def _wake(self, owner: str) -> None:
        for waiter in self._waiters.pop(owner, ()):
            if not waiter.done():
                waiter.set_result(None)

    def retained(self) -> dict[str, int]:
        """Owners with pods, and owners waited on."""
        return {"pod-owners": len(self._by_owner), "pod-waits": len(self._waiters)}

    def live_pe_pods(self, owner_uid: str) -> list[Object]:
        """The PE pods (not zombies) of this owner that are not being deleted."""
        return [
            p
            for p in self._by_owner.get(owner_uid, {}).values()
            if meta(p).get("labels", {}).get(SVC_LABEL) == SVC_PE and not meta(p).get("deletionTimestamp")
        ]

    async def live_pe_pods_when(
        self, owner_uid: str, settled: Callable[[list[Object]], bool], within: float
    ) -> list[Object]:
        """``live_pe_pods`` as soon as ``settled`` holds for them, or as they are after ``within`` s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not settled(pods := self.live_pe_pods(owner_uid)) and (left := deadline - loop.time()) > 0:
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters[owner_uid].append(waiter)
            try:
                await asyncio.wait_for(waiter, left)
            except TimeoutError:
                waiters = self._waiters.get(owner_uid)
                if waiters is not None and waiter in waiters:
                    waiters.remove(waiter)
                    if not waiters:
                        del self._waiters[owner_uid]
        return pods
