"""Numeric job ids: unique per namespace and never reused, across controller restarts and the loss
or rollback of the counter.

The next free id lives in the ConfigMap `streams-job-ids` of the namespace (key `next`), advanced
with an optimistic-concurrency replace, so two writers never hand out the same id. The id is
persisted there before any Job records it; an id allocated by a controller that died before
writing it into the Job's status is simply skipped.

The counter alone is not a floor: a ConfigMap deleted, or restored from an old backup, would hand
out ids again. So every allocation also raises a high-water mark kept in a second object of
another kind, the Lease `streams-job-ids` (annotation `streams.ibm.com/next-job-id`; a Lease
because the operator may already write Leases, and it is not restored with ConfigMaps), before
the id is returned. An allocation starts above the highest of: the counter, the high-water mark
and the ids held by Jobs. Losing or rolling back one of the two
records reuses nothing; losing both at once leaves the ids of the Jobs that exist as the floor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.k8s.leader import LEASES

COUNTER_NAME = "streams-job-ids"
COUNTER_KEY = "next"
HIGH_WATER_ANNOTATION = "streams.ibm.com/next-job-id"
_ATTEMPTS = 20
_MANAGED = {"app.kubernetes.io/managed-by": "streams-k8s"}


class JobIdError(RuntimeError):
    """The id counter cannot be advanced (contended or corrupt beyond repair)."""


def _decimal(raw: object) -> int:
    return int(str(raw)) if str(raw).isdecimal() else 0


def _counter_next(counter: dict[str, Any]) -> int:
    return _decimal((counter.get("data") or {}).get(COUNTER_KEY, "0"))


def _high_water(lease: dict[str, Any]) -> int:
    return _decimal((lease.get("metadata", {}).get("annotations") or {}).get(HIGH_WATER_ANNOTATION, "0"))


def _counter(namespace: str, next_id: int) -> dict[str, Any]:
    return {
        "metadata": {"name": COUNTER_NAME, "namespace": namespace, "labels": dict(_MANAGED)},
        "data": {COUNTER_KEY: str(next_id)},
    }


def _lease(namespace: str, next_id: int) -> dict[str, Any]:
    return {
        "apiVersion": LEASES.api_version,
        "kind": LEASES.kind,
        "metadata": {
            "name": COUNTER_NAME,
            "namespace": namespace,
            "labels": dict(_MANAGED),
            "annotations": {HIGH_WATER_ANNOTATION: str(next_id)},
        },
        "spec": {},
    }


async def _read(client: KubeClient, resource: Resource, namespace: str) -> dict[str, Any] | None:
    """Object `COUNTER_NAME` of ``resource``; None when there is none."""
    try:
        return await client.get(resource, COUNTER_NAME, namespace)
    except ApiError as err:
        if err.not_found:
            return None
        raise


async def _advance(
    client: KubeClient,
    resource: Resource,
    namespace: str,
    read: Callable[[dict[str, Any]], int],
    write: Callable[[dict[str, Any], int], None],
    fresh: Callable[[str, int], dict[str, Any]],
    floor: int,
    obj: dict[str, Any] | None,
) -> int:
    """Raise the number ``read`` from ``obj`` (object `COUNTER_NAME` of ``resource`` as last read,
    None: absent) to at least ``floor``, then one past it (compare-and-swap, read again after a
    conflict); the number before the step (the id handed out)."""
    for _ in range(_ATTEMPTS):
        try:
            if obj is None:
                await client.create(resource, fresh(namespace, floor + 1))
                return floor
            value = max(read(obj), floor)
            write(obj, value + 1)
            await client.replace(resource, obj)
            return value
        except ApiError as err:
            if not err.conflict:
                raise
        obj = await _read(client, resource, namespace)  # another writer was first: read theirs
    raise JobIdError(f"could not advance {namespace}/{COUNTER_NAME} after {_ATTEMPTS} conflicting attempts")


def _write_counter(counter: dict[str, Any], next_id: int) -> None:
    counter.setdefault("data", {})[COUNTER_KEY] = str(next_id)


def _write_high_water(lease: dict[str, Any], next_id: int) -> None:
    lease["metadata"].setdefault("annotations", {})[HIGH_WATER_ANNOTATION] = str(next_id)


async def allocate_job_id(client: KubeClient, namespace: str, taken: Iterable[int] = ()) -> int:
    """A fresh id for a Job of ``namespace``, above every id in ``taken`` and every id handed out."""
    # Both records read at once, each read once: a serial path of requests, each of which may be
    # told to come back a second later by a throttled API server.
    lease, counter = await asyncio.gather(
        _read(client, LEASES, namespace), _read(client, CONFIGMAPS, namespace)
    )
    floor = max(max(taken, default=-1) + 1, _high_water(lease) if lease is not None else 0)
    job_id = await _advance(
        client, CONFIGMAPS, namespace, _counter_next, _write_counter, _counter, floor, counter
    )
    # The high-water mark holds before anyone records the id (a mark above the counter is harmless).
    await _advance(client, LEASES, namespace, _high_water, _write_high_water, _lease, job_id, lease)
    return job_id
