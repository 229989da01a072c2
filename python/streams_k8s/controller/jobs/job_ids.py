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


async def _advance(
    client: KubeClient,
    resource: Resource,
    namespace: str,
    read: Callable[[dict[str, Any]], int],
    write: Callable[[dict[str, Any], int], None],
    fresh: Callable[[str, int], dict[str, Any]],
    floor: int,
) -> int:
    """Raise the number ``read`` from object `COUNTER_NAME` of ``resource`` to at least ``floor``,
    then one past it (compare-and-swap); the number before the step (the id handed out)."""
    for _ in range(_ATTEMPTS):
        try:
            obj = await client.get(resource, COUNTER_NAME, namespace)
        except ApiError as err:
            if not err.not_found:
                raise
            try:
                await client.create(resource, fresh(namespace, floor + 1))
            except ApiError as create_err:
                if create_err.conflict:
                    continue  # another writer created it first: read theirs
                raise
            return floor
        value = max(read(obj), floor)
        write(obj, value + 1)
        try:
            await client.replace(resource, obj)
        except ApiError as err:
            if err.conflict:
                continue  # someone advanced it meanwhile: read again
            raise
        return value
    raise JobIdError(f"could not advance {namespace}/{COUNTER_NAME} after {_ATTEMPTS} conflicting attempts")


def _write_counter(counter: dict[str, Any], next_id: int) -> None:
    counter.setdefault("data", {})[COUNTER_KEY] = str(next_id)


def _write_high_water(lease: dict[str, Any], next_id: int) -> None:
    lease["metadata"].setdefault("annotations", {})[HIGH_WATER_ANNOTATION] = str(next_id)


async def allocate_job_id(client: KubeClient, namespace: str, taken: Iterable[int] = ()) -> int:
    """A fresh id for a Job of ``namespace``, above every id in ``taken`` and every id handed out."""
    floor = max(max(taken, default=-1) + 1, await _read_high_water(client, namespace))
    job_id = await _advance(client, CONFIGMAPS, namespace, _counter_next, _write_counter, _counter, floor)
    # The high-water mark holds before anyone records the id (a mark above the counter is harmless).
    await _advance(client, LEASES, namespace, _high_water, _write_high_water, _lease, job_id)
    return job_id


async def _read_high_water(client: KubeClient, namespace: str) -> int:
    try:
        return _high_water(await client.get(LEASES, COUNTER_NAME, namespace))
    except ApiError as err:
        if err.not_found:
            return 0
        raise
