"""Orphans adopted: children a Job left behind (`kubectl delete --cascade=orphan`) become the
children of the Job re-created under the same name.

An orphan is a cached object a Job would create, under the same name, that has no controlling
owner (the garbage collector removed the old Job's reference when it orphaned it). It is given
the new Job's owner reference, conditional on the version read (a conflict leaves it for the next
reconcile), so deleting the new Job removes it too, as controller-runtime's adoption does. An
object with another controlling owner is never taken.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from streams_k8s.controller.children.desired import Desired
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.objects import Object, meta


def orphaned(obj: Object) -> bool:
    return not meta(obj).get("deletionTimestamp") and not any(
        ref.get("controller") for ref in meta(obj).get("ownerReferences") or ()
    )


async def adopt_orphans(
    client: KubeClient, children: Iterable[Desired], caches: Mapping[Resource, Informer]
) -> int:
    """Give every orphan among ``children`` its owner reference; how many were adopted."""
    adopted = 0
    for child in children:
        cache = caches.get(child.resource)  # none for a kind read by name only (the transport Secret)
        current = cache.store.get(child.key) if cache is not None else None
        owners = meta(child.body).get("ownerReferences")
        if current is None or not owners or not orphaned(current):
            continue
        patch = {
            "metadata": {"resourceVersion": meta(current).get("resourceVersion"), "ownerReferences": owners}
        }
        try:
            await client.patch(child.resource, child.name, patch, child.key.namespace)
        except ApiError as err:
            if not (err.conflict or err.not_found):
                raise
            continue
        adopted += 1
    return adopted
