"""A job's children deleted: after a failed submission (a clean slate for the next attempt).
Foreground propagation, so a child is gone only once what it owns is."""

from __future__ import annotations

from streams_k8s.controller.jobs.caches import JobCaches
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.objects import Object, meta

# How soon to look again while a clean slate is being deleted.
CLEANUP_POLL = 0.5


class Cleanup:
    """Deletes a Job's children (see the module docs)."""

    def __init__(self, client: KubeClient, caches: JobCaches) -> None:
        self.client, self.caches = client, caches

    def going(self, obj: Object, uid: str) -> bool:
        """Children of an earlier attempt are still going away."""
        return any(meta(child).get("deletionTimestamp") for child in self.caches.owned(obj, uid))

    async def clean(self, obj: Object, uid: str) -> Requeue | None:
        """Delete every child of this Job (Foreground); Requeue until none is left."""
        namespace = str(meta(obj).get("namespace"))
        remaining = 0
        for resource, informer in self.caches.children.items():
            for child in self.caches.labelled(informer, obj):
                cm = meta(child)
                if not any(ref.get("uid") == uid for ref in cm.get("ownerReferences") or ()):
                    continue
                remaining += 1
                if cm.get("deletionTimestamp"):
                    continue
                try:
                    await self.client.delete(
                        resource, str(cm["name"]), namespace, propagation="Foreground", uid=cm.get("uid")
                    )
                except ApiError as err:
                    if not (err.conflict or err.not_found):
                        raise
        return Requeue(CLEANUP_POLL) if remaining else None
