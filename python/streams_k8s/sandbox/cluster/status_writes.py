"""How the simulated kubelet writes a pod's status: through the ``status`` subresource, the pod as
read with its new status (a PUT: an API server applies no patch to it, which cost the embedded
one a deep copy of each pod), conditional on the version read (its resourceVersion, with its uid);
on a conflict the pod is read again and the status made again from it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.objects import Object, ObjectKey
from streams_k8s.k8s.store import Store

WRITE_ATTEMPTS = 5


async def write_status(
    client: KubeClient,
    pods: Store,
    key: tuple[str, str],
    compute: Callable[[Object], dict[str, Any] | None],
    uid: str | None = None,
) -> Object | None:
    """Write ``compute(pod)`` as the status of the pod ``key`` (first as the cache has it); the pod
    as written, or None when it (of that ``uid``) is gone. ``compute`` None: nothing to write."""
    pod = pods.get(ObjectKey(*key))
    for attempt in range(WRITE_ATTEMPTS):
        if pod is None or (uid is not None and pod["metadata"]["uid"] != uid):
            return None
        status = compute(pod)
        if status is None:
            return pod
        try:
            written: Object = await client.replace(
                PODS, {**pod, "status": status}, key[0], subresource="status"
            )
            return written
        except ApiError as err:
            if err.not_found:
                return None
            if not err.conflict or attempt == WRITE_ATTEMPTS - 1:
                raise
        try:
            pod = await client.get(PODS, key[1], key[0])
        except ApiError as err:
            if err.not_found:
                return None
            raise
    return None
